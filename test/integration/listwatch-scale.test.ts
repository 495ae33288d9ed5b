/**
 * A randomized burst of creates, updates (some moving objects in and out of a label selection) and
 * deletes from several concurrent writers, against a server with worker threads (--workers=2) and a
 * small watch cache ring, while several watchers of different shapes record:
 *   unfiltered with bookmarks, label-selected, the deprecated path, all namespaces, a streaming list
 *   started mid-burst, and a plain watch (resourceVersion unset) started mid-burst.
 * Every history is checked with the watch-guarantees validators (ordered, unique, atomic, reliable,
 * resumable, bookmarkable); the two mid-burst watchers must start from one consistent snapshot.
 * Inside the burst, reads at the resourceVersion a write returned (list, get, watch) never miss it.
 * The seed is printed; set LISTWATCH_SEED to replay a run.
 */
import t from 'tap';
import type { WatchEvent } from '../helpers/client.js';
import { startServer } from '../helpers/server.js';
import {
  type ApiLike,
  collectThrough,
  expectedEvents,
  resolveDeletions,
  rvOf,
  validateAtomic,
  validateBookmarkable,
  validateOrdered,
  validateReliable,
  validateResumable,
  validateUnique,
  type WriteRecord,
  WriteLog,
} from '../helpers/watch-guarantees.js';

const CM = '/api/v1/namespaces/default/configmaps';
const END = 'svc.io/initial-events-end';
const enc = encodeURIComponent;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** The state (key -> object) after applying every write at or below `rev`. */
function stateAt(writes: readonly WriteRecord[], rev: number): Map<string, ApiLike> {
  const st = new Map<string, ApiLike>();
  for (const w of [...writes].sort((a, b) => a.rv - b.rv)) {
    if (w.rv > rev) break;
    if (w.op === 'delete') st.delete(w.key);
    else st.set(w.key, w.object);
  }
  return st;
}

