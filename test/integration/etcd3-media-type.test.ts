/**
 * --storage-media-type on real servers: on etcd, built-in objects are stored as upstream's protobuf
 * envelope by default and every kind answers through the API (create, GET, LIST, watch, a no-op PUT)
 * exactly what it stored; custom resources and their definitions stay JSON; encryption wraps the
 * protobuf value; changing the flag between restarts (etcd and the embedded store) keeps every object
 * readable; watch and list through the cache work on a second server; an undecodable protobuf value is
 * an unreadable object exactly like a bad JSON value; a bad flag value is a start error.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { writeSecretsEncryptionConfig } from '../helpers/encryption-config.js';
import { parse as parseYaml } from 'yaml';
import { parseEncryptionConfig } from '../../core/storage/encryption.js';
import { KeyLayout } from '../../core/storage/etcd3/keys.js';
import { LmdbStore } from '../../core/storage/lmdb/store.js';
import { createCrd, crd } from '../helpers/crd.js';
import { startEtcd } from '../helpers/etcd.js';
import { resourceFixtures, type Json } from '../helpers/kind-fixtures.js';
import { binPath, startServer, tempDir, type TestServer } from '../helpers/server.js';
import { decodeStoredProtobuf, PROTOBUF_PREFIX } from '../helpers/stored-values.js';

const etcd = await startEtcd();
t.teardown(() => etcd.stop());
const etcdFlags = (prefix: string, ...more: string[]) => ['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, `--etcd-prefix=${prefix}`, ...more];
const CM = '/api/v1/namespaces/default/configmaps';

/** The raw value etcd holds for a registry key under `prefix`. */
async function rawValue(prefix: string, registryKey: string): Promise<Buffer> {
  const v = await etcd.client.get(new KeyLayout(prefix).toEtcd(registryKey)).buffer();
  if (!v) throw new Error(`${registryKey} is not in etcd under ${prefix}`);
  return v;
}

const fixture = (kind: string): Json => structuredClone(resourceFixtures.find((f) => f.kind === kind)!.object);

