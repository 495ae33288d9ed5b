/**
 * Watch semantics: resourceVersion unset / "0" (synthetic ADDED events for the current state, then
 * changes) and non-zero (changes after it only); ADDED, MODIFIED and DELETED (the deleted object at
 * the deletion's resourceVersion) for every resource type; `?watch=1` and the deprecated
 * `/api/v1/watch/...` paths (collection and single object); scoping by namespace; framing (newline
 * delimited JSON `{"type","object"}` with chunked transfer encoding over HTTP/1.1, a stream over
 * HTTP/2); `timeoutSeconds`; a watcher that does not read is closed, not buffered without bound.
 */
import { request as httpsRequest, Agent } from 'node:https';
import { constants as h2 } from 'node:http2';
import t from 'tap';
import type { WatchEvent } from '../helpers/client.js';
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
const names = (evs: WatchEvent[]): string[] => evs.map((e) => `${e.type} ${e.object?.metadata?.name}`);
const currentRv = async (s: TestServer, coll = CM): Promise<number> => Number((await s.admin.get(coll)).json.metadata.resourceVersion);

t.test('watch start semantics', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const log = new WriteLog(s.admin);
  const a = await log.create(CM, { metadata: { name: 'a' }, data: { v: '1' } });
  const b = await log.create(CM, { metadata: { name: 'b' }, data: { v: '1' } });
  await log.create('/api/v1/namespaces/default/secrets', { metadata: { name: 'not-a-configmap' } });
  const start = log.lastRv;

  await t.test('resourceVersion=non-zero -> only changes after it, no synthetic events', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);
    t.equal(w.status, 200);
    t.equal(await w.next(400), undefined, 'no synthetic ADDED events');
    const a2 = await log.update(`${CM}/a`, { ...a, data: { v: '2' } });
    const e = await w.next(3000);
    t.equal(e?.type, 'MODIFIED');
    t.equal(rvOf(e?.object), rvOf(a2));
    t.equal(e?.object.data.v, '2');
    w.close();
  });

  await t.test('resourceVersion=non-zero in the past -> the changes since, in order', async (t) => {
    const from = rvOf(a);
    const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
    const evs = await collectThrough(w, log.lastRv, 3000);
    w.close();
    t.same(names(evs), ['ADDED b', 'MODIFIED a'], 'b was created and a modified after a was created (the secret is not a configmap)');
    t.same(validateReliable(evs, log.writes.filter((x) => x.key.startsWith('default/') && !x.key.endsWith('not-a-configmap')), { from, to: log.lastRv }), []);
  });

  for (const [label, query] of [
    ['resourceVersion unset -> consistent state as synthetic ADDED events, then changes', ''],
    ['resourceVersion=0 -> state at any version as synthetic ADDED events, then changes', '&resourceVersion=0'],
  ] as const) {
    await t.test(label, async (t) => {
      const w = await s.admin.stream(`${CM}?watch=1${query}`);
      t.equal(w.status, 200);
      t.match(String(w.headers['content-type']), /^application\/json/);
      const initial = await w.take(2, 3000);
      t.same(names(initial).sort(), ['ADDED a', 'ADDED b'], 'one ADDED per existing object');
      t.same(
        initial.map((e) => rvOf(e.object)).sort((x, y) => x - y),
        [log.writes.filter((x) => x.key === 'default/a').at(-1)!.rv, rvOf(b)].sort((x, y) => x - y),
        'the synthetic events carry each object’s own resourceVersion',
      );
      t.equal(await w.next(300), undefined, 'nothing else before a change');
      const c = await s.admin.post(CM, { metadata: { name: `c${query.length}` } });
      const e = await w.next(3000);
      t.equal(e?.type, 'ADDED');
      t.equal(rvOf(e?.object), rvOf(c.json));
      await s.admin.delete(`${CM}/c${query.length}`);
      await w.next(3000);
      w.close();
    });
  }
});

