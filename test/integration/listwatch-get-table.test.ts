/**
 * The spec's get table (resourceVersion semantics for get): unset = Most recent, "0" = Any,
 * non-zero = Not older than; a revision the store has not reached waits briefly, then 504
 * "Too large resource version" with Retry-After. Cheaply for every resource type, then in depth for
 * configmaps.
 */
import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import type { Response } from '../helpers/client.js';

interface TypeCase {
  plural: string;
  /** Collection path (namespaced types in "default"). */
  coll: string;
  kind: string;
  apiVersion: string;
  body: (name: string) => Record<string, unknown>;
}

const types: TypeCase[] = [
  { plural: 'namespaces', coll: '/api/v1/namespaces', kind: 'Namespace', apiVersion: 'v1', body: (n) => ({ metadata: { name: n } }) },
  { plural: 'configmaps', coll: '/api/v1/namespaces/default/configmaps', kind: 'ConfigMap', apiVersion: 'v1', body: (n) => ({ metadata: { name: n }, data: { k: 'v' } }) },
  { plural: 'secrets', coll: '/api/v1/namespaces/default/secrets', kind: 'Secret', apiVersion: 'v1', body: (n) => ({ metadata: { name: n }, data: { k: 'dg==' } }) },
  { plural: 'serviceaccounts', coll: '/api/v1/namespaces/default/serviceaccounts', kind: 'ServiceAccount', apiVersion: 'v1', body: (n) => ({ metadata: { name: n } }) },
  {
    plural: 'events',
    coll: '/api/v1/namespaces/default/events',
    kind: 'Event',
    apiVersion: 'v1',
    body: (n) => ({ metadata: { name: n }, involvedObject: { kind: 'Pod', namespace: 'default', name: 'p' }, reason: 'Started', message: 'm', type: 'Normal' }),
  },
  { plural: 'csidrivers', coll: '/apis/storage.svc.io/v1/csidrivers', kind: 'CSIDriver', apiVersion: 'storage.svc.io/v1', body: (n) => ({ metadata: { name: n }, spec: {} }) },
  { plural: 'leases', coll: '/apis/coordination.svc.io/v1/namespaces/default/leases', kind: 'Lease', apiVersion: 'coordination.svc.io/v1', body: (n) => ({ metadata: { name: n }, spec: {} }) },
];

const rv = (o: { metadata: { resourceVersion: string } }): number => Number(o.metadata.resourceVersion);
const FUTURE = 10_000_000;

/** Creates `name`, then relabels it: returns both versions. */
async function createAndUpdate(s: TestServer, tc: TypeCase, name: string): Promise<{ v1: any; v2: any }> {
  const c = await s.admin.post(tc.coll, tc.body(name));
  if (c.status !== 201) throw new Error(`create ${tc.plural}/${name}: ${c.status} ${c.text}`);
  const v1 = c.json;
  const next = structuredClone(v1);
  next.metadata.labels = { ...(next.metadata.labels ?? {}), step: 'two' };
  const u = await s.admin.put(`${tc.coll}/${name}`, next);
  if (u.status !== 200) throw new Error(`update ${tc.plural}/${name}: ${u.status} ${u.text}`);
  return { v1, v2: u.json };
}

/** The store's current revision, as a consistent list reports it. */
async function currentRevision(s: TestServer): Promise<number> {
  const r = await s.admin.get('/api/v1/namespaces');
  return Number(r.json.metadata.resourceVersion);
}

function assertTooLarge(t: Test, r: Response, elapsedMs: number, what: string): void {
  t.equal(r.status, 504, `${what}: 504`);
  t.equal(r.json?.kind, 'Status', `${what}: a Status body`);
  t.equal(r.json?.reason, 'Timeout', `${what}: reason Timeout`);
  t.match(r.json?.message ?? '', /Too large resource version/, `${what}: message says Too large resource version`);
  t.ok(r.headers['retry-after'] !== undefined && Number(r.headers['retry-after']) >= 1, `${what}: Retry-After header (${r.headers['retry-after']})`);
  t.ok(elapsedMs >= 1500 && elapsedMs < 10_000, `${what}: waited briefly before answering (${elapsedMs} ms)`);
}

async function timed(p: () => Promise<Response>): Promise<{ r: Response; ms: number }> {
  const t0 = Date.now();
  const r = await p();
  return { r, ms: Date.now() - t0 };
}

t.test('get table, every resource type', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const made = new Map<string, { v1: any; v2: any }>();
  for (const tc of types) made.set(tc.plural, await createAndUpdate(s, tc, `gt-${tc.plural.slice(0, 5)}`));
  const current = await currentRevision(s);

  for (const tc of types) {
    const { v1, v2 } = made.get(tc.plural)!;
    const path = `${tc.coll}/${v1.metadata.name}`;
    await t.test(`${tc.plural}: rv unset -> Most recent`, async (t) => {
      const r = await s.admin.get(path);
      t.equal(r.status, 200);
      t.equal(r.json.kind, tc.kind);
      t.equal(r.json.apiVersion, tc.apiVersion);
      t.equal(rv(r.json), rv(v2), 'the latest version');
      t.equal(r.json.metadata.labels?.step, 'two');
    });
    await t.test(`${tc.plural}: rv=0 -> Any`, async (t) => {
      const r = await s.admin.get(`${path}?resourceVersion=0`);
      t.equal(r.status, 200);
      t.ok([rv(v1), rv(v2)].includes(rv(r.json)), `one of the versions written (${rv(r.json)})`);
    });
    await t.test(`${tc.plural}: rv=non-zero (older than the object's latest write) -> Not older than`, async (t) => {
      const r = await s.admin.get(`${path}?resourceVersion=${rv(v1)}`);
      t.equal(r.status, 200);
      t.ok(rv(r.json) >= rv(v1), 'not older than the requested version');
      t.equal(rv(r.json), rv(v2), 'served from a state at least as new (the latest)');
    });
    await t.test(`${tc.plural}: rv=non-zero (the store's current revision) -> Not older than`, async (t) => {
      const r = await s.admin.get(`${path}?resourceVersion=${current}`);
      t.equal(r.status, 200);
      t.equal(rv(r.json), rv(v2), 'the object as of the current revision');
    });
  }

  await t.test('every type: rv=non-zero beyond the current revision -> 504 Too large resource version after a brief wait', async (t) => {
    const results = await Promise.all(types.map((tc) => timed(() => s.admin.get(`${tc.coll}/${made.get(tc.plural)!.v1.metadata.name}?resourceVersion=${FUTURE}`))));
    types.forEach((tc, i) => assertTooLarge(t, results[i]!.r, results[i]!.ms, tc.plural));
    const ok = await s.admin.get(`${types[1]!.coll}/${made.get('configmaps')!.v1.metadata.name}`);
    t.equal(ok.status, 200, 'the server still answers normal requests');
  });
});