/** Every stored built-in kind with a protobuf message: where it is created and a rich body (the codec fixtures' fields). */
function kindsToWrite(): { kind: string; apiVersion: string; path: string; registryKey: (name: string) => string; body: (name: string) => Json }[] {
  const richMeta = (name: string, namespace?: string): Json => {
    const m = fixture('ConfigMap').metadata as Json;
    return { name, ...(namespace ? { namespace } : {}), labels: { app: 'web', 'example.com/tier': 'front' }, annotations: m.annotations, finalizers: m.finalizers };
  };
  const body = (kind: string, namespaced: boolean) => (name: string) => {
    const o = fixture(kind);
    delete o.metadata;
    if (kind === 'ClusterRole') delete o.aggregationRule; // its controller would rewrite the rules meanwhile
    if (kind === 'ConfigMap') o.data = { a: 'b', 'uni.code': 'ünïcödé ✓', empty: '' }; // keys the API accepts
    if (kind === 'Secret') (o.data as Json)['tls.key'] = Buffer.from([0, 1, 2, 255]).toString('base64'); // its type requires one
    return { ...o, metadata: richMeta(name, namespaced ? 'default' : undefined) };
  };
  const rbac = 'rbac.authorization.svc.io';
  return [
    { kind: 'Namespace', apiVersion: 'v1', path: '/api/v1/namespaces', registryKey: (n) => `/registry/core/namespaces/${n}`, body: (n) => ({ ...body('Namespace', false)(n), status: {} }) },
    { kind: 'ConfigMap', apiVersion: 'v1', path: CM, registryKey: (n) => `/registry/core/configmaps/default/${n}`, body: body('ConfigMap', true) },
    { kind: 'Secret', apiVersion: 'v1', path: '/api/v1/namespaces/default/secrets', registryKey: (n) => `/registry/core/secrets/default/${n}`, body: body('Secret', true) },
    { kind: 'ServiceAccount', apiVersion: 'v1', path: '/api/v1/namespaces/default/serviceaccounts', registryKey: (n) => `/registry/core/serviceaccounts/default/${n}`, body: body('ServiceAccount', true) },
    { kind: 'Event', apiVersion: 'v1', path: '/api/v1/namespaces/default/events', registryKey: (n) => `/registry/core/events/default/${n}`, body: (n) => ({ ...body('Event', true)(n), involvedObject: { kind: 'ConfigMap', name: 'cm', namespace: 'default' }, reportingInstance: 'node-1' }) },
    { kind: 'CSIDriver', apiVersion: 'storage.svc.io/v1', path: '/apis/storage.svc.io/v1/csidrivers', registryKey: (n) => `/registry/storage.svc.io/csidrivers/${n}`, body: body('CSIDriver', false) },
    { kind: 'Lease', apiVersion: 'coordination.svc.io/v1', path: '/apis/coordination.svc.io/v1/namespaces/default/leases', registryKey: (n) => `/registry/coordination.svc.io/leases/default/${n}`, body: body('Lease', true) },
    { kind: 'Role', apiVersion: `${rbac}/v1`, path: `/apis/${rbac}/v1/namespaces/default/roles`, registryKey: (n) => `/registry/${rbac}/roles/default/${n}`, body: body('Role', true) },
    { kind: 'ClusterRole', apiVersion: `${rbac}/v1`, path: `/apis/${rbac}/v1/clusterroles`, registryKey: (n) => `/registry/${rbac}/clusterroles/${n}`, body: body('ClusterRole', false) },
    { kind: 'RoleBinding', apiVersion: `${rbac}/v1`, path: `/apis/${rbac}/v1/namespaces/default/rolebindings`, registryKey: (n) => `/registry/${rbac}/rolebindings/default/${n}`, body: body('RoleBinding', true) },
    { kind: 'ClusterRoleBinding', apiVersion: `${rbac}/v1`, path: `/apis/${rbac}/v1/clusterrolebindings`, registryKey: (n) => `/registry/${rbac}/clusterrolebindings/${n}`, body: body('ClusterRoleBinding', false) },
  ];
}

function withoutResourceVersion(o: Json): Json {
  const { resourceVersion: _rv, ...metadata } = o.metadata as Json;
  return { ...o, metadata };
}

t.test('on etcd every built-in kind is stored as upstream’s protobuf envelope and answered exactly as it was stored', async (t) => {
  const s = await startServer(etcdFlags('/pb', '--workers=1'));
  t.teardown(() => s.stop());
  for (const k of kindsToWrite()) {
    const name = k.kind === 'CSIDriver' ? 'pb.example.com' : `pb-${k.kind.toLowerCase()}`;
    const watch = await s.admin.stream(`${k.path}?watch=1&resourceVersion=${(await s.admin.get(k.path)).json.metadata.resourceVersion}&fieldSelector=metadata.name%3D${name}`);
    const created = await s.admin.post(k.path, k.body(name));
    t.equal(created.status, 201, `${k.kind}: created ${created.status === 201 ? '' : created.text}`);
    const raw = await rawValue('/pb', k.registryKey(name));
    t.ok(raw.subarray(0, 4).equals(PROTOBUF_PREFIX), `${k.kind}: etcd holds k8s\\0 + runtime.Unknown`);
    const envelope = decodeStoredProtobuf(raw);
    t.same([envelope.apiVersion, envelope.kind], [k.apiVersion, k.kind], `${k.kind}: the envelope names ${k.apiVersion} ${k.kind}`);
    t.strictSame(envelope.object, withoutResourceVersion(created.json), `${k.kind}: the stored message is the created object, without resourceVersion`);

    const got = await s.admin.get(`${k.path}/${name}`);
    t.strictSame(got.json, created.json, `${k.kind}: GET answers what the create answered`);
    const listed = (await s.admin.get(`${k.path}?fieldSelector=metadata.name%3D${name}`)).json.items;
    t.strictSame(listed, [{ ...created.json, kind: undefined, apiVersion: undefined }].map((o) => JSON.parse(JSON.stringify(o))), `${k.kind}: LIST holds it as created`);
    const ev = await watch.next(5000);
    watch.close();
    t.strictSame(ev, { type: 'ADDED', object: created.json }, `${k.kind}: the watch event carries it as created`);
    const put = await s.admin.put(`${k.path}/${name}`, got.json);
    t.equal(put.status, 200, `${k.kind}: PUT of the object as read`);
    t.equal(put.json.metadata.resourceVersion, created.json.metadata.resourceVersion, `${k.kind}: is a no-op (no new revision)`);
  }
});

