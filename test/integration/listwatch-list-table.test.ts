/**
 * The spec's list table (resourceVersion x resourceVersionMatch x pagination), one test per cell,
 * named after the cell: status code and the semantics the cell promises (Most recent, Any,
 * Not older than, Exact, Continue token Exact, invalid 400). In depth against configmaps with a
 * history whose states differ at the two revisions used, then cheaply for every resource type.
 * History expiry (410) lives in listwatch-history; too-large versions (504) are checked here.
 */
import t, { type Test } from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import type { Response } from '../helpers/client.js';

const rvNum = (o: { metadata: { resourceVersion: string } }): number => Number(o.metadata.resourceVersion);
const FUTURE = 10_000_000;

function qs(p: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(p)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

type Pagination = 'limit unset' | 'limit=n, continue unset' | 'limit=n, continue=token';
type RvCell = 'unset' | '0' | 'non-zero';
type Semantics = 'Most recent' | 'Any' | 'Not older than' | 'Exact' | 'Continue token, Exact' | 'invalid, treated as Continue token, Exact' | 'invalid, 400';

/** The spec's list table, verbatim, plus the rows it leaves implicit (a match with a continue token). */
const table: [rvm: '' | 'Exact' | 'NotOlderThan', pagination: Pagination, rv: RvCell, semantics: Semantics][] = [
  ['', 'limit unset', 'unset', 'Most recent'],
  ['', 'limit unset', '0', 'Any'],
  ['', 'limit unset', 'non-zero', 'Not older than'],
  ['', 'limit=n, continue unset', 'unset', 'Most recent'],
  ['', 'limit=n, continue unset', '0', 'Any'],
  ['', 'limit=n, continue unset', 'non-zero', 'Exact'],
  ['', 'limit=n, continue=token', 'unset', 'Continue token, Exact'],
  ['', 'limit=n, continue=token', '0', 'invalid, treated as Continue token, Exact'],
  ['', 'limit=n, continue=token', 'non-zero', 'invalid, 400'],
  ['Exact', 'limit unset', 'unset', 'invalid, 400'],
  ['Exact', 'limit unset', '0', 'invalid, 400'],
  ['Exact', 'limit unset', 'non-zero', 'Exact'],
  ['Exact', 'limit=n, continue unset', 'unset', 'invalid, 400'],
  ['Exact', 'limit=n, continue unset', '0', 'invalid, 400'],
  ['Exact', 'limit=n, continue unset', 'non-zero', 'Exact'],
  ['NotOlderThan', 'limit unset', 'unset', 'invalid, 400'],
  ['NotOlderThan', 'limit unset', '0', 'Any'],
  ['NotOlderThan', 'limit unset', 'non-zero', 'Not older than'],
  ['NotOlderThan', 'limit=n, continue unset', 'unset', 'invalid, 400'],
  ['NotOlderThan', 'limit=n, continue unset', '0', 'Any'],
  ['NotOlderThan', 'limit=n, continue unset', 'non-zero', 'Not older than'],
  // not in the table: a match together with a continue token (upstream: forbidden)
  ['Exact', 'limit=n, continue=token', 'unset', 'invalid, 400'],
  ['Exact', 'limit=n, continue=token', 'non-zero', 'invalid, 400'],
  ['NotOlderThan', 'limit=n, continue=token', 'unset', 'invalid, 400'],
  ['NotOlderThan', 'limit=n, continue=token', '0', 'invalid, 400'],
  ['NotOlderThan', 'limit=n, continue=token', 'non-zero', 'invalid, 400'],
];

const cellName = (rvm: string, pag: Pagination, rv: RvCell, sem: Semantics): string =>
  `[resourceVersionMatch=${rvm || 'unset'}, ${pag}, resourceVersion=${rv}] -> ${sem}`;

/** Which parameters the 400 must name. */
function invalidPattern(rvm: string, pag: Pagination, rv: RvCell): RegExp {
  if (rvm && pag === 'limit=n, continue=token') return /resourceVersionMatch.*continue|continue.*resourceVersionMatch/;
  if (rvm && rv === 'unset') return /resourceVersionMatch.*resourceVersion/;
  if (rvm === 'Exact' && rv === '0') return /resourceVersionMatch.*"0"|resourceVersion "0"/i;
  return /resource ?version.*continue|continue.*resource ?version/i;
}

function assertInvalid(t: Test, r: Response, pattern: RegExp): void {
  t.equal(r.status, 400, `400 (got ${r.status}: ${r.text.slice(0, 200)})`);
  t.equal(r.json?.kind, 'Status');
  t.equal(r.json?.code, 400);
  t.equal(r.json?.status, 'Failure');
  t.match(r.json?.message ?? '', pattern, 'the message names the parameters');
}

// ---------------------------------------------------------------------------------------------
// configmaps in depth
// ---------------------------------------------------------------------------------------------

t.test('list table in depth, configmaps', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const coll = '/api/v1/namespaces/default/configmaps';
  const mk = async (name: string, n: string) => (await s.admin.post(coll, { metadata: { name }, data: { n } })).json;
  // state at R1: a(1) b(1) c(1); state at R2: a(2) c(1) d(1)
  const a1 = await mk('a', '1');
  await mk('b', '1');
  const c1 = await mk('c', '1');
  const R1 = rvNum(c1);
  const a2 = (await s.admin.put(`${coll}/a`, { ...a1, data: { n: '2' } })).json;
  t.equal((await s.admin.delete(`${coll}/b`)).status, 200);
  const d1 = await mk('d', '1');
  const R2 = rvNum(d1);
  t.ok(rvNum(a2) > R1 && R2 > rvNum(a2), 'history: a changed and b deleted after R1');

  const stateR1 = [
    ['a', '1'],
    ['b', '1'],
    ['c', '1'],
  ];
  const stateR2 = [
    ['a', '2'],
    ['c', '1'],
    ['d', '1'],
  ];
  const LIMIT = 2;
  const items = (r: Response): string[][] => (r.json?.items ?? []).map((i: any) => [i.metadata.name, i.data?.n]);
  const listRv = (r: Response): number => Number(r.json?.metadata?.resourceVersion);

  /** The state at a revision, from the writes above (only revisions where it is unambiguous). */
  const stateAt = (rev: number): string[][] | undefined => (rev >= R2 ? stateR2 : rev >= R1 && rev < rvNum(a2) ? stateR1 : undefined);

  function page(state: string[][], limit: number | undefined): { items: string[][]; remaining: number } {
    if (!limit) return { items: state, remaining: 0 };
    return { items: state.slice(0, limit), remaining: Math.max(0, state.length - limit) };
  }

  function assertPage(t: Test, r: Response, expected: string[][], limit: number | undefined): void {
    const p = page(expected, limit);
    t.same(items(r), p.items, 'items are the state at the list resourceVersion');
    if (p.remaining > 0) {
      t.ok(r.json.metadata.continue, 'a continue token when more items exist');
      t.equal(r.json.metadata.remainingItemCount, p.remaining, 'remainingItemCount counts the rest');
    } else {
      t.notOk(r.json.metadata.continue, 'no continue token on the last chunk');
      t.equal(r.json.metadata.remainingItemCount, undefined, 'no remainingItemCount when the list is complete');
    }
  }

  // A continue token from the first Exact page at R1, for the continue=token cells.
  const first = await s.admin.get(`${coll}${qs({ limit: LIMIT, resourceVersion: R1 })}`);
  t.equal(first.status, 200);
  const token: string = first.json.metadata.continue;
  t.ok(token, 'a first page at R1 gives a continue token');

  for (const [rvm, pag, rvCell, sem] of table) {
    await t.test(`list configmaps ${cellName(rvm, pag, rvCell, sem)}`, async (t) => {
      const q = qs({
        resourceVersionMatch: rvm || undefined,
        resourceVersion: rvCell === 'unset' ? undefined : rvCell === '0' ? '0' : R1,
        limit: pag === 'limit unset' ? undefined : LIMIT,
        continue: pag === 'limit=n, continue=token' ? token : undefined,
      });
      const r = await s.admin.get(`${coll}${q}`);
      const limit = pag === 'limit unset' ? undefined : LIMIT;
      switch (sem) {
        case 'invalid, 400':
          return assertInvalid(t, r, invalidPattern(rvm, pag, rvCell));
        case 'Most recent':
          t.equal(r.status, 200, r.text.slice(0, 200));
          t.ok(listRv(r) >= R2, `list resourceVersion ${listRv(r)} includes every acknowledged write (>= ${R2})`);
          return assertPage(t, r, stateR2, limit);
        case 'Any': {
          t.equal(r.status, 200, r.text.slice(0, 200));
          t.ok(Number.isInteger(listRv(r)) && listRv(r) > 0 && listRv(r) <= R2, `a list resourceVersion the store has reached (${listRv(r)})`);
          const st = stateAt(listRv(r));
          if (st) {
            // Any with a limit may be served whole from the cache (upstream ignores the limit at "0")
            const got = items(r);
            t.same(got, st.slice(0, got.length), 'items are a prefix of the state at the list resourceVersion');
            if (limit && r.json.metadata.continue) t.equal(got.length, limit, 'a chunk is full when a continue token is given');
          }
          return;
        }
        case 'Not older than': {
          t.equal(r.status, 200, r.text.slice(0, 200));
          t.ok(listRv(r) >= R1, `list resourceVersion ${listRv(r)} is not older than ${R1}`);
          const st = stateAt(listRv(r));
          t.ok(st, 'the list resourceVersion is a revision the items can be checked at');
          if (st) assertPage(t, r, st, limit);
          return;
        }
        case 'Exact':
          t.equal(r.status, 200, r.text.slice(0, 200));
          t.equal(listRv(r), R1, 'the list resourceVersion is exactly the requested one');
          return assertPage(t, r, stateR1, limit);
        case 'Continue token, Exact':
        case 'invalid, treated as Continue token, Exact':
          t.equal(r.status, 200, r.text.slice(0, 200));
          t.equal(listRv(r), R1, "the token's revision (of the first page)");
          t.same(items(r), [['c', '1']], 'the rest of the snapshot at R1 (b deleted and a changed later are invisible)');
          t.notOk(r.json.metadata.continue, 'the last chunk');
          t.equal(r.json.metadata.remainingItemCount, undefined);
          return;
      }
    });
  }

  await t.test('list configmaps [resourceVersionMatch=Exact, resourceVersion=current] -> Exact at the current revision', async (t) => {
    const r = await s.admin.get(`${coll}${qs({ resourceVersionMatch: 'Exact', resourceVersion: R2 })}`);
    t.equal(r.status, 200);
    t.equal(listRv(r), R2);
    t.same(items(r), stateR2);
  });

  await t.test('list configmaps [resourceVersionMatch=Exact, resourceVersion between writes] -> the state at that revision', async (t) => {
    // after a's update but before d was created: a(2) c(1), b deleted or not depending on the exact revision
    const r = await s.admin.get(`${coll}${qs({ resourceVersionMatch: 'Exact', resourceVersion: rvNum(a2) })}`);
    t.equal(r.status, 200);
    t.equal(listRv(r), rvNum(a2));
    t.same(items(r), [
      ['a', '2'],
      ['b', '1'],
      ['c', '1'],
    ]);
    t.equal(r.json.items[0].metadata.resourceVersion, a2.metadata.resourceVersion, 'items carry their own resourceVersion at that revision');
  });

  await t.test('continue token of a Most recent first page: the later pages stay on its snapshot', async (t) => {
    const p1 = await s.admin.get(`${coll}${qs({ limit: 1 })}`);
    t.equal(p1.status, 200);
    t.same(items(p1), [['a', '2']]);
    t.equal(p1.json.metadata.remainingItemCount, 2);
    const snap = listRv(p1);
    await s.admin.put(`${coll}/c`, { ...(await s.admin.get(`${coll}/c`)).json, data: { n: 'changed' } });
    await mk('e', '1');
    const p2 = await s.admin.get(`${coll}${qs({ limit: 1, continue: p1.json.metadata.continue })}`);
    t.equal(p2.status, 200);
    t.equal(listRv(p2), snap, 'the same list resourceVersion on every chunk');
    t.same(items(p2), [['c', '1']], 'the change to c made after the first page is invisible');
    const p3 = await s.admin.get(`${coll}${qs({ limit: 1, continue: p2.json.metadata.continue })}`);
    t.equal(listRv(p3), snap);
    t.same(items(p3), [['d', '1']], 'e, created after the first page, is invisible');
    t.notOk(p3.json.metadata.continue);
  });

  await t.test('too large resourceVersion: every cell that reads at a revision waits, then 504', async (t) => {
    const now = Number((await s.admin.get(coll)).json.metadata.resourceVersion);
    const cells: [string, Record<string, string | number | undefined>][] = [
      ['[resourceVersionMatch=unset, limit unset, resourceVersion=non-zero] (Not older than)', { resourceVersion: FUTURE }],
      ['[resourceVersionMatch=unset, limit=n, resourceVersion=non-zero] (Exact)', { resourceVersion: FUTURE, limit: LIMIT }],
      ['[resourceVersionMatch=Exact, limit unset, resourceVersion=non-zero]', { resourceVersion: FUTURE, resourceVersionMatch: 'Exact' }],
      ['[resourceVersionMatch=Exact, limit=n, resourceVersion=non-zero]', { resourceVersion: FUTURE, resourceVersionMatch: 'Exact', limit: LIMIT }],
      ['[resourceVersionMatch=NotOlderThan, limit unset, resourceVersion=non-zero]', { resourceVersion: FUTURE, resourceVersionMatch: 'NotOlderThan' }],
      ['[resourceVersionMatch=NotOlderThan, limit=n, resourceVersion=non-zero]', { resourceVersion: FUTURE, resourceVersionMatch: 'NotOlderThan', limit: LIMIT }],
      ['[resourceVersionMatch=Exact, resourceVersion=current+1]', { resourceVersion: now + 1000, resourceVersionMatch: 'Exact' }],
    ];
    const t0 = Date.now();
    const results = await Promise.all(cells.map(async ([, p]) => ({ r: await s.admin.get(`${coll}${qs(p)}`), ms: Date.now() - t0 })));
    cells.forEach(([name], i) => {
      const { r, ms } = results[i]!;
      t.equal(r.status, 504, `${name}: 504 (got ${r.status} ${r.text.slice(0, 120)})`);
      t.match(r.json?.message ?? '', /Too large resource version/, `${name}: message`);
      t.ok(Number(r.headers['retry-after']) >= 1, `${name}: Retry-After`);
      t.ok(ms >= 1500, `${name}: answered after a brief wait (${ms} ms)`);
    });
    t.equal((await s.admin.get(coll)).status, 200, 'normal lists are served afterwards');
  });
});

