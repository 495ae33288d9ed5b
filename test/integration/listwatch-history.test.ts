/**
 * The history window: `--etcd-compaction-interval` (history kept between one and two intervals) and
 * `--watch-cache-size` (events kept per resource in memory; older resumptions read the store's
 * history). Exact lists, continue tokens and watches from a revision no longer kept are 410 Expired
 * (a watch: 200 + an ERROR event carrying the Status, then the stream ends); the expired continue
 * token comes back with an inconsistent continue token that lists the rest.
 */
import t from 'tap';
import { startServer, type TestServer } from '../helpers/server.js';
import {
  collectThrough,
  collectUntil,
  resolveDeletions,
  rvOf,
  validateAtomic,
  validateOrdered,
  validateReliable,
  validateUnique,
  WriteLog,
} from '../helpers/watch-guarantees.js';

const CM = '/api/v1/namespaces/default/configmaps';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const listRv = (r: { json: any }): number => Number(r.json.metadata.resourceVersion);

/** Polls until an Exact list at `rev` of `coll` answers 410 (compacted); returns the time it took, or -1. */
async function waitCompacted(s: TestServer, coll: string, rev: number, limitMs: number): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < limitMs) {
    const r = await s.admin.get(`${coll}?resourceVersion=${rev}&resourceVersionMatch=Exact`);
    if (r.status === 410) return Date.now() - t0;
    await sleep(100);
  }
  return -1;
}