t.test('custom resources and their definitions are stored as JSON under protobuf', async (t) => {
  const s = await startServer(etcdFlags('/crs'));
  t.teardown(() => s.stop());
  await createCrd(s.admin, crd());
  const cr = await s.admin.post('/apis/example.com/v1/namespaces/default/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 3 } });
  t.equal(cr.status, 201);
  const rawCr = await rawValue('/crs', '/registry/example.com/widgets/default/w');
  t.equal(rawCr[0], '{'.charCodeAt(0), 'the custom resource is JSON in etcd');
  t.match(JSON.parse(rawCr.toString()), { apiVersion: 'example.com/v1', spec: { size: 3 } });
  const rawCrd = await rawValue('/crs', '/registry/apiextensions.svc.io/customresourcedefinitions/widgets.example.com');
  t.equal(rawCrd[0], '{'.charCodeAt(0), 'the definition (a kind without a protobuf message here) is JSON');
  t.strictSame((await s.admin.get('/apis/example.com/v1/namespaces/default/widgets/w')).json, cr.json, 'and reads back as created');
});

t.test('with --encryption-provider-config the decrypted value is the protobuf envelope', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = writeSecretsEncryptionConfig(join(dir, 'enc.yaml'), { identityFallback: false });
  const s = await startServer(etcdFlags('/enc', `--encryption-provider-config=${file}`));
  t.teardown(() => s.stop());
  const created = await s.admin.post('/api/v1/namespaces/default/secrets', { metadata: { name: 'db' }, stringData: { password: 'hunter2' } });
  t.equal(created.status, 201);
  const key = '/registry/core/secrets/default/db';
  const raw = await rawValue('/enc', key);
  t.ok(raw.toString('latin1').startsWith('k8s:enc:aescbc:v1:key1:'), 'etcd holds the encrypted value');
  t.notOk(raw.includes('hunter2'), 'no plaintext');
  const plain = Buffer.from(parseEncryptionConfig(readFileSync(file, 'utf8')).decrypt(key, raw));
  t.ok(plain.subarray(0, 4).equals(PROTOBUF_PREFIX), 'decrypted, it starts with k8s\\0: encoded first, then encrypted');
  t.strictSame(decodeStoredProtobuf(plain).object, withoutResourceVersion(created.json), 'and decodes to the Secret');
  t.strictSame((await s.admin.get('/api/v1/namespaces/default/secrets/db')).json, created.json, 'GET reads it back');
});

/** GETs of the named ConfigMaps. */
async function getAll(s: TestServer, names: string[]): Promise<Json[]> {
  return Promise.all(names.map(async (n) => (await s.admin.get(`${CM}/${n}`)).json as Json));
}