// ---------------------------------------------------------------------------------------------
// every resource type, one row per cell
// ---------------------------------------------------------------------------------------------

interface TypeCase {
  plural: string;
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

/** Follows continue tokens to the end; returns every page. */
async function allPages(s: TestServer, path: string, first: Response, limit: number): Promise<Response[]> {
  const pages = [first];
  let cur = first;
  for (let i = 0; i < 50 && cur.status === 200 && cur.json.metadata.continue; i++) {
    cur = await s.admin.get(`${path}${qs({ limit, continue: cur.json.metadata.continue })}`);
    pages.push(cur);
  }
  return pages;
}

t.test('list table, every resource type', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const fixtures = new Map<string, { x1v1: any; x1v2: any; x2: any; R1: number }>();
  for (const tc of types) {
    const n1 = `lt-${tc.plural.slice(0, 4)}-1`;
    const n2 = `lt-${tc.plural.slice(0, 4)}-2`;
    const x1v1 = (await s.admin.post(tc.coll, tc.body(n1))).json;
    const x2 = (await s.admin.post(tc.coll, tc.body(n2))).json;
    const R1 = rvNum(x2);
    const x1v2 = (await s.admin.put(`${tc.coll}/${n1}`, { ...x1v1, metadata: { ...x1v1.metadata, labels: { step: 'two' } } })).json;
    if (!x1v2?.metadata) throw new Error(`fixture for ${tc.plural} failed`);
    fixtures.set(tc.plural, { x1v1, x1v2, x2, R1 });
  }
  const LIMIT = 1;

  for (const tc of types) {
    const f = fixtures.get(tc.plural)!;
    const n1 = f.x1v1.metadata.name;
    const n2 = f.x2.metadata.name;
    const first = await s.admin.get(`${tc.coll}${qs({ limit: LIMIT, resourceVersion: f.R1 })}`);
    const token = first.json?.metadata?.continue as string;
    await t.test(`${tc.plural}: fixtures`, async (t) => {
      t.equal(first.status, 200);
      t.ok(token, 'a first Exact page gives a continue token');
    });

    for (const [rvm, pag, rvCell, sem] of table) {
      await t.test(`${tc.plural} ${cellName(rvm, pag, rvCell, sem)}`, async (t) => {
        const limit = pag === 'limit unset' ? undefined : LIMIT;
        const q = qs({
          resourceVersionMatch: rvm || undefined,
          resourceVersion: rvCell === 'unset' ? undefined : rvCell === '0' ? '0' : f.R1,
          limit,
          continue: pag === 'limit=n, continue=token' ? token : undefined,
        });
        const r = await s.admin.get(`${tc.coll}${q}`);
        if (sem === 'invalid, 400') return assertInvalid(t, r, invalidPattern(rvm, pag, rvCell));
        t.equal(r.status, 200, r.text.slice(0, 200));
        t.equal(r.json.kind, `${tc.kind}List`);
        t.equal(r.json.apiVersion, tc.apiVersion);
        const listRv = Number(r.json.metadata.resourceVersion);
        // collect the whole list (following tokens) to check which versions of x1 and x2 it holds
        const pages = limit && sem !== 'Any' ? await allPages(s, tc.coll, r, LIMIT) : [r];
        for (const p of pages) t.equal(Number(p.json.metadata.resourceVersion), listRv, 'every chunk has the same list resourceVersion');
        const all = pages.flatMap((p) => p.json.items as any[]);
        const x1 = all.find((i) => i.metadata.name === n1);
        const x2 = all.find((i) => i.metadata.name === n2);
        if (limit) t.ok(r.json.items.length <= LIMIT || sem === 'Any', 'a chunk holds at most limit items');
        switch (sem) {
          case 'Most recent':
            t.ok(listRv >= rvNum(f.x1v2), 'the list includes the latest write');
            t.equal(x1?.metadata.resourceVersion, f.x1v2.metadata.resourceVersion, 'x1 at its latest version');
            t.ok(x2, 'x2 listed');
            break;
          case 'Any':
            t.ok(listRv > 0, 'a list resourceVersion');
            break;
          case 'Not older than':
            t.ok(listRv >= f.R1, `list resourceVersion ${listRv} >= ${f.R1}`);
            if (listRv >= rvNum(f.x1v2)) t.equal(x1?.metadata.resourceVersion, f.x1v2.metadata.resourceVersion);
            break;
          case 'Exact':
            t.equal(listRv, f.R1, 'exactly the requested revision');
            t.equal(x1?.metadata.resourceVersion, f.x1v1.metadata.resourceVersion, 'x1 as it was at that revision');
            t.ok(x2, 'x2 listed');
            break;
          default: {
            // continue token cells: the rest of the Exact snapshot at R1
            t.equal(listRv, f.R1, "the token's revision");
            const before = (first.json.items as any[]).map((i) => i.metadata.name);
            const names = all.map((i) => i.metadata.name);
            t.same(
              names.filter((n) => before.includes(n)),
              [],
              'no item of the first page repeats',
            );
            const x1any = [...first.json.items, ...all].find((i: any) => i.metadata.name === n1);
            t.equal(x1any?.metadata.resourceVersion, f.x1v1.metadata.resourceVersion, 'x1 as it was at R1');
            t.ok([...first.json.items, ...all].some((i: any) => i.metadata.name === n2), 'x2 listed in one of the chunks');
          }
        }
      });
    }
  }

  await t.test('every type: too large resourceVersion (Not older than and Exact) waits, then 504', async (t) => {
    const reqs = types.flatMap((tc) => [
      { name: `${tc.plural} Not older than`, path: `${tc.coll}${qs({ resourceVersion: FUTURE })}` },
      { name: `${tc.plural} Exact`, path: `${tc.coll}${qs({ resourceVersion: FUTURE, resourceVersionMatch: 'Exact' })}` },
    ]);
    const t0 = Date.now();
    const results = await Promise.all(reqs.map(async (q) => ({ r: await s.admin.get(q.path), ms: Date.now() - t0 })));
    reqs.forEach((q, i) => {
      const { r, ms } = results[i]!;
      t.equal(r.status, 504, `${q.name}: 504`);
      t.match(r.json?.message ?? '', /Too large resource version/, `${q.name}: message`);
      t.ok(Number(r.headers['retry-after']) >= 1, `${q.name}: Retry-After`);
      t.ok(ms >= 1500, `${q.name}: after a brief wait`);
    });
  });
});