t.test('compaction: Exact lists, continue tokens and watches older than the window are 410 Expired', async (t) => {
  const s = await startServer(['--etcd-compaction-interval=1s']);
  t.teardown(() => s.stop());
  for (const n of ['a', 'b', 'c', 'd']) await s.admin.post(CM, { metadata: { name: n }, data: { v: '1' } });
  await s.admin.post('/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'quiet-a.example.com' }, spec: {} });
  // the last csidrivers write: the resource never changes after it
  const drv = (await s.admin.post('/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'quiet-b.example.com' }, spec: {} })).json;
  const drvFirst = await s.admin.get('/apis/storage.svc.io/v1/csidrivers?limit=1');
  const drvToken = drvFirst.json.metadata.continue as string;
  const first = await s.admin.get(`${CM}?limit=2`);
  t.equal(first.status, 200);
  const L1 = listRv(first);
  const token = first.json.metadata.continue as string;
  t.ok(token, 'a continue token');
  // later writes (the configmaps change after L1; the csidrivers never do)
  const a = (await s.admin.get(`${CM}/a`)).json;
  await s.admin.put(`${CM}/a`, { ...a, data: { v: '2' } });
  await s.admin.post(CM, { metadata: { name: 'e' } });

  const took = await waitCompacted(s, CM, L1, 6000);
  t.ok(took >= 0, `the revision of the first page was compacted (after ${took} ms)`);

  await t.test('list [resourceVersionMatch=Exact, resourceVersion=compacted] -> 410 Expired', async (t) => {
    const r = await s.admin.get(`${CM}?resourceVersion=${L1}&resourceVersionMatch=Exact`);
    t.equal(r.status, 410);
    t.equal(r.json.reason, 'Expired');
    t.equal(r.json.message, 'The resourceVersion for the provided list is too old.');
  });
  await t.test('list [resourceVersionMatch=Exact, limit=n, resourceVersion=compacted] -> 410 Expired', async (t) => {
    const r = await s.admin.get(`${CM}?resourceVersion=${L1}&resourceVersionMatch=Exact&limit=2`);
    t.equal(r.status, 410);
    t.equal(r.json.reason, 'Expired');
    t.equal(r.json.message, 'The resourceVersion for the provided list is too old.');
  });
  await t.test('list [resourceVersionMatch=unset, limit=n, resourceVersion=compacted] (Exact) -> 410 Expired', async (t) => {
    const r = await s.admin.get(`${CM}?resourceVersion=${L1}&limit=2`);
    t.equal(r.status, 410);
    t.equal(r.json.reason, 'Expired');
  });
  await t.test('list [resourceVersionMatch=NotOlderThan, resourceVersion=compacted] -> 200, newer state', async (t) => {
    const r = await s.admin.get(`${CM}?resourceVersion=${L1}&resourceVersionMatch=NotOlderThan`);
    t.equal(r.status, 200);
    t.ok(listRv(r) >= L1);
    t.equal(r.json.items.find((i: any) => i.metadata.name === 'a')?.data?.v, '2');
  });
  await t.test('get [resourceVersion=compacted] -> Not older than: 200', async (t) => {
    const r = await s.admin.get(`${CM}/a?resourceVersion=${L1}`);
    t.equal(r.status, 200);
    t.equal(r.json.data.v, '2');
  });
  await t.test('list of a resource unchanged since a compacted revision [Exact] -> still 410 Expired', async (t) => {
    const took = await waitCompacted(s, '/apis/storage.svc.io/v1/csidrivers', rvOf(drv), 4000);
    t.ok(took >= 0, 'Exact at a revision outside the history window is 410 even if the resource did not change since');
  });
  await t.test('expired continue token of a resource unchanged since -> still 410 Expired', async (t) => {
    await waitCompacted(s, '/apis/storage.svc.io/v1/csidrivers', listRv(drvFirst), 4000);
    const r = await s.admin.get(`/apis/storage.svc.io/v1/csidrivers?limit=1&continue=${encodeURIComponent(drvToken)}`);
    t.equal(r.status, 410, `the token's revision is outside the history window (got ${r.status})`);
    t.equal(r.json.reason, 'Expired');
  });
  await t.test('expired continue token -> 410 Expired with an inconsistent continue token that lists the rest', async (t) => {
    const r = await s.admin.get(`${CM}?limit=2&continue=${encodeURIComponent(token)}`);
    t.equal(r.status, 410);
    t.equal(r.json.reason, 'Expired');
    t.match(r.json.message, /continue parameter is too old to display a consistent list result/);
    const next = r.json.metadata?.continue as string | undefined;
    t.ok(next, 'the Status carries a continue token in its metadata');
    if (!next) return;
    const rest = await s.admin.get(`${CM}?limit=10&continue=${encodeURIComponent(next)}`);
    t.equal(rest.status, 200, 'the inconsistent token is accepted');
    t.same(
      rest.json.items.map((i: any) => i.metadata.name),
      ['c', 'd', 'e'],
      'it lists the remainder after the last item of the first page, at a newer revision (e created later shows up)',
    );
  });
  await t.test('watch from a compacted revision -> 200, an ERROR event with 410 Expired, then the stream ends', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${L1}`);
    t.equal(w.status, 200);
    const e = await w.next(5000);
    t.equal(e?.type, 'ERROR');
    t.equal(e?.object.kind, 'Status');
    t.equal(e?.object.code, 410);
    t.equal(e?.object.reason, 'Expired');
    t.ok(await w.waitEnd(3000), 'the server ends the stream');
    w.close();
  });
  await t.test('deprecated watch path from a compacted revision -> ERROR 410 too', async (t) => {
    const w = await s.admin.stream(`/api/v1/watch/namespaces/default/configmaps?resourceVersion=${L1}`);
    t.equal(w.status, 200);
    const e = await w.next(5000);
    t.equal(e?.type, 'ERROR');
    t.equal(e?.object.code, 410);
    t.ok(await w.waitEnd(3000));
    w.close();
  });
  t.equal((await s.admin.get(CM)).status, 200, 'the server keeps serving');
});

t.test('compaction with a small watch cache: a watch from a compacted revision (store history path) is 410 Expired', async (t) => {
  const s = await startServer(['--etcd-compaction-interval=1s', '--watch-cache-size=2']);
  t.teardown(() => s.stop());
  for (const n of ['a', 'b', 'c', 'd']) await s.admin.post(CM, { metadata: { name: n } });
  const L1 = listRv(await s.admin.get(CM));
  for (const n of ['e', 'f', 'g']) await s.admin.post(CM, { metadata: { name: n } });
  t.ok((await waitCompacted(s, CM, L1, 6000)) >= 0, 'compacted');
  const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${L1}`);
  t.equal(w.status, 200);
  const e = await w.next(5000);
  t.equal(e?.type, 'ERROR', `an ERROR event (got ${e?.type})`);
  t.equal(e?.object.kind, 'Status');
  t.equal(e?.object.code, 410);
  t.equal(e?.object.reason, 'Expired');
  t.ok(await w.waitEnd(3000), 'the stream ends');
  w.close();
  t.equal((await s.admin.get(CM)).status, 200, 'the server keeps serving');
});

t.test('the history window is kept between one and two compaction intervals', async (t) => {
  const s = await startServer(['--etcd-compaction-interval=1500ms']);
  t.teardown(() => s.stop());
  const w0 = (await s.admin.post(CM, { metadata: { name: 'w0' } })).json;
  const R = rvOf(w0);
  const t0 = Date.now();
  await s.admin.post(CM, { metadata: { name: 'w1' } });
  await sleep(1100); // less than one interval after R
  const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${R}`);
  const still = await s.admin.get(`${CM}?resourceVersion=${R}&resourceVersionMatch=Exact`);
  const elapsed = Date.now() - t0;
  const evs = await w.take(1, 2000);
  w.close();
  if (elapsed < 1500) {
    t.equal(still.status, 200, `a revision written ${elapsed} ms ago (< 1 interval) is still readable at Exact`);
    t.equal(evs[0]?.type, 'ADDED', 'and resumable by a watch');
  } else t.comment(`the machine was too slow to check the lower bound (${elapsed} ms elapsed)`);
  const took = await waitCompacted(s, CM, R, 5000);
  const total = Date.now() - t0;
  t.ok(took >= 0, 'it is compacted eventually');
  t.ok(total <= 2 * 1500 + 2000, `within about two intervals (${total} ms; less than three)`);
});

t.test('--watch-cache-size: a watch resuming before the in-memory window is served from the store history', async (t) => {
  const s = await startServer(['--watch-cache-size=4']);
  t.teardown(() => s.stop());
  const reference = await s.admin.stream(`${CM}?watch=1&resourceVersion=${listRv(await s.admin.get(CM))}`);
  const log = new WriteLog(s.admin);
  const objs: any[] = [];
  for (let i = 0; i < 8; i++) objs.push(await log.create(CM, { metadata: { name: `h${i}`, labels: { i: String(i) } }, data: { v: '1' } }));
  for (const i of [1, 3, 5]) objs[i] = await log.update(`${CM}/h${i}`, { ...objs[i], data: { v: '2' } });
  for (const i of [2, 4]) await log.delete(`${CM}/h${i}`, objs[i]);
  await log.create(CM, { metadata: { name: 'h-last' } });
  const last = log.lastRv;
  const refEvents = await collectThrough(reference, last);
  reference.close();
  t.same(resolveDeletions(log.writes, refEvents), [], 'every delete is found in the reference history');
  const from = log.writes[1]!.rv; // far behind the 4-event ring

  for (const [name, path] of [
    ['?watch=1', `${CM}?watch=1&resourceVersion=${from}`],
    ['deprecated /watch/ path', `/api/v1/watch/namespaces/default/configmaps?resourceVersion=${from}`],
  ] as const) {
    await t.test(`resume from an old revision (${name})`, async (t) => {
      const w = await s.admin.stream(path);
      t.equal(w.status, 200);
      const evs = await collectThrough(w, last);
      w.close();
      t.same(validateOrdered(evs), [], 'ordered');
      t.same(validateUnique(evs), [], 'unique');
      t.same(validateAtomic(evs, log.writes), [], 'atomic (objects as written, deletions carry the last state)');
      t.same(validateReliable(evs, log.writes, { from, to: last }), [], 'reliable (every write after the start, nothing else)');
    });
  }
  await t.test('resume from a revision still in the ring', async (t) => {
    const recent = log.writes[log.writes.length - 3]!.rv;
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${recent}`);
    const evs = await collectThrough(w, last);
    w.close();
    t.same(validateAtomic(evs, log.writes), [], 'atomic (deletions at their own revision)');
    t.same(validateReliable(evs, log.writes, { from: recent, to: last }), [], 'reliable');
  });
  await t.test('a resumed watch continues with live events after the replay', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
    await collectThrough(w, last);
    const live = await log.create(CM, { metadata: { name: 'after-replay' } });
    const more = await collectUntil(w, (e) => e.some((x) => x.object?.metadata?.name === 'after-replay'), 5000);
    w.close();
    t.same(
      more.filter((e) => e.type !== 'BOOKMARK').map((e) => `${e.type} ${e.object.metadata.name}@${rvOf(e.object)}`),
      [`ADDED after-replay@${rvOf(live)}`],
    );
  });
});
