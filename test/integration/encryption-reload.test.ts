/**
 * --encryption-provider-config-automatic-reload: a rotated configuration (a new first key, the old key
 * still listed) takes effect in every thread without a restart; a broken one is refused, counted, and
 * the last good configuration stays.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { startServer, tempDir } from '../helpers/server.js';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { LmdbStore } from '../../core/storage/lmdb/store.js';

const oldKey = randomBytes(32).toString('base64');
const newKey = randomBytes(32).toString('base64');
const config = (providers: string) => `apiVersion: apiserver.config.svc.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
${providers}`;
const aescbc = `      - aescbc:\n          keys:\n            - {name: old, secret: "${oldKey}"}\n`;
const secretbox = `      - secretbox:\n          keys:\n            - {name: new, secret: "${newKey}"}\n`;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('a rotated encryption config is picked up by every thread; a broken one keeps the last good', async (t) => {
  const dir = tempDir('svc-enc-reload-');
  const file = join(dir, 'encryption.yaml');
  writeFileSync(file, config(aescbc));
  const s = await startServer([`--encryption-provider-config=${file}`, '--encryption-provider-config-automatic-reload', '--workers=1'], tempDir());
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await s.stop();
  });
  const secret = (name: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { password: `plaintext-${name}` } });
  const reloads = async (status: string): Promise<number> => {
    const fams = parsePrometheusText((await s.admin.get('/metrics')).text);
    return fams.get('apiserver_encryption_config_controller_automatic_reloads')?.samples.find((m) => m.labels.status === status)?.value ?? 0;
  };
  t.equal((await s.admin.post('/api/v1/namespaces/default/secrets', secret('before'))).status, 201);

  writeFileSync(file, config(secretbox + aescbc));
  for (let i = 0; i < 100 && (await reloads('success')) < 1; i++) await sleep(50);
  t.equal(await reloads('success'), 1, 'the reload is counted');
  await sleep(300); // the worker follows the same file
  t.equal((await s.admin.post('/api/v1/namespaces/default/secrets', secret('after'))).status, 201);

  writeFileSync(file, config('      - secretbox:\n          keys:\n            - {name: short, secret: "c2hvcnQ="}\n'));
  for (let i = 0; i < 100 && (await reloads('failure')) < 1; i++) await sleep(50);
  t.equal(await reloads('failure'), 1, 'the broken file is counted as a failed reload');
  await sleep(300);
  t.equal((await s.admin.post('/api/v1/namespaces/default/secrets', secret('broken'))).status, 201, 'the last good configuration still writes');
  for (const name of ['before', 'after', 'broken']) {
    const got = await s.admin.get(`/api/v1/namespaces/default/secrets/${name}`);
    t.equal(Buffer.from(got.json.data.password, 'base64').toString(), `plaintext-${name}`, `${name} reads back`);
  }

  await s.stop();
  stopped = true;
  const raw = new LmdbStore({ path: join(s.dataDir, 'store') });
  t.teardown(() => raw.close());
  const prefixOf = async (name: string) => Buffer.from((await raw.get(`/registry/core/secrets/default/${name}`))!.value).toString('latin1').split(':').slice(0, 5).join(':');
  t.equal(await prefixOf('before'), 'k8s:enc:aescbc:v1:old');
  t.equal(await prefixOf('after'), 'k8s:enc:secretbox:v1:new', 'written by the worker with the new first key');
  t.equal(await prefixOf('broken'), 'k8s:enc:secretbox:v1:new');
});