t.test('changing --storage-media-type between restarts on etcd keeps every object readable', async (t) => {
  const prefix = '/switch';
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const steps: { flag: string; name: string; check: (raw: Buffer) => boolean; form: string }[] = [
    { flag: '', name: 'by-default', check: (raw) => raw.subarray(0, 4).equals(PROTOBUF_PREFIX), form: 'protobuf (the default)' },
    { flag: 'application/json', name: 'by-json', check: (raw) => raw[0] === 0x7b, form: 'JSON' },
    { flag: 'application/yaml', name: 'by-yaml', check: (raw) => (parseYaml(raw.toString()) as Json).kind === 'ConfigMap' && raw[0] !== 0x7b, form: 'YAML' },
    { flag: 'application/vnd.kubernetes.protobuf', name: 'by-protobuf', check: (raw) => raw.subarray(0, 4).equals(PROTOBUF_PREFIX), form: 'protobuf' },
  ];
  const seen: string[] = [];
  let answers: Json[] = [];
  for (const step of steps) {
    const s = await startServer(etcdFlags(prefix, ...(step.flag ? [`--storage-media-type=${step.flag}`] : [])), dir);
    t.teardown(() => s.server.stop());
    const again = await getAll(s, seen);
    t.strictSame(again, answers, `under ${step.form}: every object written before reads as it did`);
    const created = await s.admin.post(CM, { metadata: { name: step.name, labels: { step: step.name } }, data: { written: step.form, 'uni.code': 'ünïcödé ✓' }, binaryData: { b: 'AP8=' } });
    t.equal(created.status, 201);
    t.ok(step.check(await rawValue(prefix, `/registry/core/configmaps/default/${step.name}`)), `under ${step.form}: a new object is stored as ${step.form}`);
    seen.push(step.name);
    answers = await getAll(s, seen);
    t.strictSame(answers.at(-1), created.json, 'and reads back as created');
    const list = (await s.admin.get(`${CM}?labelSelector=step`)).json;
    t.same(list.items.map((i: Json) => (i.metadata as Json).name).sort(), [...seen].sort(), 'a list holds them all');
    await s.server.stop();
  }
});

t.test('changing --storage-media-type on the embedded store keeps objects readable and writes the new form', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const first = await startServer([], dir);
  t.teardown(() => first.server.stop());
  const asJson = await first.admin.post(CM, { metadata: { name: 'as-json' }, data: { k: 'v' } });
  await first.server.stop();
  const second = await startServer(['--storage-media-type=application/vnd.kubernetes.protobuf'], dir);
  t.teardown(() => second.server.stop());
  t.strictSame((await second.admin.get(`${CM}/as-json`)).json, asJson.json, 'a JSON-stored object reads under protobuf');
  const asProtobuf = await second.admin.post(CM, { metadata: { name: 'as-protobuf' }, data: { k: 'v' } });
  await second.server.stop();
  const store = new LmdbStore({ path: join(dir, 'store') });
  const rawJson = (await store.get('/registry/core/configmaps/default/as-json'))!.value;
  const rawProtobuf = Buffer.from((await store.get('/registry/core/configmaps/default/as-protobuf'))!.value);
  await store.close();
  t.equal(rawJson[0], 0x7b, 'the embedded store holds JSON by default');
  t.ok(rawProtobuf.subarray(0, 4).equals(PROTOBUF_PREFIX), 'and protobuf once the flag asks for it');
  const third = await startServer([], dir);
  t.teardown(() => third.stop());
  t.strictSame(await getAll(third, ['as-json', 'as-protobuf']), [asJson.json, asProtobuf.json], 'back on JSON, both read as created');
});

t.test('watch and list through the cache on protobuf storage, on the writing server and on a second one', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = await startServer(etcdFlags('/cache'), dir);
  t.teardown(() => a.stop());
  const b = await startServer(etcdFlags('/cache'), dir);
  t.teardown(() => b.stop());
  const from = (await a.admin.get(CM)).json.metadata.resourceVersion;
  const watchA = await a.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
  const watchB = await b.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
  const made: Json[] = [];
  for (const n of ['w1', 'w2', 'w3']) made.push((await a.admin.post(CM, { metadata: { name: n }, data: { n } })).json);
  const updated = (await a.admin.put(`${CM}/w2`, { ...made[1], data: { n: 'two' } })).json;
  const deleted = await a.admin.delete(`${CM}/w3`);
  t.equal(deleted.status, 200);
  for (const [server, w] of [['A', watchA], ['B', watchB]] as const) {
    const evs = [];
    for (let i = 0; i < 5; i++) evs.push(await w.next(5000));
    w.close();
    t.strictSame(
      evs.map((e) => [e?.type, e?.object]),
      [['ADDED', made[0]], ['ADDED', made[1]], ['ADDED', made[2]], ['MODIFIED', updated], ['DELETED', evs[4]?.object]],
      `server ${server}: the watch carries the objects as written`,
    );
    t.equal((evs[4]?.object?.metadata as Json | undefined)?.name, 'w3');
  }
  const page1 = (await b.admin.get(`${CM}?limit=1`)).json;
  const page2 = (await b.admin.get(`${CM}?limit=5&continue=${page1.metadata.continue}`)).json;
  t.strictSame(
    [...page1.items, ...page2.items].map((o: Json) => JSON.stringify(o)),
    [made[0], updated].map((o) => JSON.stringify({ ...o, kind: undefined, apiVersion: undefined })),
    'a paged list on the other server holds them as written',
  );
  const exact = (await b.admin.get(`${CM}?resourceVersion=${(made[2]!.metadata as Json).resourceVersion}&resourceVersionMatch=Exact`)).json;
  t.same(exact.items.map((o: Json) => (o.metadata as Json).name), ['w1', 'w2', 'w3'], 'a list at an older revision (from etcd) decodes too');
});

