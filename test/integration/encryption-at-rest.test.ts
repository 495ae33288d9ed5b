/**
 * Encryption at rest end to end: a server started with --encryption-provider-config stores Secrets
 * encrypted (the raw store holds upstream's k8s:enc:aescbc:v1:<key>: prefix and no plaintext), serves
 * them decrypted, and leaves resources outside the config as they were.
 */
import t from 'tap';
import { writeSecretsEncryptionConfig } from '../helpers/encryption-config.js';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { startServer, tempDir } from '../helpers/server.js';
import { LmdbStore } from '../../core/storage/lmdb/store.js';

const configDir = tempDir('svc-enc-');
const configFile = join(configDir, 'encryption.yaml');
writeSecretsEncryptionConfig(configFile);

t.test('Secrets are encrypted in the store and served in plaintext; ConfigMaps are not encrypted', async (t) => {
  const s = await startServer([`--encryption-provider-config=${configFile}`], tempDir());
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await s.stop();
  });
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, stringData: { password: 'plaintext-hunter2' } };
  t.equal((await s.admin.post('/api/v1/namespaces/default/secrets', secret)).status, 201);
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { note: 'visible-config' } };
  t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps', cm)).status, 201);
  const got = await s.admin.get('/api/v1/namespaces/default/secrets/db');
  t.equal(Buffer.from(got.json.data.password, 'base64').toString(), 'plaintext-hunter2');

  await s.stop();
  stopped = true;
  const raw = new LmdbStore({ path: join(s.dataDir, 'store') });
  t.teardown(() => raw.close());
  const stored = await raw.get('/registry/core/secrets/default/db');
  const text = Buffer.from(stored!.value).toString('latin1');
  t.ok(text.startsWith('k8s:enc:aescbc:v1:key1:'), 'stored with the aescbc prefix');
  t.notOk(text.includes('plaintext-hunter2'), 'no plaintext value');
  t.notOk(text.includes('cGxhaW50ZXh0LWh1bnRlcjI'), 'no base64 of the value');
  const storedCm = await raw.get('/registry/core/configmaps/default/cfg');
  t.ok(Buffer.from(storedCm!.value).toString().includes('visible-config'), 'resources outside the config are stored as they are');
});

t.test('a malformed encryption config is a start error naming the field', async (t) => {
  const bad = join(configDir, 'bad.yaml');
  writeFileSync(bad, 'apiVersion: apiserver.config.svc.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aesgcm: {keys: [{name: k, secret: c2hvcnQ=}]}\n');
  await t.rejects(startServer([`--encryption-provider-config=${bad}`]), { message: /resources\[0\]\.providers\[0\]\.aesgcm\.keys\[0\]\.secret/ });
});
