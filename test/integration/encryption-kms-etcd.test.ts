/**
 * KMS v2 with two servers on one etcd: each server has its own seed, so what one writes the other can
 * read only after one plugin Decrypt of that seed. A watch on B that meets A's values (its live feed
 * waits for the Decrypt) delivers every event in order, once, decrypted; reads of further values under
 * the same seed make no more calls.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEtcd } from '../helpers/etcd.js';
import { KmsPlugin, kmsProviderEntry, secretsEncryptionConfig } from '../helpers/kms-plugin.js';
import { startServer, tempDir } from '../helpers/server.js';
import { collectThrough, rvOf, validateAtomic, validateOrdered, validateReliable, validateUnique, WriteLog } from '../helpers/watch-guarantees.js';

const SECRETS = '/api/v1/namespaces/default/secrets';

t.test('a watch on server B delivers the Secrets server A wrote through kms v2 in order, after one Decrypt of A’s seed', async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  const plugin = await new KmsPlugin().start();
  t.teardown(() => plugin.stop());
  // a slow Decrypt: A's writes keep coming while B's feed waits for the first one
  plugin.delayMs.Decrypt = 300;
  const dir = tempDir();
  const config = join(dir, 'encryption.yaml');
  writeFileSync(config, secretsEncryptionConfig([kmsProviderEntry('vault', plugin.endpoint)]));
  const flags = ['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, '--etcd-prefix=/kms', `--encryption-provider-config=${config}`];
  const a = await startServer(flags, dir);
  const b = await startServer(flags, dir);
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });
  t.equal(plugin.calls.Encrypt, 2, 'each server had one seed of its own encrypted');

  const start = rvOf((await b.admin.get(SECRETS)).json);
  const w = await b.admin.stream(`${SECRETS}?watch=1&resourceVersion=${start}`);
  const log = new WriteLog(a.admin);
  for (let i = 0; i < 8; i++) await log.create(SECRETS, { metadata: { name: `s${i}` }, stringData: { n: `secret-${i}` } });
  const evs = await collectThrough(w, log.lastRv, 10_000);
  w.close();
  t.same(
    evs.map((e) => `${e.type} ${e.object.metadata.name}`),
    [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `ADDED s${i}`),
    'every write once, in order',
  );
  t.same(validateOrdered(evs), []);
  t.same(validateUnique(evs), []);
  t.same(validateAtomic(evs, log.writes), []);
  t.same(validateReliable(evs, log.writes, { from: start, to: log.lastRv }), []);
  t.same(
    evs.map((e) => Buffer.from(e.object.data.n, 'base64').toString()),
    [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `secret-${i}`),
    'decrypted',
  );
  t.equal(plugin.calls.Decrypt, 1, "B asked the plugin once, for A's seed");

  const got = await b.admin.get(`${SECRETS}/s3`);
  t.equal(Buffer.from(got.json.data.n, 'base64').toString(), 'secret-3', 'B reads A’s Secret');
  t.equal((await b.admin.post(SECRETS, { metadata: { name: 'from-b' }, stringData: { n: 'b' } })).status, 201);
  const fromB = await a.admin.get(`${SECRETS}/from-b`);
  t.equal(Buffer.from(fromB.json.data.n, 'base64').toString(), 'b', 'and A reads B’s');
  t.equal(plugin.calls.Decrypt, 2, "after one Decrypt of B's seed");
  const stored = await etcd.client.get('/kms/secrets/default/s0').buffer();
  t.ok(stored!.toString('latin1').startsWith('k8s:enc:kms:v2:vault:'), 'etcd holds the kms v2 envelope');
  t.notOk(stored!.toString('latin1').includes('secret-0'), 'and no plaintext');
});