t.test('an undecodable protobuf value is an unreadable object exactly like a bad JSON value', async (t) => {
  const s = await startServer(etcdFlags('/broken', '--feature-gates=AllowUnsafeMalformedObjectDeletion=true'));
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CM, { metadata: { name: 'good' } })).status, 201);
  t.equal((await s.admin.post('/api/v1/namespaces/default/secrets', { metadata: { name: 's' } })).status, 201);
  const secretValue = await rawValue('/broken', '/registry/core/secrets/default/s');
  const bad: [string, Buffer][] = [
    ['bad JSON', Buffer.from('{"metadata":')],
    ['bad protobuf', Buffer.concat([PROTOBUF_PREFIX, Buffer.from([0x0a, 0xff, 0xff, 0x01])])],
    ['a protobuf Secret under a ConfigMap key', secretValue],
  ];
  for (const [what, value] of bad) {
    const name = `broken-${bad.findIndex((b) => b[0] === what)}`;
    const key = `/registry/core/configmaps/default/${name}`;
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${(await s.admin.get(CM)).json.metadata.resourceVersion}`);
    await etcd.client.put(new KeyLayout('/broken').toEtcd(key)).value(value);
    const ev = await w.next(5000);
    w.close();
    t.equal(ev?.type, 'ERROR', `${what}: a watch that would see it ends with an ERROR event`);
    t.match((ev?.object as Json | undefined)?.message, key, `${what}: naming it`);
    const get = await s.admin.get(`${CM}/${name}`);
    t.equal(get.status, 500, `${what}: GET is 500`);
    t.match(get.json.message, `StorageError: corrupt object, Code: 7, Key: ${key}`, `${what}: upstream’s corrupt object error naming the key`);
    const list = await s.admin.get(CM);
    t.equal(list.status, 500, `${what}: a list that includes it fails naming it`);
    t.match(list.json.message, key);
    t.equal((await s.admin.get(`${CM}/good`)).status, 200, `${what}: other objects are served`);
    t.equal((await s.admin.delete(`${CM}/${name}`)).status, 500, `${what}: a normal delete fails on it`);
    const unsafe = await s.admin.delete(`${CM}/${name}?ignoreStoreReadErrorWithClusterBreakingPotential=true`);
    t.equal(unsafe.status, 200, `${what}: the unsafe delete removes it`);
    t.equal((await s.admin.get(CM)).status, 200, `${what}: and the collection lists again`);
  }
});

t.test('a bad --storage-media-type is a start error naming the flag and the supported types', async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const proc = spawn(process.execPath, [binPath, `--data-dir=${dir}`, '--secure-port=0', '--storage-media-type=text/plain'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((r) => proc.on('exit', r));
  t.not(code, 0, 'the server does not start');
  t.match(out, '--storage-media-type "text/plain" invalid, allowed values: application/json, application/vnd.kubernetes.protobuf, application/vnd.svc.protobuf, application/yaml');
});