t.test('ADDED, MODIFIED, DELETED for every resource type (DELETED: the last state at the deletion’s resourceVersion)', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const types: [string, string, (n: string) => Record<string, unknown>][] = [
    ['configmaps', CM, (n) => ({ metadata: { name: n }, data: { k: 'v' } })],
    ['secrets', '/api/v1/namespaces/default/secrets', (n) => ({ metadata: { name: n }, data: { k: 'dg==' } })],
    ['serviceaccounts', '/api/v1/namespaces/default/serviceaccounts', (n) => ({ metadata: { name: n } })],
    [
      'events',
      '/api/v1/namespaces/default/events',
      (n) => ({ metadata: { name: n }, involvedObject: { kind: 'Pod', namespace: 'default', name: 'p' }, reason: 'Started', message: 'm', type: 'Normal' }),
    ],
    ['csidrivers', '/apis/storage.svc.io/v1/csidrivers', (n) => ({ metadata: { name: n }, spec: {} })],
    ['leases', '/apis/coordination.svc.io/v1/namespaces/default/leases', (n) => ({ metadata: { name: n }, spec: {} })],
  ];
  for (const [plural, coll, body] of types) {
    await t.test(plural, async (t) => {
      const log = new WriteLog(s.admin);
      const w = await s.admin.stream(`${coll}?watch=1&resourceVersion=${await currentRv(s, coll)}`);
      t.equal(w.status, 200);
      const v1 = await log.create(coll, body(`w-${plural}`));
      const v2 = await log.update(`${coll}/w-${plural}`, { ...v1, metadata: { ...v1.metadata, labels: { step: '2' } } });
      await log.delete(`${coll}/w-${plural}`, v2);
      await log.create(coll, body(`w-${plural}-fence`));
      t.same(resolveDeletions(log.writes), [], 'deletion revision inferred from the acknowledged revisions');
      const evs = await collectThrough(w, log.lastRv, 4000);
      w.close();
      t.same(names(evs), [`ADDED w-${plural}`, `MODIFIED w-${plural}`, `DELETED w-${plural}`, `ADDED w-${plural}-fence`]);
      const del = evs[2];
      t.equal(del?.object.metadata.resourceVersion, String(log.writes[2]!.rv), 'DELETED carries the deletion’s resourceVersion');
      t.equal(del?.object.metadata.labels?.step, '2', 'DELETED carries the last state');
      t.same(validateAtomic(evs, log.writes), []);
      t.same(validateOrdered(evs), []);
      t.same(validateUnique(evs), []);
    });
  }

  await t.test('namespaces (two-phase deletion: MODIFIED to Terminating, then DELETED once finalized)', async (t) => {
    const coll = '/api/v1/namespaces';
    const w = await s.admin.stream(`${coll}?watch=1&resourceVersion=${await currentRv(s, coll)}`);
    const created = (await s.admin.post(coll, { metadata: { name: 'w-ns' } })).json;
    t.equal((await s.admin.delete(`${coll}/w-ns`)).status, 200);
    const evs = await collectUntil(w, (e) => e.some((x) => x.type === 'DELETED' && x.object.metadata.name === 'w-ns'), 10_000);
    w.close();
    const mine = evs.filter((e) => e.object.metadata.name === 'w-ns');
    t.equal(mine[0]?.type, 'ADDED');
    t.equal(rvOf(mine[0]?.object), rvOf(created));
    t.ok(mine.some((e) => e.type === 'MODIFIED' && e.object.metadata.deletionTimestamp), 'MODIFIED with a deletionTimestamp');
    t.equal(mine[mine.length - 1]?.type, 'DELETED', 'DELETED at the end');
    t.same(validateOrdered(evs), []);
    const last = mine[mine.length - 1];
    const prev = mine[mine.length - 2];
    if (last && prev) t.ok(rvOf(last.object) > rvOf(prev.object), 'the DELETED resourceVersion is newer than the last modification');
  });
});

