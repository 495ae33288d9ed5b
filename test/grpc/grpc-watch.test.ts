/**
 * Watch over gRPC: each event is one WatchEvent message (type, the object encoded as `accept` says,
 * its content type) and the stream carries what the HTTPS watch carries: initial events and the
 * initial-events-end bookmark of a streaming list, periodic bookmarks, resumption from a
 * resourceVersion, an ERROR event with 410 Expired for a compacted one, timeoutSeconds, watches of a
 * custom resource and of one object, and many watches multiplexed on one connection.
 */
import { status as Code } from '@grpc/grpc-js';
import t from 'tap';
import type { Ref } from '../../core/grpc/client.js';
import { createCrd, crd } from '../helpers/crd.js';
import { GrpcWatch, startGrpcServer } from '../helpers/grpc.js';
import { waitFor } from '../helpers/wait.js';

const CM: Ref = { version: 'v1', resource: 'configmaps', namespace: 'default' };
const CM_PATH = '/api/v1/namespaces/default/configmaps';
const cm = (name: string, v = '1') => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { w: 'yes' } }, data: { v } });
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const brief = (e: { type: string; object: any }) => `${e.type} ${e.object?.metadata?.name ?? ''} ${e.object?.data?.v ?? ''}`.trim();
const INITIAL_END = 'k8s.io/initial-events-end';

