/**
 * Dry run (resource-api.md "Dry run", query parameter dryRun): on create, update, every patch type
 * (apply included), delete and deletecollection, `dryRun=All` and a bare `?dryRun` run every stage and
 * answer with what would be stored and the normal status code, but persist nothing: the object is
 * unchanged (or absent), the collection's resourceVersion does not move, the next real write gets the
 * next revision (none consumed), and a watch open meanwhile receives nothing. Errors a real request
 * would meet (validation, conflicts, missing objects) are still reported. Any other value is 400.
 */
import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import type { Response, WatchReader } from '../helpers/client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const JSONPATCH = 'application/json-patch+json';
const MERGE = 'application/merge-patch+json';
const SMP = 'application/strategic-merge-patch+json';
const APPLY = 'application/apply-patch+yaml';
const NS = 'dry';
const CM = `/api/v1/namespaces/${NS}/configmaps`;

function expectCode(tt: Test, r: Response, code: number, label: string): void {
  tt.equal(r.status, code, r.status === code ? label : `${label} (got ${r.status}: ${r.text.slice(0, 400)})`);
}

let s: TestServer;
let live: Obj;
t.before(async () => {
  s = await startServer();
  const ns = await s.admin.post('/api/v1/namespaces', { metadata: { name: NS } });
  if (ns.status !== 201) throw new Error(ns.text);
  // the serviceaccount controller writes the namespace's default account: let it land before revisions are compared
  await waitFor(async () => (await s.admin.get(`/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200);
  const c = await s.admin.post(`${CM}?fieldManager=creator`, { metadata: { name: 'x', labels: { l: '1' } }, data: { a: '1' } });
  if (c.status !== 201) throw new Error(c.text);
  live = c.json;
});
t.teardown(async () => {
  await s?.stop();
});

interface DryRow {
  name: string;
  send(dry: string): Promise<Response>;
  code: number;
  /** Checks the response body (what would have been stored). */
  check(tt: Test, r: Response): void;
}

const applyBody = (name: string, data: Obj): string => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });

const rows: DryRow[] = [
  {
    name: 'create (POST)',
    send: (dry) => s.admin.post(`${CM}?${dry}&fieldManager=maker`, { metadata: { name: 'new-one' }, data: { n: '1' } }),
    code: 201,
    check(tt, r) {
      tt.equal(r.json?.kind, 'ConfigMap');
      tt.equal(r.json?.metadata?.name, 'new-one');
      tt.equal(r.json?.metadata?.namespace, NS);
      tt.same(r.json?.data, { n: '1' });
      tt.same(r.json?.metadata?.managedFields?.map((e: Obj) => [e.manager, e.operation]), [['maker', 'Update']], 'ownership as a real create would record it');
    },
  },
  {
    name: 'create with generateName',
    send: (dry) => s.admin.post(`${CM}?${dry}`, { metadata: { generateName: 'gen-' }, data: { n: '1' } }),
    code: 201,
    check(tt, r) {
      tt.match(r.json?.metadata?.name, /^gen-[a-z0-9]{5}$/, 'a generated name');
    },
  },
  {
    name: 'update (PUT)',
    send: (dry) => s.admin.put(`${CM}/x?${dry}`, { ...live, data: { a: '2' } }),
    code: 200,
    check(tt, r) {
      tt.same(r.json?.data, { a: '2' });
    },
  },
  {
    name: 'merge patch',
    send: (dry) => s.admin.patch(`${CM}/x?${dry}`, { data: { b: '2' } }, MERGE),
    code: 200,
    check(tt, r) {
      tt.same(r.json?.data, { a: '1', b: '2' });
    },
  },
  {
    name: 'JSON patch',
    send: (dry) => s.admin.patch(`${CM}/x?${dry}`, [{ op: 'remove', path: '/metadata/labels/l' }], JSONPATCH),
    code: 200,
    check(tt, r) {
      tt.equal(r.json?.metadata?.labels, undefined, 'label removed in the answer');
    },
  },
  {
    name: 'strategic merge patch',
    send: (dry) => s.admin.patch(`${CM}/x?${dry}`, { metadata: { finalizers: ['example.com/f'] } }, SMP),
    code: 200,
    check(tt, r) {
      tt.same(r.json?.metadata?.finalizers, ['example.com/f']);
    },
  },
  {
    name: 'apply to an existing object',
    send: (dry) => s.admin.patch(`${CM}/x?${dry}&fieldManager=applier`, applyBody('x', { c: '3' }), APPLY),
    code: 200,
    check(tt, r) {
      tt.same(r.json?.data, { a: '1', c: '3' });
      tt.ok(r.json?.metadata?.managedFields?.some((e: Obj) => e.manager === 'applier' && e.operation === 'Apply'), 'the applier\'s entry in the answer');
    },
  },
  {
    name: 'apply creating an object',
    send: (dry) => s.admin.patch(`${CM}/by-apply?${dry}&fieldManager=applier`, applyBody('by-apply', { c: '3' }), APPLY),
    code: 201,
    check(tt, r) {
      tt.equal(r.json?.metadata?.name, 'by-apply');
      tt.same(r.json?.data, { c: '3' });
    },
  },
  {
    name: 'delete',
    send: (dry) => s.admin.delete(`${CM}/x?${dry}`),
    code: 200,
    check(tt, r) {
      tt.equal(r.json?.status, 'Success');
      tt.equal(r.json?.details?.name, 'x');
      tt.equal(r.json?.details?.uid, live.metadata.uid);
    },
  },
  {
    name: 'delete with the dry run in DeleteOptions (body)',
    send: () => s.admin.request('DELETE', `${CM}/x`, { body: { kind: 'DeleteOptions', apiVersion: 'v1', dryRun: ['All'] } }),
    code: 200,
    check(tt, r) {
      tt.equal(r.json?.status, 'Success');
    },
  },
  {
    name: 'deletecollection',
    send: (dry) => s.admin.delete(`${CM}?${dry}`),
    code: 200,
    check(tt, r) {
      tt.notOk(r.json?.kind === 'Status' && r.json?.status === 'Failure', 'not a failure');
    },
  },
  {
    name: 'delete of a namespace (two-phase: it would become Terminating)',
    send: (dry) => s.admin.delete(`/api/v1/namespaces/${NS}?${dry}`),
    code: 200,
    check(tt, r) {
      tt.equal(r.json?.kind, 'Namespace', 'the namespace as it would be stored');
      tt.equal(r.json?.status?.phase, 'Terminating');
      tt.ok(r.json?.metadata?.deletionTimestamp, 'deletionTimestamp in the answer');
    },
  },
];

async function snapshot(): Promise<{ listRV: string; x: Obj; ns: Obj; names: string[] }> {
  const list = await s.admin.get(CM);
  const x = await s.admin.get(`${CM}/x`);
  const ns = await s.admin.get(`/api/v1/namespaces/${NS}`);
  return { listRV: list.json.metadata.resourceVersion, x: x.json, ns: ns.json, names: list.json.items.map((i: Obj) => i.metadata.name) };
}

t.test('dryRun=All and a bare ?dryRun: the normal answer, nothing persisted, no revision consumed, no watch event', async (tt) => {
  const before = await snapshot();
  const watches: WatchReader[] = [
    await s.admin.stream(`${CM}?watch=1&resourceVersion=${before.listRV}`),
    await s.admin.stream(`/api/v1/namespaces?watch=1&resourceVersion=${before.listRV}`),
  ];
  for (const w of watches) tt.equal(w.status, 200, 'watch open');
  for (const dry of ['dryRun=All', 'dryRun']) {
    for (const row of rows) {
      await tt.test(`${row.name} with ?${dry}`, async (t2) => {
        const r = await row.send(dry);
        expectCode(t2, r, row.code, `HTTP ${row.code}, as the real request`);
        if (r.status === row.code) row.check(t2, r);
        const after = await snapshot();
        t2.equal(after.listRV, before.listRV, 'collection resourceVersion unchanged');
        t2.same(after.names, before.names, 'the same objects exist');
        t2.same(after.x, before.x, 'the existing object is unchanged');
        t2.same(after.ns, before.ns, 'the namespace is unchanged');
      });
    }
  }
  for (const w of watches) tt.equal(await w.next(300), undefined, 'no watch event for dry-run requests');
  const real = await s.admin.patch(`${CM}/x`, { data: { real: 'yes' } }, MERGE);
  expectCode(tt, real, 200, 'a real write');
  tt.equal(real.json?.metadata?.resourceVersion, String(Number(before.listRV) + 1), 'the next real write gets the next revision: dry runs consumed none');
  const ev = await watches[0]!.next(3000);
  tt.equal(ev?.type, 'MODIFIED', 'the real write is the first event');
  tt.equal(ev?.object?.metadata?.resourceVersion, real.json?.metadata?.resourceVersion);
  for (const w of watches) w.close();
  live = real.json;
});

t.test('any other dryRun value is 400 on every verb, and nothing happens', async (tt) => {
  const before = await snapshot();
  const values = ['false', 'None', 'all', 'true', 'All,All'];
  for (const v of values) {
    const q = `dryRun=${encodeURIComponent(v)}`;
    const reqs: [string, () => Promise<Response>][] = [
      ['create', () => s.admin.post(`${CM}?${q}`, { metadata: { name: 'bad-dry' } })],
      ['update', () => s.admin.put(`${CM}/x?${q}`, { ...live, data: { a: 'put' } })],
      ['merge patch', () => s.admin.patch(`${CM}/x?${q}`, { data: { a: 'm' } }, MERGE)],
      ['apply', () => s.admin.patch(`${CM}/x?${q}&fieldManager=m`, applyBody('x', { a: 'ap' }), APPLY)],
      ['delete', () => s.admin.delete(`${CM}/x?${q}`)],
      ['deletecollection', () => s.admin.delete(`${CM}?${q}`)],
    ];
    for (const [verb, send] of reqs) {
      const r = await send();
      expectCode(tt, r, 400, `${verb} with dryRun=${v}: 400`);
      tt.equal(r.json?.reason, 'BadRequest', `${verb} with dryRun=${v}: BadRequest`);
      tt.match(r.json?.message, /dryRun: Unsupported value/, `${verb} with dryRun=${v}: names the option`);
    }
  }
  const after = await snapshot();
  tt.equal(after.listRV, before.listRV, 'nothing written');
  tt.same(after.x, before.x, 'object unchanged');
});

t.test('a dry run reports the errors the real request would meet', async (tt) => {
  const before = await snapshot();
  const cases: { name: string; send: () => Promise<Response>; code: number; reason: string }[] = [
    { name: 'create of an invalid object', send: () => s.admin.post(`${CM}?dryRun=All`, { metadata: { name: 'Not_Valid' } }), code: 422, reason: 'Invalid' },
    { name: 'create of a name that exists', send: () => s.admin.post(`${CM}?dryRun=All`, { metadata: { name: 'x' }, data: { a: 'dup' } }), code: 409, reason: 'AlreadyExists' },
    { name: 'update with a stale resourceVersion', send: () => s.admin.put(`${CM}/x?dryRun=All`, { ...live, metadata: { ...live.metadata, resourceVersion: '1' }, data: { a: 'stale' } }), code: 409, reason: 'Conflict' },
    { name: 'patch of a missing object', send: () => s.admin.patch(`${CM}/missing?dryRun=All`, { data: { a: '1' } }, MERGE), code: 404, reason: 'NotFound' },
    { name: 'patch producing a wrong type', send: () => s.admin.patch(`${CM}/x?dryRun=All`, { data: { a: 1 } }, MERGE), code: 422, reason: 'Invalid' },
    { name: 'delete of a missing object', send: () => s.admin.delete(`${CM}/missing?dryRun=All`), code: 404, reason: 'NotFound' },
    {
      name: 'apply conflicting with another manager',
      send: () => s.admin.patch(`${CM}/x?dryRun=All&fieldManager=intruder`, applyBody('x', { a: 'mine' }), APPLY),
      code: 409,
      reason: 'Conflict',
    },
    {
      name: 'strict field validation',
      send: () => s.admin.post(`${CM}?dryRun=All&fieldValidation=Strict`, { metadata: { name: 'strict' }, data: {}, spec: {} }),
      code: 400,
      reason: 'BadRequest',
    },
  ];
  for (const c of cases) {
    const r = await c.send();
    expectCode(tt, r, c.code, `${c.name}: ${c.code}`);
    tt.equal(r.json?.reason, c.reason, `${c.name}: ${c.reason}`);
  }
  const after = await snapshot();
  tt.equal(after.listRV, before.listRV, 'nothing written');
  tt.same(after.names, before.names, 'no object created');
});

t.test('a dry-run create answers like the real one (defaults, generated fields) on a cluster-scoped kind', async (tt) => {
  const body = { metadata: { name: 'dry.example.com' }, spec: { attachRequired: false } };
  const dry = await s.admin.post('/apis/storage.svc.io/v1/csidrivers?dryRun=All', body);
  expectCode(tt, dry, 201, 'dry run: 201');
  tt.equal((await s.admin.get('/apis/storage.svc.io/v1/csidrivers/dry.example.com')).status, 404, 'not stored');
  const real = await s.admin.post('/apis/storage.svc.io/v1/csidrivers', body);
  expectCode(tt, real, 201, 'real: 201');
  tt.same(dry.json?.spec, real.json?.spec, 'same defaulted spec');
  tt.equal(dry.json?.metadata?.generation, real.json?.metadata?.generation, 'same generation');
  tt.ok(dry.json?.metadata?.uid, 'a uid in the dry-run answer');
  tt.ok(dry.json?.metadata?.creationTimestamp, 'a creationTimestamp in the dry-run answer');
});