t.test('DELETED of an object that was read before (list, get, watch) still carries the deletion’s resourceVersion', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const log = new WriteLog(s.admin);
  const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${await currentRv(s)}`);
  const x = await log.create(CM, { metadata: { name: 'x' } });
  await s.admin.get(`${CM}/x`);
  await s.admin.get(CM);
  await log.delete(`${CM}/x`, x);
  await log.create(CM, { metadata: { name: 'fence' } });
  t.same(resolveDeletions(log.writes), []);
  const evs = await collectThrough(w, log.lastRv, 3000);
  const del = evs.find((e) => e.type === 'DELETED');
  t.equal(del?.object.metadata.resourceVersion, String(log.writes[1]!.rv), `deletion at ${log.writes[1]!.rv}; the object had ${rvOf(x)}`);
  // a watcher that starts later from the DELETED event's resourceVersion must not see x again
  const again = await s.admin.stream(`${CM}?watch=1&resourceVersion=${del?.object.metadata.resourceVersion}`);
  const evs2 = await collectThrough(again, log.lastRv, 3000);
  again.close();
  w.close();
  t.same(names(evs2), ['ADDED fence'], 'resuming from the DELETED event’s resourceVersion gives only later changes');
});

t.test('paths and scoping', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  await s.admin.post('/api/v1/namespaces', { metadata: { name: 'other' } });
  const OTHER = '/api/v1/namespaces/other/configmaps';
  const rv0 = await currentRv(s);
  const watchers = {
    collection: await s.admin.stream(`${CM}?watch=1&resourceVersion=${rv0}`),
    trueValue: await s.admin.stream(`${CM}?watch=true&resourceVersion=${rv0}`),
    deprecatedCollection: await s.admin.stream(`/api/v1/watch/namespaces/default/configmaps?resourceVersion=${rv0}`),
    deprecatedObject: await s.admin.stream(`/api/v1/watch/namespaces/default/configmaps/one?resourceVersion=${rv0}`),
    byFieldSelector: await s.admin.stream(`${CM}?watch=1&fieldSelector=metadata.name%3Done&resourceVersion=${rv0}`),
    allNamespaces: await s.admin.stream(`/api/v1/configmaps?watch=1&resourceVersion=${rv0}`),
    deprecatedAllNamespaces: await s.admin.stream(`/api/v1/watch/configmaps?resourceVersion=${rv0}`),
    otherNamespace: await s.admin.stream(`${OTHER}?watch=1&resourceVersion=${rv0}`),
    cluster: await s.admin.stream(`/apis/storage.svc.io/v1/watch/csidrivers?resourceVersion=${rv0}`),
  };
  for (const [k, w] of Object.entries(watchers)) t.equal(w.status, 200, `${k}: 200`);
  await s.admin.post(CM, { metadata: { name: 'one' } });
  await s.admin.post(CM, { metadata: { name: 'two' } });
  await s.admin.post(OTHER, { metadata: { name: 'three' } });
  await s.admin.post('/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'four' }, spec: {} });
  const fence = await s.admin.post(CM, { metadata: { name: 'fence' } });
  const last = rvOf(fence.json);
  const got: Record<string, string[]> = {};
  await Promise.all(
    Object.entries(watchers).map(async ([k, w]) => {
      // watchers that select nothing at the fence's revision stop after a quiet second
      got[k] = names(await collectUntil(w, (e) => e.some((x) => rvOf(x.object) >= last), 1000));
      w.close();
    }),
  );
  t.same(got.collection, ['ADDED one', 'ADDED two', 'ADDED fence']);
  t.same(got.trueValue, ['ADDED one', 'ADDED two', 'ADDED fence'], 'watch=true is the same');
  t.same(got.deprecatedCollection, ['ADDED one', 'ADDED two', 'ADDED fence'], 'the deprecated /watch/ path');
  t.same(got.deprecatedObject, ['ADDED one'], 'the deprecated single-object path sees only that object');
  t.same(got.byFieldSelector, ['ADDED one'], 'fieldSelector=metadata.name');
  t.same(got.allNamespaces, ['ADDED one', 'ADDED two', 'ADDED three', 'ADDED fence'], 'all namespaces');
  t.same(got.deprecatedAllNamespaces, ['ADDED one', 'ADDED two', 'ADDED three', 'ADDED fence']);
  t.same(got.otherNamespace, ['ADDED three'], 'another namespace only');
  t.same(got.cluster, ['ADDED four'], 'a cluster-scoped type on the deprecated path');
});

t.test('framing: newline-delimited JSON events, chunked over HTTP/1.1, a stream over HTTP/2', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  await s.admin.post(CM, { metadata: { name: 'pre' } });

  await t.test('HTTP/1.1', async (t) => {
    const w = await s.admin.stream(`${CM}?watch=1`);
    t.equal(w.status, 200);
    t.equal(w.headers['transfer-encoding'], 'chunked', 'Transfer-Encoding: chunked');
    t.equal(w.headers['content-length'], undefined, 'no Content-Length');
    t.match(String(w.headers['content-type']), /^application\/json/);
    await w.next(2000);
    await s.admin.post(CM, { metadata: { name: 'post' } });
    await w.next(2000);
    w.close();
    const lines = w.raw.split('\n');
    t.equal(lines[lines.length - 1], '', 'every event ends with a newline');
    for (const line of lines.slice(0, -1)) {
      const ev = JSON.parse(line);
      t.same(Object.keys(ev), ['type', 'object'], 'an event is {"type","object"}');
      t.equal(ev.object.kind, 'ConfigMap', 'the object is of the watched kind with TypeMeta');
      t.equal(ev.object.apiVersion, 'v1');
    }
  });

  await t.test('HTTP/2', async (t) => {
    const session = s.admin.http2();
    t.teardown(() => session.close());
    const req = session.request({
      [h2.HTTP2_HEADER_PATH]: `${CM}?watch=1`,
      [h2.HTTP2_HEADER_METHOD]: 'GET',
      authorization: `Bearer ${s.admin.o.token}`,
    });
    const headers = await new Promise<Record<string, unknown>>((resolve) => req.on('response', (h) => resolve(h as Record<string, unknown>)));
    t.equal(headers[':status'], 200);
    t.match(String(headers['content-type']), /^application\/json/);
    t.equal(headers['content-length'], undefined, 'a stream, no Content-Length');
    let buf = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (buf += c));
    const waitLines = async (n: number) => {
      for (let i = 0; i < 100 && buf.split('\n').length - 1 < n; i++) await sleep(20);
    };
    await waitLines(2);
    await s.admin.post(CM, { metadata: { name: 'over-h2' } });
    await waitLines(3);
    req.close();
    const evs = buf
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    t.same(
      evs.map((e) => `${e.type} ${e.object.metadata.name}`),
      ['ADDED post', 'ADDED pre', 'ADDED over-h2'],
      'the initial state and a live event over one HTTP/2 stream',
    );
  });
});

t.test('a watch from a resourceVersion just past the current one waits for it, then streams', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const next = (await currentRv(s)) + 1;
  const pending = s.admin.stream(`${CM}?watch=1&resourceVersion=${next}`);
  await sleep(300);
  const c1 = await s.admin.post(CM, { metadata: { name: 'reaches-it' } });
  const c2 = await s.admin.post(CM, { metadata: { name: 'after-it' } });
  t.equal(rvOf(c1.json), next, 'the first write lands at the requested revision');
  const w = await pending;
  t.equal(w.status, 200);
  const evs = await collectThrough(w, rvOf(c2.json), 4000);
  w.close();
  t.same(names(evs), ['ADDED after-it'], 'only the changes after the requested revision');
});

t.test('timeoutSeconds ends the stream', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const t0 = Date.now();
  const w = await s.admin.stream(`${CM}?watch=1&timeoutSeconds=1`);
  t.equal(w.status, 200);
  t.ok(await w.waitEnd(5000), 'the server ends the stream');
  const took = Date.now() - t0;
  t.ok(took >= 900 && took < 3000, `after about a second (${took} ms)`);
  const evs: WatchEvent[] = [];
  for (let e = await w.next(10); e; e = await w.next(10)) evs.push(e);
  t.same(
    evs.filter((e) => e.type === 'BOOKMARK'),
    [],
    'no BOOKMARK without allowWatchBookmarks',
  );
  t.equal((await s.admin.get(CM)).status, 200);
});

t.test('a watcher that does not read is closed once its unsent bytes pass --watch-buffer-bytes', async (t) => {
  // 1 MiB: far above any burst a reading client sees (writes go 4 at a time, 16 KiB each), far
  // below what a client that never reads piles up (~10 MB, beyond the ~4 MB kernel socket buffers)
  const s = await startServer(['--watch-buffer-bytes=1048576']);
  t.teardown(() => s.stop());
  // a client that stops reading right after the headers
  const agent = new Agent({ ca: s.ca });
  t.teardown(() => agent.destroy());
  const slow = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
    const req = httpsRequest(new URL(`${CM}?watch=1&resourceVersion=${1}`, s.url), { headers: { authorization: `Bearer ${s.admin.o.token}` }, agent }, resolve);
    req.on('error', reject);
    req.end();
  });
  slow.pause();
  let ended = false;
  slow.on('end', () => (ended = true));
  slow.on('close', () => (ended = true));
  slow.on('error', () => (ended = true));
  const good = await s.admin.stream(`${CM}?watch=1&resourceVersion=${await currentRv(s)}`);

  const payload = 'x'.repeat(16 * 1024);
  const N = 600;
  let lastRv = 0;
  for (let i = 0; i < N; i += 4) {
    const batch = await Promise.all(Array.from({ length: 4 }, (_, j) => s.admin.post(CM, { metadata: { name: `big-${i + j}` }, data: { p: payload } })));
    lastRv = Math.max(lastRv, ...batch.map((r) => rvOf(r.json)));
  }
  const goodEvents = await collectThrough(good, lastRv, 20_000);
  t.equal(goodEvents.length, N, 'a reading watcher gets every event');
  good.close();
  // now drain the slow one: it must end (closed by the server) before having received everything
  let received = '';
  slow.setEncoding('utf8');
  slow.on('data', (c: string) => (received += c));
  slow.resume();
  for (let i = 0; i < 100 && !ended; i++) await sleep(50);
  t.ok(ended, 'the server closed the slow watch');
  const count = received.split('\n').filter(Boolean).length;
  t.ok(count < N, `it did not receive every event (${count} of ${N}): the server did not buffer without bound`);
  t.equal((await s.admin.get(`${CM}/big-0`)).status, 200, 'the server keeps serving');
  const after = await s.admin.stream(`${CM}?watch=1&resourceVersion=${lastRv}`);
  await s.admin.post(CM, { metadata: { name: 'after-slow' } });
  t.equal((await after.next(3000))?.object?.metadata?.name, 'after-slow', 'new watches work');
  after.close();
});
