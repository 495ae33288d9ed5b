/**
 * Worker pool: --workers=0 (inline) and --workers=2 must behave identically. A representative script of
 * writes, reads and failures runs against both; the normalized transcripts (status, body without
 * server-generated values, warnings) must be equal, and the expected codes must hold. Concurrent
 * conflicting writes must be serialized the same way (one winner) in both modes.
 */
import t from 'tap';
import { type TestServer } from '../helpers/server.js';
import type { Response } from '../helpers/client.js';
import { startSeeded } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const CM = '/api/v1/namespaces/default/configmaps';
const CSI = '/apis/storage.svc.io/v1/csidrivers';

interface Entry {
  step: string;
  status: number;
  body: unknown;
  warning?: string;
}

/** Replaces values the server generates (uid, timestamps, resourceVersions, generated names). */
function normalize(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalize);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (['uid', 'creationTimestamp', 'deletionTimestamp', 'resourceVersion', 'time'].includes(k) && typeof x === 'string') out[k] = `<${k}>`;
      else out[k] = normalize(x);
    }
    return out;
  }
  if (typeof v === 'string') {
    return v
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uid>')
      .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b/g, '<time>')
      .replace(/(in record|in the precondition|ResourceVersion in record) \(\d+\)/g, '$1 (<rv>)')
      .replace(/^gen-[a-z0-9]{5}$/, 'gen-<random>')
      .replace(/resourceVersion: "\d+"/g, 'resourceVersion: "<rv>"');
  }
  return v;
}

