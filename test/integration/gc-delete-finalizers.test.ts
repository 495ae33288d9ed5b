/**
 * The delete side of garbage collection, with the collector off so nothing acts on the result: which
 * GC finalizers (orphan, foregroundDeletion) a delete request leaves on the object, as upstream's
 * deletionFinalizersForGarbageCollection decides from propagationPolicy, the legacy orphanDependents,
 * the finalizers already present and the kind's default policy (core/v1 Events: Unsupported); the
 * answer code (202 only for orphanDependents=false on an object that stays); namespaces take them from
 * the request that starts their deletion only.
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const HOLD = 'example.com/hold';
const CM = '/api/v1/namespaces/default/configmaps';

let s: TestServer;
t.before(async () => {
  s = await startServer(['--controllers=*,-garbage-collector-controller']);
});
t.teardown(() => s?.stop());

interface Row {
  rule: string;
  before: string[];
  query?: string;
  body?: Obj;
  after: string[];
  code?: number;
}

const rows: Row[] = [
  { rule: 'no policy, no GC finalizer: none added (default DeleteDependents)', before: [HOLD], after: [HOLD] },
  { rule: 'Orphan adds orphan', before: [HOLD], query: 'propagationPolicy=Orphan', after: [HOLD, 'orphan'] },
  { rule: 'Foreground adds foregroundDeletion', before: [HOLD], body: { propagationPolicy: 'Foreground' }, after: [HOLD, 'foregroundDeletion'] },
  { rule: 'Background adds none', before: [HOLD], query: 'propagationPolicy=Background', after: [HOLD] },
  { rule: 'orphanDependents=true adds orphan', before: [HOLD], body: { orphanDependents: true }, after: [HOLD, 'orphan'] },
  { rule: 'orphanDependents=false adds none and answers 202 while the object stays', before: [HOLD], body: { orphanDependents: false }, after: [HOLD], code: 202 },
  { rule: 'no policy keeps an existing orphan finalizer', before: [HOLD, 'orphan'], after: [HOLD, 'orphan'] },
  { rule: 'no policy keeps an existing foregroundDeletion finalizer, in place', before: ['foregroundDeletion', HOLD], after: ['foregroundDeletion', HOLD] },
  { rule: 'Foreground replaces orphan (others first, GC finalizer last)', before: ['orphan', HOLD], query: 'propagationPolicy=Foreground', after: [HOLD, 'foregroundDeletion'] },
  { rule: 'Orphan replaces foregroundDeletion', before: [HOLD, 'foregroundDeletion'], query: 'propagationPolicy=Orphan', after: [HOLD, 'orphan'] },
  { rule: 'Background removes a GC finalizer', before: [HOLD, 'foregroundDeletion'], query: 'propagationPolicy=Background', after: [HOLD] },
  { rule: 'orphanDependents=false removes orphan', before: ['orphan', HOLD], body: { orphanDependents: false }, after: [HOLD], code: 202 },
  { rule: 'the same set asked again keeps the order', before: ['orphan', HOLD], query: 'propagationPolicy=Orphan', after: ['orphan', HOLD] },
];

t.test('finalizers after a delete request (ConfigMap, default policy DeleteDependents)', async (t) => {
  let i = 0;
  for (const row of rows) {
    t.test(row.rule, async (t) => {
      const name = `row-${++i}`;
      const c = await s.admin.post(CM, { metadata: { name, finalizers: row.before } });
      t.equal(c.status, 201, c.text);
      const path = `${CM}/${name}${row.query ? `?${row.query}` : ''}`;
      const r = await s.admin.request('DELETE', path, row.body ? { body: row.body } : {});
      t.equal(r.status, row.code ?? 200, r.text);
      t.same(r.json.metadata?.finalizers, row.after, 'in the answer');
      t.same((await s.admin.get(`${CM}/${name}`)).json.metadata.finalizers, row.after, 'stored');
    });
  }
});

t.test('core/v1 Events (upstream: Unsupported): propagation is ignored, GC finalizers dropped', async (t) => {
  const ev = '/api/v1/namespaces/default/events';
  const body = { metadata: { name: 'ev-fin', finalizers: [HOLD, 'orphan'] }, involvedObject: { kind: 'ConfigMap', name: 'x', namespace: 'default' }, reason: 'R' };
  t.equal((await s.admin.post(ev, body)).status, 201);
  const r = await s.admin.delete(`${ev}/ev-fin?propagationPolicy=Foreground`);
  t.equal(r.status, 200, r.text);
  t.same(r.json.metadata.finalizers, [HOLD], 'no foregroundDeletion added, orphan dropped');
});

t.test('namespaces take GC finalizers from the delete that starts their deletion only', async (t) => {
  const ns = '/api/v1/namespaces/gc-fin';
  const c = await s.admin.post('/api/v1/namespaces', { metadata: { name: 'gc-fin' }, spec: { finalizers: [HOLD] } });
  t.equal(c.status, 201, c.text);
  const first = await s.admin.delete(`${ns}?propagationPolicy=Orphan`);
  t.equal(first.status, 200, first.text);
  t.same(first.json.metadata.finalizers, ['orphan'], 'the first delete adds orphan');
  const second = await s.admin.delete(`${ns}?propagationPolicy=Foreground`);
  t.equal(second.status, 200, second.text);
  t.same(second.json.metadata.finalizers, ['orphan'], 'a later delete leaves them while the namespace finalizes');
  t.equal(second.json.status.phase, 'Terminating');
});
