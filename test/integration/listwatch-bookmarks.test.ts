/**
 * allowWatchBookmarks and the streaming list (sendInitialEvents):
 * - BOOKMARKs only when allowed; objects of the watched kind holding only metadata.resourceVersion;
 *   sent periodically (--watch-bookmark-interval, short here) and just before the server closes the
 *   stream at its timeout; they never go backwards and promise nothing later events contradict;
 * - sendInitialEvents=true requires resourceVersionMatch=NotOlderThan (400 otherwise); it sends the
 *   state as ADDED events, then (bookmarks allowed) one BOOKMARK annotated
 *   svc.io/initial-events-end: "true" at the synced revision, then the normal watch.
 */
import t from 'tap';
import type { WatchEvent } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { collectUntil, rvOf, validateBookmarkable, validateOrdered, validateUnique } from '../helpers/watch-guarantees.js';

const CM = '/api/v1/namespaces/default/configmaps';
const SECRETS = '/api/v1/namespaces/default/secrets';
const KIND = { kind: 'ConfigMap', apiVersion: 'v1' };
const END = 'svc.io/initial-events-end';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const currentRv = async (s: TestServer): Promise<number> => Number((await s.admin.get(CM)).json.metadata.resourceVersion);
const isEnd = (e: WatchEvent): boolean => e.type === 'BOOKMARK' && e.object?.metadata?.annotations?.[END] === 'true';
const isUpstreamEnd = (e: WatchEvent): boolean => e.type === 'BOOKMARK' && e.object?.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true';