t.test('watch over gRPC', async (t) => {
  const s = await startGrpcServer(['--watch-bookmark-interval=300ms']);
  t.teardown(() => s.stop());
  for (const n of ['a', 'b']) await s.g.create(CM, cm(n));

  await t.test('a streaming list: ADDED for each object, then the initial-events-end BOOKMARK, as over HTTPS', async (t) => {
    const options = { sendInitialEvents: 'true', allowWatchBookmarks: 'true', resourceVersionMatch: 'NotOlderThan', labelSelector: 'w=yes' };
    const w = new GrpcWatch(s.g, CM, { options });
    const got = await w.take(3);
    w.cancel();
    const h = await s.admin.stream(`${CM_PATH}?watch=1&${new URLSearchParams(options)}`);
    const want = await h.take(3);
    h.close();
    t.same(got.map(brief), want.map(brief));
    t.same(got.map(brief), ['ADDED a 1', 'ADDED b 1', 'BOOKMARK']);
    t.equal(got[2]!.object.metadata.annotations[INITIAL_END], 'true', 'the bookmark marks the end of the initial events');
    t.equal(got[0]!.contentType, 'application/vnd.svc.protobuf', 'objects come in protobuf by default');
    t.same(got[0]!.object, want[0]!.object, 'the protobuf object decodes to what HTTPS sends as JSON');
  });

  await t.test('live changes arrive as MODIFIED and DELETED, and bookmarks come periodically', async (t) => {
    const start = (await s.g.list(CM)).object as { metadata: { resourceVersion: string } };
    const w = new GrpcWatch(s.g, CM, { options: { resourceVersion: start.metadata.resourceVersion, allowWatchBookmarks: 'true' }, accept: 'application/json' });
    await s.g.patch({ ...CM, name: 'a' }, { data: { v: '2' } }, 'application/merge-patch+json');
    await s.g.delete({ ...CM, name: 'b' });
    await waitFor(() => w.events.filter((e) => e.type !== 'BOOKMARK').length >= 2, 5000);
    await waitFor(() => w.events.some((e) => e.type === 'BOOKMARK'), 5000);
    w.cancel();
    t.same(w.events.filter((e) => e.type !== 'BOOKMARK').map(brief), ['MODIFIED a 2', 'DELETED b 1']);
    const bm = w.events.find((e) => e.type === 'BOOKMARK')!;
    t.ok(Number(bm.object.metadata.resourceVersion) > Number(start.metadata.resourceVersion), 'a periodic bookmark carries a newer resourceVersion');
    t.equal(bm.contentType, 'application/json');
  });

  await t.test('resuming from a resourceVersion gives exactly the later events, as over HTTPS', async (t) => {
    const made = (await s.g.create(CM, cm('c'))).object as { metadata: { resourceVersion: string } };
    const rv = made.metadata.resourceVersion;
    await s.g.create(CM, cm('d'));
    await s.g.patch({ ...CM, name: 'c' }, { data: { v: '3' } }, 'application/merge-patch+json');
    const w = new GrpcWatch(s.g, CM, { options: { resourceVersion: rv } });
    const got = await w.take(2);
    w.cancel();
    const h = await s.admin.stream(`${CM_PATH}?watch=1&resourceVersion=${rv}`);
    const want = await h.take(2);
    h.close();
    t.same(got.map(brief), ['ADDED d 1', 'MODIFIED c 3']);
    t.same(got.map(brief), want.map(brief));
  });

  await t.test('timeoutSeconds ends the stream with OK, and the server closes its watch', async (t) => {
    const w = new GrpcWatch(s.g, CM, { options: { timeoutSeconds: '1' } });
    await waitFor(() => s.server.openWatches > 0, 2000);
    t.ok(await w.waitEnd(5000), 'the stream ended');
    t.equal(w.error, undefined, 'with status OK');
    t.ok(await waitFor(() => s.server.openWatches === 0, 2000), 'no watch left open on the server');
  });

  await t.test('a watch of one object (ref.name) sees only that object', async (t) => {
    const w = new GrpcWatch(s.g, { ...CM, name: 'a' }, { options: { resourceVersion: '0' } });
    const first = await w.take(1);
    await s.g.patch({ ...CM, name: 'c' }, { data: { v: '4' } }, 'application/merge-patch+json');
    await s.g.patch({ ...CM, name: 'a' }, { data: { v: '5' } }, 'application/merge-patch+json');
    const got = await w.take(2);
    w.cancel();
    t.same(first.map(brief), ['ADDED a 2']);
    t.same(got.map(brief), ['ADDED a 2', 'MODIFIED a 5']);
  });

  await t.test('custom resources are watched in JSON (they have no protobuf messages)', async (t) => {
    await createCrd(s.admin, crd());
    const ref: Ref = { group: 'example.com', version: 'v1', resource: 'widgets', namespace: 'default' };
    const w = new GrpcWatch(s.g, ref, { options: { resourceVersion: '0' } });
    await s.g.create(ref, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 2 } });
    const [ev] = await w.take(1);
    w.cancel();
    t.equal(ev?.type, 'ADDED');
    t.equal(ev?.contentType, 'application/json');
    t.equal(ev?.object.spec.replicas, 1, 'defaulted as the schema says');
  });

  await t.test('bad watch options are INVALID_ARGUMENT before the stream starts, as HTTPS answers 400', async (t) => {
    const w = new GrpcWatch(s.g, CM, { options: { sendInitialEvents: 'true' } });
    await w.waitEnd();
    const h = await s.admin.get(`${CM_PATH}?watch=1&sendInitialEvents=true`);
    t.equal(h.status, 400);
    t.equal((w.error as { code?: number }).code, Code.INVALID_ARGUMENT);
    t.equal((w.error as { status?: { message: string } }).status?.message, h.json.message);
  });

  await t.test('a large initial state (past the stream high-water mark) arrives whole, paced by flow control', async (t) => {
    await s.admin.post('/api/v1/namespaces', { metadata: { name: 'big' } });
    const BIG: Ref = { ...CM, namespace: 'big' };
    const payload = 'b'.repeat(2048);
    for (let i = 0; i < 300; i += 30) await Promise.all(Array.from({ length: 30 }, (_, j) => s.g.create(BIG, { ...cm(`big-${i + j}`), data: { payload } })));
    const w = new GrpcWatch(s.g, BIG, { options: { resourceVersion: '0' }, accept: 'application/json' });
    const got = await w.take(300, 15_000);
    w.cancel();
    t.equal(got.length, 300, 'every object of the initial state, about 700 KB');
    t.ok(got.every((e) => e.type === 'ADDED' && e.object.data.payload === payload));
    t.equal(new Set(got.map((e) => e.object.metadata.name)).size, 300, 'each once');
  });

  await t.test('a thousand watches multiplexed on one connection all get the event', async (t) => {
    const watches = Array.from({ length: 1000 }, () => new GrpcWatch(s.g, CM, { options: { resourceVersion: '0', labelSelector: 'many=yes' } }));
    await waitFor(() => s.server.openWatches >= 1000, 15_000);
    await s.g.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'many', labels: { many: 'yes' } } });
    const got = await Promise.all(watches.map((w) => w.take(1, 15_000)));
    for (const w of watches) w.cancel();
    t.equal(got.filter((g) => g[0]?.type === 'ADDED' && g[0].object.metadata.name === 'many').length, 1000);
    t.ok(await waitFor(() => s.server.openWatches === 0, 10_000), 'every cancelled watch is closed on the server');
  });
});

t.test('a watch from a compacted resourceVersion ends with an ERROR event carrying 410 Expired, as over HTTPS', async (t) => {
  const s = await startGrpcServer(['--etcd-compaction-interval=1s']);
  t.teardown(() => s.stop());
  const old = ((await s.g.create(CM, cm('x'))).object as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  await s.g.create(CM, cm('y'));
  const compacted = await waitFor(async () => (await s.admin.get(`${CM_PATH}?resourceVersion=${old}&resourceVersionMatch=Exact`)).status === 410, 8000, 200);
  t.ok(compacted, 'the old revision was compacted');
  const w = new GrpcWatch(s.g, CM, { options: { resourceVersion: old } });
  t.ok(await w.waitEnd(5000), 'the stream ends');
  const h = await s.admin.stream(`${CM_PATH}?watch=1&resourceVersion=${old}`);
  const want = await h.take(1);
  h.close();
  t.equal(w.error, undefined, 'the stream itself ends OK');
  t.same(w.events.map((e) => e.type), ['ERROR']);
  t.equal(w.events[0]!.object.code, 410);
  t.equal(w.events[0]!.object.reason, 'Expired');
  t.same(w.events[0]!.object, want[0]!.object, 'the same Status as the HTTPS ERROR event');
});