t.test('get table in depth, configmaps', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const coll = '/api/v1/namespaces/default/configmaps';
  const a1 = (await s.admin.post(coll, { metadata: { name: 'a' }, data: { n: '1' } })).json;
  const a2 = (await s.admin.put(`${coll}/a`, { ...a1, data: { n: '2' } })).json;
  const gone = (await s.admin.post(coll, { metadata: { name: 'gone' }, data: { n: '1' } })).json;
  t.equal((await s.admin.delete(`${coll}/gone`)).status, 200);
  const other = (await s.admin.post('/api/v1/namespaces/default/secrets', { metadata: { name: 'later' } })).json;
  const current = await currentRevision(s);
  t.ok(current >= rv(other), 'the current revision includes the last write');

  const rows: [cell: string, query: string, check: (t: Test, r: Response) => void][] = [
    ['rv unset -> Most recent', '', (t, r) => (t.equal(r.status, 200), t.equal(r.json.data.n, '2'), t.equal(rv(r.json), rv(a2)))],
    ['rv=0 -> Any', '?resourceVersion=0', (t, r) => (t.equal(r.status, 200), t.ok([rv(a1), rv(a2)].includes(rv(r.json))))],
    ['rv=non-zero at the first write -> Not older than (newer state returned)', `?resourceVersion=${rv(a1)}`, (t, r) => (t.equal(r.status, 200), t.equal(r.json.data.n, '2'))],
    ['rv=non-zero at the object\'s own version -> Not older than', `?resourceVersion=${rv(a2)}`, (t, r) => (t.equal(r.status, 200), t.equal(rv(r.json), rv(a2)))],
    [
      'rv=non-zero newer than the object (another resource\'s write) -> Not older than',
      `?resourceVersion=${rv(other)}`,
      (t, r) => (t.equal(r.status, 200), t.equal(rv(r.json), rv(a2), 'an object keeps its own resourceVersion')),
    ],
    ['rv=non-zero at the current revision -> Not older than', `?resourceVersion=${current}`, (t, r) => (t.equal(r.status, 200), t.equal(rv(r.json), rv(a2)))],
  ];
  for (const [cell, query, check] of rows) await t.test(`get a [${cell}]`, async (t) => check(t, await s.admin.get(`${coll}/a${query}`)));

  await t.test('get of a deleted object at a revision where it still existed -> Not older than: 404 (the newer state)', async (t) => {
    const r = await s.admin.get(`${coll}/gone?resourceVersion=${rv(gone)}`);
    t.equal(r.status, 404);
    t.equal(r.json.reason, 'NotFound');
  });
  await t.test('get of a deleted object with rv unset -> Most recent: 404', async (t) => {
    t.equal((await s.admin.get(`${coll}/gone`)).status, 404);
  });

  await t.test('read-your-writes: a get at the resourceVersion a write returned sees that write', async (t) => {
    for (let i = 0; i < 20; i++) {
      const w = await s.admin.post(coll, { metadata: { name: `ryw-${i}` }, data: { i: String(i) } });
      const r = await s.admin.get(`${coll}/ryw-${i}?resourceVersion=${rv(w.json)}`);
      if (r.status !== 200 || rv(r.json) !== rv(w.json)) return void t.fail(`write ${i}: got ${r.status} ${r.text.slice(0, 200)}`);
    }
    t.pass('20 writes, each read back at its own resourceVersion');
  });

  await t.test('rv=non-zero just past the current revision: waits, then serves once a write reaches it', async (t) => {
    const now = await currentRevision(s);
    const pending = timed(() => s.admin.get(`${coll}/a?resourceVersion=${now + 1}`));
    await new Promise((r) => setTimeout(r, 300));
    await s.admin.post(coll, { metadata: { name: 'bump' } });
    const { r, ms } = await pending;
    t.equal(r.status, 200, 'answered once the revision exists');
    t.ok(ms < 2900, `without waiting for the full timeout (${ms} ms)`);
  });

  await t.test('rv=non-zero beyond the current revision -> 504 Too large resource version, Retry-After', async (t) => {
    const { r, ms } = await timed(() => s.admin.get(`${coll}/a?resourceVersion=${FUTURE}`));
    assertTooLarge(t, r, ms, 'get');
    t.match(r.json.message, new RegExp(`${FUTURE}`), 'the message names the requested version');
    t.equal((await s.admin.get(`${coll}/a`)).status, 200, 'normal requests are served afterwards');
  });
});
