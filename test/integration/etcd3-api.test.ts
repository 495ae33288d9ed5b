/**
 * svc-apiserver on etcd (--storage-backend=etcd3): one server serves the API with the watch
 * guarantees (ordered, unique, atomic, reliable), and two servers on one etcd (same --etcd-prefix,
 * one data directory for certificates) behave as one API: a write acknowledged by A is seen by a
 * consistent GET and LIST on B, a watch on B sees A's writes in order, and a continue token from A
 * pages on B (with a data directory each: etcd3-continue).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { writeSecretsEncryptionConfig } from '../helpers/encryption-config.js';
import { makeCA } from '../helpers/pki.js';
import { startEtcd } from '../helpers/etcd.js';
import { startServer, tempDir } from '../helpers/server.js';
import { decodeStoredProtobuf } from '../helpers/stored-values.js';
import { collectThrough, resolveDeletions, rvOf, validateAtomic, validateOrdered, validateReliable, validateUnique, WriteLog } from '../helpers/watch-guarantees.js';

const etcd = await startEtcd();
t.teardown(() => etcd.stop());
const etcdFlags = (prefix: string) => ['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, `--etcd-prefix=${prefix}`];
const CM = '/api/v1/namespaces/default/configmaps';

t.test('a server on etcd serves create, get, list, update, delete and watch with the watch guarantees', async (t) => {
  // no lease renewals (election, identity) between the writes, so that every revision is one of them (resolveDeletions)
  const s = await startServer([...etcdFlags('/smoke'), '--leader-elect=false', '--feature-gates=APIServerIdentity=false']);
  t.teardown(() => s.stop());
  const start = rvOf((await s.admin.get(CM)).json);
  const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);
  t.equal(w.status, 200);
  const log = new WriteLog(s.admin);
  const a = await log.create(CM, { metadata: { name: 'a' }, data: { v: '1' } });
  const b = await log.create(CM, { metadata: { name: 'b' }, data: { v: '1' } });
  const a2 = await log.update(`${CM}/a`, { ...a, data: { v: '2' } });
  t.equal((await s.admin.get(`${CM}/a`)).json.data.v, '2', 'get answers the update');
  const list = (await s.admin.get(CM)).json;
  t.same(list.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['a', 'b'], 'list answers both');
  t.ok(rvOf(list) >= rvOf(a2), 'the list is at least as new as the last write');
  await log.delete(`${CM}/b`, b);
  await log.create(CM, { metadata: { name: 'fence' } });
  t.same(resolveDeletions(log.writes), [], 'every revision is one of these writes');
  t.equal((await s.admin.get(`${CM}/b`)).status, 404, 'the deleted object is gone');
  const evs = await collectThrough(w, log.lastRv, 5000);
  w.close();
  t.same(evs.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED a', 'ADDED b', 'MODIFIED a', 'DELETED b', 'ADDED fence']);
  t.same(validateOrdered(evs), []);
  t.same(validateUnique(evs), []);
  t.same(validateAtomic(evs, log.writes), []);
  t.same(validateReliable(evs, log.writes, { from: start, to: log.lastRv }), []);
  const stored = await etcd.client.get('/smoke/configmaps/default/a').buffer();
  t.match(decodeStoredProtobuf(stored!).object, { kind: 'ConfigMap', data: { v: '2' } }, 'etcd holds the object at upstream’s key under --etcd-prefix, in protobuf by default');
});

t.test('two servers on one etcd behave as one API', async (t) => {
  const dir = tempDir();
  const a = await startServer(etcdFlags('/shared'), dir);
  const b = await startServer(etcdFlags('/shared'), dir);
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });

  await t.test('a write acknowledged by A is seen by a consistent GET and LIST on B', async (t) => {
    for (let i = 0; i < 20; i++) {
      const created = await a.admin.post(CM, { metadata: { name: `rw-${i}` }, data: { i: String(i) } });
      t.equal(created.status, 201);
      const got = await b.admin.get(`${CM}/rw-${i}`);
      t.equal(got.status, 200, `rw-${i} read on B right after A acknowledged it`);
      t.equal(got.json.metadata.resourceVersion, created.json.metadata.resourceVersion, 'same resourceVersion on both');
      const listed = await b.admin.get(`${CM}?labelSelector=`);
      t.ok(listed.json.items.some((o: { metadata: { name: string } }) => o.metadata.name === `rw-${i}`), 'listed on B');
      t.ok(rvOf(listed.json) >= rvOf(created.json), 'B’s list revision is not older than A’s write');
    }
  });

  await t.test('a watch on B sees the writes made on A, in order', async (t) => {
    const start = rvOf((await b.admin.get(CM)).json);
    const w = await b.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);
    const log = new WriteLog(a.admin);
    let last = await log.create(CM, { metadata: { name: 'seen' }, data: { n: '0' } });
    for (let n = 1; n <= 10; n++) last = await log.update(`${CM}/seen`, { ...last, data: { n: String(n) } });
    const evs = await collectThrough(w, log.lastRv, 5000);
    w.close();
    t.equal(evs.length, 11, 'every write, once');
    t.same(validateOrdered(evs), []);
    t.same(validateUnique(evs), []);
    t.same(validateAtomic(evs, log.writes), []);
    t.same(validateReliable(evs, log.writes, { from: start, to: log.lastRv }), []);
  });

  await t.test('NamespaceLifecycle on B finds a namespace A created a moment ago, and refuses content once A deleted it', async (t) => {
    for (let i = 0; i < 5; i++) {
      const ns = `fresh-${i}`;
      t.equal((await a.admin.post('/api/v1/namespaces', { metadata: { name: ns, finalizers: ['example.com/hold'] } })).status, 201);
      const made = await b.admin.post(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'inside' } });
      t.equal(made.status, 201, `content created on B right after A created ${ns}`);
      t.equal((await a.admin.delete(`/api/v1/namespaces/${ns}`)).status, 200);
      // this server's own namespace write is in its cache before its next admission
      const late = await a.admin.post(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'late' } });
      t.equal(late.status, 403, `A refuses content right after it deleted ${ns}`);
      t.equal(late.json.details?.causes?.[0]?.reason, 'NamespaceTerminating');
    }
  });

  await t.test('a continue token from A pages on B', async (t) => {
    const first = await a.admin.get(`${CM}?limit=5`);
    t.equal(first.json.items.length, 5);
    const token = first.json.metadata.continue;
    t.ok(token, 'A answers a continue token');
    const next = await b.admin.get(`${CM}?limit=5&continue=${encodeURIComponent(token)}`);
    t.equal(next.status, 200, 'B accepts it');
    t.equal(next.json.metadata.resourceVersion, first.json.metadata.resourceVersion, 'the next page is read at the first page’s revision');
    const names = [...first.json.items, ...next.json.items].map((o: { metadata: { name: string } }) => o.metadata.name);
    t.equal(new Set(names).size, 10, 'no item repeated across the pages');
    t.same(names, [...names].sort(), 'in key order across the two servers');
  });
});

t.test('a server reaches etcd over TLS with a client certificate (--etcd-cafile, --etcd-certfile, --etcd-keyfile)', async (t) => {
  const dir = tempDir('svc-etcd-tls-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ca = makeCA('etcd-ca');
  const serving = ca.issue({ cn: 'etcd', hosts: ['127.0.0.1', 'localhost'], server: true });
  const client = ca.issue({ cn: 'svc-apiserver', client: true });
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  const tls = {
    caFile: file('ca.crt', ca.cert),
    certFile: file('etcd.crt', serving.cert),
    keyFile: file('etcd.key', serving.key),
    clientCertFile: file('client.crt', client.cert),
    clientKeyFile: file('client.key', client.key),
  };
  const secure = await startEtcd(tls);
  t.teardown(() => secure.stop());
  t.match(secure.endpoint, /^https:/);
  const tlsFlags = ['--storage-backend=etcd3', `--etcd-servers=${secure.endpoint}`, `--etcd-cafile=${tls.caFile}`];
  const s = await startServer([...tlsFlags, `--etcd-certfile=${tls.clientCertFile}`, `--etcd-keyfile=${tls.clientKeyFile}`]);
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CM, { metadata: { name: 'over-tls' } })).status, 201, 'a write reaches etcd');
  t.equal((await s.admin.get(`${CM}/over-tls`)).status, 200, 'and reads back');
  t.match(await secure.client.get('/registry/configmaps/default/over-tls').string(), /over-tls/, 'etcd holds it');
  await t.rejects(startServer([...tlsFlags, '--storage-initialization-timeout=2s']), /storage did not become ready within 2s.*https:\/\/127\.0\.0\.1/, 'without a client certificate etcd refuses the server, which says so');
  await t.rejects(
    startServer(['--storage-backend=etcd3', `--etcd-servers=${secure.endpoint}`, '--storage-initialization-timeout=2s']),
    /storage did not become ready within 2s.*(certificate|verify)/i,
    'an https endpoint without --etcd-cafile is verified against the system roots, which do not know this CA',
  );
});

t.test('encryption at rest on etcd: the value in etcd carries the provider prefix and no plaintext; both servers read it', async (t) => {
  const dir = tempDir('svc-etcd-enc-');
  const config = join(dir, 'encryption.yaml');
  writeSecretsEncryptionConfig(config);
  const flags = [...etcdFlags('/enc'), `--encryption-provider-config=${config}`];
  const a = await startServer(flags, dir);
  const b = await startServer(flags, dir);
  t.teardown(async () => {
    await a.stop();
    await b.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const secret = { metadata: { name: 'db' }, stringData: { password: 'plaintext-hunter2' } };
  t.equal((await a.admin.post('/api/v1/namespaces/default/secrets', secret)).status, 201);
  const raw = (await etcd.client.get('/enc/secrets/default/db').buffer())!;
  t.ok(raw.subarray(0, 23).toString() === 'k8s:enc:aescbc:v1:key1:', 'stored with upstream’s aescbc prefix');
  t.notOk(raw.includes('plaintext-hunter2') || raw.includes(Buffer.from('plaintext-hunter2').toString('base64')), 'no plaintext in etcd');
  const got = await b.admin.get('/api/v1/namespaces/default/secrets/db');
  t.equal(Buffer.from(got.json.data.password, 'base64').toString(), 'plaintext-hunter2', 'the other server serves it decrypted');
});