async function script(s: TestServer): Promise<Entry[]> {
  const log: Entry[] = [];
  const rec = (step: string, r: Response): Response => {
    const e: Entry = { step, status: r.status, body: normalize(r.json ?? r.text) };
    if (r.headers.warning) e.warning = String(r.headers.warning);
    log.push(e);
    return r;
  };
  const a = s.admin;
  const c = rec('create', await a.post(CM, { metadata: { name: 'w1', labels: { app: 'x' } }, data: { k: 'v' } }));
  rec('get', await a.get(`${CM}/w1`));
  rec('list by label', await a.get(`${CM}?labelSelector=app%3Dx`));
  rec('list by field', await a.get(`${CM}?fieldSelector=metadata.name%3Dw1`));
  const u = rec('update', await a.put(`${CM}/w1`, { ...c.json, data: { k: 'v2' } }));
  rec('stale update', await a.put(`${CM}/w1`, { ...c.json, data: { k: 'v3' } }));
  rec('duplicate create', await a.post(CM, { metadata: { name: 'w1' } }));
  rec('invalid name', await a.post(CM, { metadata: { name: 'Bad_Name' } }));
  rec('strict unknown field', await a.post(`${CM}?fieldValidation=Strict`, '{"metadata":{"name":"w2"},"foo":1,"data":{"a":"1","a":"2"}}'));
  rec('warn unknown field', await a.post(CM, '{"metadata":{"name":"w3"},"foo":1}'));
  rec('malformed json', await a.post(CM, '{"metadata":{"name":'));
  rec('wrong type', await a.post(CM, { metadata: { name: 'w4' }, data: { a: 1 } }));
  rec('wrong kind', await a.post(CM, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'w5' } }));
  rec('name mismatch', await a.put(`${CM}/w1`, { ...u.json, metadata: { ...u.json.metadata, name: 'other' } }));
  rec('yaml create', await a.post(CM, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w6\ndata:\n  y: "1"\n', { contentType: 'application/yaml' }));
  rec('yaml get', await a.get(`${CM}/w6`, { accept: 'application/yaml' }));
  rec('generateName', await a.post(CM, { metadata: { generateName: 'gen-' } }));
  rec('dry-run create', await a.post(`${CM}?dryRun=All`, { metadata: { name: 'w7' } }));
  rec('dry-run result absent', await a.get(`${CM}/w7`));
  const d = rec('csidriver create', await a.post(CSI, { metadata: { name: 'w.csi' }, spec: {} }));
  rec('csidriver immutable', await a.put(`${CSI}/w.csi`, { ...d.json, spec: { ...d.json.spec, attachRequired: false } }));
  rec('csidriver mutable', await a.put(`${CSI}/w.csi`, { ...d.json, spec: { ...d.json.spec, podInfoOnMount: true } }));
  rec('csidriver bad tokens', await a.post(CSI, { metadata: { name: 'w2.csi' }, spec: { tokenRequests: [{ audience: '' }, { audience: '' }] } }));
  rec('lease put-create', await a.put('/apis/coordination.svc.io/v1/namespaces/default/leases/w-lease', { metadata: { name: 'w-lease' }, spec: { holderIdentity: 'me' } }));
  rec('configmap put-missing', await a.put(`${CM}/w-missing`, { metadata: { name: 'w-missing' } }));
  const f = rec('finalizer create', await a.post(CM, { metadata: { name: 'w-fin', finalizers: ['example.com/f'] } }));
  rec('finalizer delete', await a.delete(`${CM}/w-fin`));
  rec('finalizer still there', await a.get(`${CM}/w-fin`));
  const cur = (await a.get(`${CM}/w-fin`)).json;
  rec('finalizer removed', await a.put(`${CM}/w-fin`, { ...cur, metadata: { ...cur.metadata, finalizers: [] } }));
  rec('finalizer gone', await a.get(`${CM}/w-fin`));
  rec('precondition mismatch', await a.request('DELETE', `${CM}/w1`, { body: { preconditions: { uid: f.json.metadata.uid } } }));
  rec('namespace create', await a.post('/api/v1/namespaces', { metadata: { name: 'w-ns' } }));
  rec('create in missing namespace', await a.post('/api/v1/namespaces/w-none/configmaps', { metadata: { name: 'x' } }));
  rec('protected namespace delete', await a.delete('/api/v1/namespaces/default'));
  rec('deletecollection', await a.delete(`${CM}?labelSelector=app%3Dx`));
  rec('deleted by collection', await a.get(`${CM}/w1`));
  rec('oversized body', await a.post(CM, { metadata: { name: 'w-big' }, data: { a: 'x'.repeat(3 * 1024 * 1024) } }));
  rec('not found path', await a.get('/apis/nope.svc.io/v1/things'));
  rec('method not allowed', await a.post(`${CM}/w3`, { metadata: { name: 'w3' } }));
  rec('not acceptable', await a.get(`${CM}/w3`, { accept: 'text/html' }));
  rec('unsupported media type', await a.post(CM, 'x', { contentType: 'text/plain' }));
  rec('delete', await a.delete(`${CM}/w3`));
  rec('final list', await a.get(CM));
  return log;
}

const expectedCodes: Record<string, number> = {
  create: 201,
  get: 200,
  'list by label': 200,
  'list by field': 200,
  update: 200,
  'stale update': 409,
  'duplicate create': 409,
  'invalid name': 422,
  'strict unknown field': 400,
  'warn unknown field': 201,
  'malformed json': 400,
  'wrong type': 422,
  'wrong kind': 400,
  'name mismatch': 400,
  'yaml create': 201,
  'yaml get': 200,
  generateName: 201,
  'dry-run create': 201,
  'dry-run result absent': 404,
  'csidriver create': 201,
  'csidriver immutable': 422,
  'csidriver mutable': 200,
  'csidriver bad tokens': 422,
  'lease put-create': 201,
  'configmap put-missing': 404,
  'finalizer create': 201,
  'finalizer delete': 200,
  'finalizer still there': 200,
  'finalizer removed': 200,
  'finalizer gone': 404,
  'precondition mismatch': 409,
  'namespace create': 201,
  'create in missing namespace': 404,
  'protected namespace delete': 403,
  deletecollection: 200,
  'deleted by collection': 404,
  'oversized body': 413,
  'not found path': 404,
  'method not allowed': 405,
  'not acceptable': 406,
  'unsupported media type': 415,
  delete: 200,
  'final list': 200,
};

const transcripts = new Map<number, Entry[]>();

for (const workers of [0, 2]) {
  t.test(`--workers=${workers}`, async (t) => {
    const s = await startSeeded([`--workers=${workers}`]);
    t.teardown(() => s.stop());
    t.equal(s.server.opts.workers, workers, 'flag applied');
    const log = await script(s);
    transcripts.set(workers, log);
    for (const e of log) t.equal(e.status, expectedCodes[e.step], `${e.step}: ${expectedCodes[e.step]} (${JSON.stringify(e.body).slice(0, 200)})`);
    const warn = log.find((e) => e.step === 'warn unknown field');
    t.equal(warn?.warning, '299 - "unknown field \\"foo\\""', 'warning header');

    t.test('concurrent updates with the same resourceVersion: exactly one wins', async (t) => {
      const c = await s.admin.post(CM, { metadata: { name: 'race' }, data: { n: '0' } });
      const rs = await Promise.all(Array.from({ length: 16 }, (_, i) => s.admin.put(`${CM}/race`, { ...c.json, data: { n: String(i + 1) } })));
      const codes = rs.map((r) => r.status).sort();
      t.equal(codes.filter((x) => x === 200).length, 1, 'one 200');
      t.equal(codes.filter((x) => x === 409).length, 15, 'the rest 409 Conflict');
      const winner = rs.find((r) => r.status === 200)!;
      const g = await s.admin.get(`${CM}/race`);
      t.equal(g.json.data.n, winner.json.data.n, 'the stored value is the winner');
    });

    t.test('concurrent creates of one name: exactly one wins', async (t) => {
      const rs = await Promise.all(Array.from({ length: 16 }, (_, i) => s.admin.post(CM, { metadata: { name: 'race-create' }, data: { i: String(i) } })));
      t.equal(rs.filter((r) => r.status === 201).length, 1, 'one 201');
      t.equal(rs.filter((r) => r.status === 409 && r.json?.reason === 'AlreadyExists').length, 15, 'the rest AlreadyExists');
    });

    t.test('concurrent creates of different names all land with distinct resourceVersions', async (t) => {
      const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => s.admin.post(CM, { metadata: { name: `bulk-${i}` } })));
      t.same(
        rs.map((r) => r.status),
        Array(50).fill(201),
      );
      t.equal(new Set(rs.map((r) => r.json.metadata.resourceVersion)).size, 50);
      const l = await s.admin.get(`${CM}?limit=500`);
      t.equal(l.json.items.filter((i: Obj) => i.metadata.name.startsWith('bulk-')).length, 50);
    });
  });
}

t.test('--workers=0 and --workers=2 give identical transcripts', async (t) => {
  const a = transcripts.get(0);
  const b = transcripts.get(2);
  t.ok(a && b, 'both ran');
  if (!a || !b) return;
  t.equal(a.length, b.length, 'same number of steps');
  for (let i = 0; i < a.length; i++) t.same(b[i], a[i], `step ${a[i]!.step}`);
});