t.test('periodic bookmarks', async (t) => {
  const s = await startServer(['--watch-bookmark-interval=300ms']);
  t.teardown(() => s.stop());
  await s.admin.post(CM, { metadata: { name: 'pre' } });

  await t.test('allowWatchBookmarks=true: BOOKMARKs of the watched kind, only metadata.resourceVersion, periodically', async (t) => {
    const from = await currentRv(s);
    const w = await s.admin.stream(`${CM}?watch=1&allowWatchBookmarks=true&resourceVersion=${from}`);
    t.equal(w.status, 200);
    const writes: number[] = [];
    let written = false;
    const writer = (async () => {
      for (let i = 0; i < 6; i++) {
        await sleep(150);
        writes.push(rvOf((await s.admin.post(CM, { metadata: { name: `b${i}` } })).json));
        await s.admin.post(SECRETS, { metadata: { name: `other${i}` } }); // moves the global revision only
      }
      written = true;
    })();
    // read until every write arrived and bookmarks kept coming meanwhile (no fixed time window)
    const evs = await collectUntil(
      w,
      (evs) => written && evs.filter((e) => e.type === 'ADDED').length === writes.length && evs.filter((e) => e.type === 'BOOKMARK').length >= 3,
      30_000,
    );
    await writer;
    w.close();
    const bookmarks = evs.filter((e) => e.type === 'BOOKMARK');
    t.ok(bookmarks.length >= 3, `several BOOKMARKs at a 300 ms interval (${bookmarks.length})`);
    t.same(validateBookmarkable(evs, KIND), [], 'bookmarks never go backwards, promise nothing later events contradict, carry only metadata.resourceVersion');
    t.same(validateOrdered(evs), []);
    t.same(validateUnique(evs), []);
    t.equal(evs.filter((e) => e.type === 'ADDED').length, writes.length, 'every change still arrives');
    for (const b of bookmarks) t.ok(rvOf(b.object) >= from, 'a bookmark is not older than the start of the watch');
    t.notOk(bookmarks.some(isEnd), 'no initial-events-end annotation outside a streaming list');
  });

  await t.test('without allowWatchBookmarks: no BOOKMARK', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${await currentRv(s)}`);
    const evs = await collectUntil(w, () => false, 1000);
    w.close();
    t.same(
      evs.filter((e) => e.type === 'BOOKMARK'),
      [],
    );
  });

  await t.test('allowWatchBookmarks=false: no BOOKMARK', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&allowWatchBookmarks=false&resourceVersion=${await currentRv(s)}`);
    const evs = await collectUntil(w, () => false, 1000);
    w.close();
    t.same(
      evs.filter((e) => e.type === 'BOOKMARK'),
      [],
    );
  });

  await t.test('a bookmark follows the global revision: a client can resume from it and miss nothing', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&allowWatchBookmarks=true&resourceVersion=${await currentRv(s)}`);
    const other = rvOf((await s.admin.post(SECRETS, { metadata: { name: 'moves-rv' } })).json);
    const evs = await collectUntil(w, (e) => e.some((x) => x.type === 'BOOKMARK' && rvOf(x.object) >= other), 2000);
    w.close();
    const b = evs.find((x) => x.type === 'BOOKMARK' && rvOf(x.object) >= other);
    t.ok(b, `a bookmark reaches the revision of a write to another resource (${other})`);
    if (!b) return;
    const created = rvOf((await s.admin.post(CM, { metadata: { name: 'after-bookmark' } })).json);
    const resumed = await s.admin.stream(`${CM}?watch=1&resourceVersion=${b.object.metadata.resourceVersion}`);
    const got = await collectUntil(resumed, (e) => e.some((x) => rvOf(x.object) >= created), 2000);
    resumed.close();
    t.same(
      got.map((e) => `${e.type} ${e.object.metadata.name}`),
      ['ADDED after-bookmark'],
    );
  });
});

t.test('a BOOKMARK just before the server closes the stream at timeoutSeconds', async (t) => {
  const s = await startServer(); // default bookmark interval (60 s): only the pre-close bookmark can arrive
  t.teardown(() => s.stop());
  const w = await s.admin.stream(`${CM}?watch=1&allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion=${await currentRv(s)}`);
  const last = rvOf((await s.admin.post(CM, { metadata: { name: 'x' } })).json);
  t.ok(await w.waitEnd(6000), 'the stream ends at its timeout');
  const evs: WatchEvent[] = [];
  for (let e = await w.next(10); e; e = await w.next(10)) evs.push(e);
  t.same(
    evs.map((e) => e.type),
    ['ADDED', 'BOOKMARK'],
    'the change, then a BOOKMARK, then the end',
  );
  const b = evs[evs.length - 1];
  t.ok(b && rvOf(b.object) >= last, 'the closing bookmark covers every change sent');
  t.same(validateBookmarkable(evs, KIND), []);
});

t.test('streaming list (sendInitialEvents)', async (t) => {
  const s = await startServer(['--watch-bookmark-interval=400ms']);
  t.teardown(() => s.stop());
  const created: Record<string, number> = {};
  for (const [name, team] of [
    ['s1', 'red'],
    ['s2', 'blue'],
    ['s3', 'red'],
  ]) {
    created[name!] = rvOf((await s.admin.post(CM, { metadata: { name, labels: { team: team! } } })).json);
  }

  const bad: [string, string][] = [
    ['sendInitialEvents=true without resourceVersionMatch', 'sendInitialEvents=true'],
    ['sendInitialEvents=true with resourceVersionMatch=Exact', 'sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1'],
    ['sendInitialEvents=false without resourceVersionMatch', 'sendInitialEvents=false'],
    ['resourceVersionMatch=NotOlderThan on a watch without sendInitialEvents', 'resourceVersionMatch=NotOlderThan&resourceVersion=1'],
  ];
  for (const [name, q] of bad) {
    await t.test(`${name} -> 400`, async (t) => {
      const r = await s.admin.get(`${CM}?watch=1&${q}`);
      t.equal(r.status, 400, r.text.slice(0, 200));
      t.equal(r.json?.kind, 'Status');
      t.match(r.json?.message ?? '', /resourceVersionMatch/, 'the message names resourceVersionMatch');
      t.match(r.json?.message ?? '', /sendInitialEvents|NotOlderThan/, 'and what it must be');
    });
  }

  await t.test('resourceVersion unset: ADDED for each object, then the initial-events-end BOOKMARK at a consistent revision, then changes', async (t) => {
    const moved = rvOf((await s.admin.post(SECRETS, { metadata: { name: 'moves-rv-1' } })).json);
    const w = await s.admin.stream(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    t.equal(w.status, 200);
    const initial = await collectUntil(w, (e) => e.some(isEnd), 3000);
    const end = initial[initial.length - 1]!;
    t.ok(isEnd(end), 'a BOOKMARK annotated svc.io/initial-events-end: "true" ends the initial events');
    t.ok(isUpstreamEnd(end), 'and k8s.io/initial-events-end: "true", the key Go reflectors wait for');
    t.same(
      initial
        .slice(0, -1)
        .map((e) => `${e.type} ${e.object.metadata.name}`)
        .sort(),
      ['ADDED s1', 'ADDED s2', 'ADDED s3'],
      'one ADDED per existing object, before the bookmark',
    );
    t.ok(rvOf(end.object) >= moved, `the bookmark is at least the revision when the request started (${rvOf(end.object)} >= ${moved})`);
    t.same(end.object.kind, 'ConfigMap');
    t.same(validateBookmarkable(initial, KIND), [], 'the bookmark holds only resourceVersion and the annotation');
    const c = rvOf((await s.admin.post(CM, { metadata: { name: 's4' } })).json);
    const more = await collectUntil(w, (e) => e.some((x) => x.type === 'ADDED'), 3000);
    w.close();
    const added = more.find((x) => x.type === 'ADDED');
    t.equal(added?.object.metadata.name, 's4', 'then the normal watch');
    t.equal(rvOf(added?.object), c);
    t.notOk(more.some(isEnd), 'the initial-events-end bookmark is sent once');
    t.same(validateBookmarkable([...initial, ...more], KIND), []);
  });

  await t.test('resourceVersion=R: initial state not older than R, bookmark at >= R', async (t) => {
    const R = created.s2!;
    const w = await s.admin.stream(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${R}`);
    t.equal(w.status, 200);
    const initial = await collectUntil(w, (e) => e.some(isEnd), 3000);
    w.close();
    const end = initial[initial.length - 1];
    t.ok(end && isEnd(end), 'ends with the initial-events-end bookmark');
    t.ok(end && rvOf(end.object) >= R, 'at a revision not older than R');
    const names = initial.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata.name);
    t.ok(['s1', 's2', 's3', 's4'].every((n) => names.includes(n)), `the whole state at the bookmark's revision (${names.join(',')})`);
  });

  await t.test('resourceVersion=0: the cached state and the bookmark', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=0`);
    t.equal(w.status, 200);
    const initial = await collectUntil(w, (e) => e.some(isEnd), 3000);
    w.close();
    t.ok(initial.length > 0 && isEnd(initial[initial.length - 1]!));
    t.equal(initial.filter((e) => e.type === 'ADDED').length, 4);
  });

  await t.test('with a label selector: only the selected objects, then the bookmark', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=team%3Dred`);
    const initial = await collectUntil(w, (e) => e.some(isEnd), 3000);
    w.close();
    t.same(
      initial
        .filter((e) => e.type === 'ADDED')
        .map((e) => e.object.metadata.name)
        .sort(),
      ['s1', 's3'],
    );
    t.ok(isEnd(initial[initial.length - 1]!));
  });

  await t.test('sendInitialEvents=true without allowWatchBookmarks: the ADDED events, no bookmark, then changes', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`);
    const initial = await collectUntil(w, (e) => e.length >= 4, 3000);
    t.equal(initial.filter((e) => e.type === 'ADDED').length, 4);
    const extra = await collectUntil(w, () => false, 900); // longer than the bookmark interval
    t.same(
      extra.filter((e) => e.type === 'BOOKMARK'),
      [],
      'no BOOKMARK at all',
    );
    await s.admin.post(CM, { metadata: { name: 's5' } });
    const e = await w.next(3000);
    w.close();
    t.equal(e?.object?.metadata?.name, 's5');
  });

  await t.test('sendInitialEvents=false with NotOlderThan and a resourceVersion: no initial events, the changes after it', async (t) => {
    const R = await currentRv(s);
    const w = await s.admin.stream(`${CM}?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=${R}`);
    t.equal(w.status, 200);
    t.equal(await w.next(400), undefined, 'no initial events');
    await s.admin.post(CM, { metadata: { name: 's6' } });
    const e = await w.next(3000);
    w.close();
    t.equal(e?.type, 'ADDED');
    t.equal(e?.object?.metadata?.name, 's6');
  });

  await t.test('periodic bookmarks after the initial-events-end one carry no annotation and never go backwards', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    const evs = await collectUntil(w, () => false, 1500);
    w.close();
    const bookmarks = evs.filter((e) => e.type === 'BOOKMARK');
    t.equal(bookmarks.filter(isEnd).length, 1, 'exactly one initial-events-end bookmark');
    t.ok(bookmarks.length >= 2, 'periodic bookmarks follow');
    t.same(validateBookmarkable(evs, KIND), []);
  });
});

t.test('BOOKMARKs are objects of the watched kind for every resource type', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const types: [string, string, string][] = [
    ['/api/v1/namespaces', 'Namespace', 'v1'],
    [CM, 'ConfigMap', 'v1'],
    [SECRETS, 'Secret', 'v1'],
    ['/api/v1/namespaces/default/serviceaccounts', 'ServiceAccount', 'v1'],
    ['/api/v1/namespaces/default/events', 'Event', 'v1'],
    ['/apis/storage.svc.io/v1/csidrivers', 'CSIDriver', 'storage.svc.io/v1'],
    ['/apis/coordination.svc.io/v1/namespaces/default/leases', 'Lease', 'coordination.svc.io/v1'],
  ];
  for (const [coll, kind, apiVersion] of types) {
    const w = await s.admin.stream(`${coll}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    const evs = await collectUntil(w, (e) => e.some(isEnd), 3000);
    w.close();
    const end = evs.find(isEnd);
    t.ok(end, `${kind}: an initial-events-end bookmark`);
    t.same(validateBookmarkable(evs, { kind, apiVersion }), [], `${kind}: of kind ${apiVersion}/${kind}, metadata only`);
  }
});