t.test('randomized burst with concurrent watchers: every history satisfies the guarantees', async (t) => {
  const seed = Number(process.env.LISTWATCH_SEED ?? Date.now() % 100000);
  t.comment(`seed ${seed}`);
  const rand = mulberry32(seed);
  const s = await startServer(['--workers=2', '--watch-cache-size=64', '--watch-bookmark-interval=200ms']);
  t.teardown(() => s.stop());

  const log = new WriteLog(s.admin);
  const KEYS = 30;
  const live = new Map<string, ApiLike>(); // name -> last state (guarded by the per-key lock)
  for (let i = 0; i < 10; i++) {
    const name = `k${i}`;
    live.set(name, await log.create(CM, { metadata: { name, labels: { group: i % 2 ? 'a' : 'b' } }, data: { n: '0' } }));
  }
  const R0 = log.lastRv;
  const inA = (o: ApiLike) => o.metadata.labels?.group === 'a';

  const open = (q: string) => s.admin.stream(q);
  const watchers = {
    unfiltered: await open(`${CM}?watch=1&allowWatchBookmarks=true&resourceVersion=${R0}`),
    selected: await open(`${CM}?watch=1&allowWatchBookmarks=true&labelSelector=${enc('group=a')}&resourceVersion=${R0}`),
    deprecated: await open(`/api/v1/watch/namespaces/default/configmaps?resourceVersion=${R0}`),
    allNamespaces: await open(`/api/v1/configmaps?watch=1&resourceVersion=${R0}`),
  };
  const midBurst: { streaming?: Promise<Awaited<ReturnType<typeof open>>>; plain?: Promise<Awaited<ReturnType<typeof open>>> } = {};

  // per-key locks so each writer knows the last state of the object it touches
  const locks = new Map<string, Promise<void>>();
  const withKey = async <T>(k: string, fn: () => Promise<T>): Promise<T> => {
    const prev = locks.get(k) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    locks.set(
      k,
      prev.then(() => mine),
    );
    await prev;
    try {
      return await fn();
    } finally {
      release();
    }
  };

  const ryw: string[] = [];
  let rywChecks = 0;
  /** Reads at the revision a write returned must see it: list (Not older than), get, and a watch from just before. */
  const readYourWrite = async (name: string, rv: number, deleted: boolean): Promise<void> => {
    rywChecks++;
    const l = await s.admin.get(`${CM}?resourceVersion=${rv}`);
    const item = (l.json?.items ?? []).find((i: any) => i.metadata.name === name);
    if (Number(l.json?.metadata?.resourceVersion) < rv) ryw.push(`list at ${rv} answered at ${l.json?.metadata?.resourceVersion}`);
    if (deleted ? item : rvOf(item) !== rv) ryw.push(`list at ${rv}: ${name} is ${item ? `at ${rvOf(item)}` : 'absent'}, want ${deleted ? 'absent' : rv}`);
    if (!deleted) {
      const g = await s.admin.get(`${CM}/${name}?resourceVersion=${rv}`);
      if (rvOf(g.json) !== rv) ryw.push(`get ${name} at ${rv}: ${g.status} ${rvOf(g.json)}`);
      const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${rv - 1}&fieldSelector=${enc(`metadata.name=${name}`)}`);
      const e = await w.next(3000);
      w.close();
      if (rvOf(e?.object) !== rv) ryw.push(`watch ${name} from ${rv - 1}: first event ${e?.type}@${rvOf(e?.object)}, want @${rv}`);
    }
  };

  const OPS = 360;
  let done = 0;
  const writer = async () => {
    while (done < OPS) {
      const n = done++;
      if (n === Math.floor(OPS / 3)) {
        midBurst.streaming = open(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
        midBurst.plain = open(`${CM}?watch=1`);
      }
      const name = `k${Math.floor(rand() * KEYS)}`;
      const roll = rand();
      await withKey(name, async () => {
        const cur = live.get(name);
        let rv: number;
        let deleted = false;
        if (!cur) {
          const o = await log.create(CM, { metadata: { name, labels: { group: rand() < 0.5 ? 'a' : 'b' } }, data: { n: String(n) } });
          live.set(name, o);
          rv = rvOf(o);
        } else if (roll < 0.15) {
          await log.delete(`${CM}/${name}`, cur);
          live.delete(name);
          deleted = true;
          rv = NaN;
        } else {
          const flip = roll > 0.75;
          const labels = flip ? { group: inA(cur) ? 'b' : 'a' } : cur.metadata.labels;
          const o = await log.update(`${CM}/${name}`, { ...cur, metadata: { ...cur.metadata, labels }, data: { n: String(n) } });
          live.set(name, o);
          rv = rvOf(o);
        }
        if (n % 12 === 0 && !deleted) await readYourWrite(name, rv, false);
      });
    }
  };
  const t0 = Date.now();
  await Promise.all(Array.from({ length: 6 }, writer));
  await log.create(CM, { metadata: { name: 'zz-fence' } });
  const burstMs = Date.now() - t0;
  t.comment(`${log.writes.length} writes in ${burstMs} ms`);

  t.same(resolveDeletions(log.writes), [], 'every deletion revision is pinned by the acknowledged revisions');
  t.same(ryw, [], `read-your-writes held in ${rywChecks} checks (list, get and watch at the write's resourceVersion)`);
  const to = log.lastRv;
  const writes = log.writes;
  const deletesAfterRyw = writes.filter((w) => w.op === 'delete').length;
  t.ok(deletesAfterRyw > 5, `the burst deleted objects (${deletesAfterRyw})`);

  const histories: Record<string, WatchEvent[]> = {};
  for (const [name, w] of Object.entries(watchers)) {
    histories[name] = await collectThrough(w, to, 15_000);
    w.close();
  }

  const filters: Record<string, ((o: ApiLike) => boolean) | undefined> = { selected: inA };
  for (const [name, evs] of Object.entries(histories)) {
    await t.test(`watcher "${name}"`, async (t) => {
      const strict = !filters[name];
      t.same(validateOrdered(evs), [], 'ordered');
      t.same(validateUnique(evs), [], 'unique');
      t.same(validateAtomic(evs, writes, strict), [], 'atomic');
      t.same(validateReliable(evs, writes, { from: R0, to, filter: filters[name] }), [], 'reliable');
      t.same(validateBookmarkable(evs, { kind: 'ConfigMap', apiVersion: 'v1' }), [], 'bookmarkable');
    });
  }

  await t.test('resumable from received resourceVersions (some served from the ring, some from the store history)', async (t) => {
    const full = histories.unfiltered!.filter((e) => e.type !== 'BOOKMARK');
    const points = [R0, ...Array.from({ length: 6 }, () => rvOf(full[Math.floor(rand() * full.length)]!.object))];
    for (const from of points) {
      const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
      const evs = await collectThrough(w, to, 10_000);
      w.close();
      t.same(validateResumable(full, from, evs), [], `resumed from ${from}`);
    }
    const sel = histories.selected!.filter((e) => e.type !== 'BOOKMARK');
    const from = rvOf(sel[Math.floor(sel.length / 2)]!.object);
    const w = await s.admin.stream(`${CM}?watch=1&labelSelector=${enc('group=a')}&resourceVersion=${from}`);
    const evs = await collectThrough(w, rvOf(sel[sel.length - 1]!.object), 10_000); // the fence is not selected
    w.close();
    t.same(validateResumable(sel, from, evs), [], `selected watcher resumed from ${from}`);
  });

  await t.test('the streaming list started mid-burst: initial state = the state at its initial-events-end bookmark, then reliable', async (t) => {
    const w = await midBurst.streaming!;
    const evs = await collectThrough(w, to, 15_000);
    w.close();
    const endAt = evs.findIndex((e) => e.type === 'BOOKMARK' && e.object.metadata.annotations?.[END] === 'true');
    t.ok(endAt >= 0, 'an initial-events-end bookmark');
    if (endAt < 0) return;
    const S = rvOf(evs[endAt]!.object);
    const initial = evs.slice(0, endAt);
    t.ok(
      initial.every((e) => e.type === 'ADDED'),
      'only ADDED before it',
    );
    const want = [...stateAt(writes, S).entries()].map(([k, o]) => `${k}@${rvOf(o)}`).sort();
    t.same(initial.map((e) => `default/${e.object.metadata.name}@${rvOf(e.object)}`).sort(), want, `the initial events are the state at ${S}`);
    t.same(validateReliable(evs.slice(endAt + 1), writes, { from: S, to }), [], 'then every change after it');
    t.same(validateBookmarkable(evs.slice(endAt), { kind: 'ConfigMap', apiVersion: 'v1' }), []);
  });

  await t.test('the plain watch started mid-burst: its ADDED events are one consistent snapshot, followed by every later change', async (t) => {
    const w = await midBurst.plain!;
    const evs = await collectThrough(w, to, 15_000);
    w.close();
    const candidates = [...new Set(writes.map((x) => x.rv))].sort((a, b) => a - b);
    const fits = candidates.filter((S) => {
      const st = stateAt(writes, S);
      const head = evs.slice(0, st.size);
      if (!head.every((e) => e.type === 'ADDED')) return false;
      const got = head.map((e) => `default/${e.object.metadata.name}@${rvOf(e.object)}`).sort();
      const want = [...st.entries()].map(([k, o]) => `${k}@${rvOf(o)}`).sort();
      if (JSON.stringify(got) !== JSON.stringify(want)) return false;
      const tail = evs.slice(st.size);
      const exp = expectedEvents(writes, { from: S, to });
      return tail.length === exp.length && tail.every((e, i) => e.type === exp[i]!.type && rvOf(e.object) === exp[i]!.rv);
    });
    t.ok(fits.length > 0, `some revision S explains the stream as state(S) + changes after S (${fits.join(',') || 'none'})`);
  });

  await t.test('the final list equals the state the writes left', async (t) => {
    const r = await s.admin.get(CM);
    const want = [...stateAt(writes, to).entries()].map(([k, o]) => `${k}@${rvOf(o)}`).sort();
    t.same(r.json.items.map((i: any) => `default/${i.metadata.name}@${i.metadata.resourceVersion}`).sort(), want);
  });
});

t.test('read-your-writes with --workers=2: every read right after a write sees it', async (t) => {
  const s = await startServer(['--workers=2']);
  t.teardown(() => s.stop());
  const types: [string, (n: string) => Record<string, unknown>][] = [
    [CM, (n) => ({ metadata: { name: n } })],
    ['/apis/storage.svc.io/v1/csidrivers', (n) => ({ metadata: { name: n }, spec: {} })],
    ['/apis/coordination.svc.io/v1/namespaces/default/leases', (n) => ({ metadata: { name: n }, spec: {} })],
  ];
  const misses: string[] = [];
  let checks = 0;
  // the three types run side by side (their revisions interleave, which reads must cope with)
  await Promise.all(
    types.map(async ([coll, body]) => {
      for (let i = 0; i < 20; i++) {
        const name = `ryw-${i}`;
        const c = await s.admin.post(coll, body(name));
        const rv = rvOf(c.json);
        const [recent, atRv, notOlder, got] = await Promise.all([
          s.admin.get(coll),
          s.admin.get(`${coll}?resourceVersion=${rv}`),
          s.admin.get(`${coll}?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan&limit=500`),
          s.admin.get(`${coll}/${name}`),
        ]);
        for (const [what, r] of [
          ['Most recent list', recent],
          ['list at rv', atRv],
          ['NotOlderThan list with limit', notOlder],
        ] as const) {
          checks++;
          if (!(r.json?.items ?? []).some((x: any) => x.metadata.name === name && rvOf(x) === rv)) misses.push(`${coll} ${what}: ${name}@${rv} missing (list at ${r.json?.metadata?.resourceVersion})`);
        }
        checks++;
        if (rvOf(got.json) !== rv) misses.push(`${coll} get ${name}: ${got.status}@${rvOf(got.json)}, want ${rv}`);
        const w = await s.admin.stream(`${coll}?watch=1&resourceVersion=${rv - 1}`);
        const e = await w.next(3000);
        w.close();
        checks++;
        if (e?.object?.metadata?.name !== name || rvOf(e.object) !== rv) misses.push(`${coll} watch from ${rv - 1}: first event ${e?.type} ${e?.object?.metadata?.name}@${rvOf(e?.object)}`);
        if (i % 4 === 3) {
          const d = await s.admin.delete(`${coll}/${name}`);
          const after = await s.admin.get(coll);
          checks++;
          if (d.status !== 200 || after.json.items.some((x: any) => x.metadata.name === name)) misses.push(`${coll}: ${name} still listed right after its delete`);
        }
      }
    }),
  );
  t.same(misses, [], `${checks} reads right after writes (list, get, watch; creates and deletes) saw them`);
});
