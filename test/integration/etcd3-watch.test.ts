/**
 * The watch guarantees on etcd, across servers: concurrent writes through two servers sharing etcd
 * reach watches on both in order, once and whole, and a watch resumed on the other server continues
 * the same history; resumptions older than the watch cache's ring are served from etcd's history;
 * and compaction coordinated between the servers makes older revisions 410 Expired on both.
 */
import t from 'tap';
import { startEtcd } from '../helpers/etcd.js';
import { startServer, tempDir } from '../helpers/server.js';
import {
  type ApiLike,
  collectThrough,
  collectUntil,
  rvOf,
  validateAtomic,
  validateOrdered,
  validateReliable,
  validateResumable,
  validateUnique,
  WriteLog,
} from '../helpers/watch-guarantees.js';

const etcd = await startEtcd();
t.teardown(() => etcd.stop());
const CM = '/api/v1/namespaces/default/configmaps';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const etcdFlags = (prefix: string) => ['--storage-backend=etcd3', `--etcd-servers=${etcd.endpoint}`, `--etcd-prefix=${prefix}`];

t.test('concurrent writes through two servers reach watches on both in order, once and whole; a resumed watch continues on the other server', async (t) => {
  const dir = tempDir();
  const a = await startServer(etcdFlags('/watch2'), dir);
  const b = await startServer(etcdFlags('/watch2'), dir);
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });
  const start = rvOf((await a.admin.get(CM)).json);
  const wa = await a.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);
  const wb = await b.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);
  const logs = [new WriteLog(a.admin), new WriteLog(b.admin)];
  await Promise.all(
    logs.map(async (log, i) => {
      const objects: ApiLike[] = [];
      for (let n = 0; n < 5; n++) objects.push(await log.create(CM, { metadata: { name: `o${i}-${n}` }, data: { round: '0' } }));
      for (let round = 1; round <= 4; round++) {
        for (let n = 0; n < 5; n++) objects[n] = await log.update(`${CM}/o${i}-${n}`, { ...objects[n], data: { round: String(round) } });
      }
    }),
  );
  const writes = logs.flatMap((l) => l.writes);
  const last = Math.max(...writes.map((w) => w.rv));
  for (const [name, w] of [['A', wa], ['B', wb]] as const) {
    const evs = await collectThrough(w, last, 10_000);
    t.equal(evs.length, writes.length, `the watch on ${name} got all ${writes.length} writes`);
    t.same(validateOrdered(evs), [], `ordered on ${name}`);
    t.same(validateUnique(evs), [], `unique on ${name}`);
    t.same(validateAtomic(evs, writes), [], `atomic on ${name}`);
    t.same(validateReliable(evs, writes, { from: start, to: last }), [], `reliable on ${name}`);
    if (name === 'A') {
      const from = rvOf(evs[Math.floor(evs.length / 2)]!.object);
      const resumed = await b.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
      const rest = await collectThrough(resumed, last, 10_000);
      resumed.close();
      t.same(validateResumable(evs, from, rest), [], 'a watch resumed on B from a revision seen on A continues the history');
    }
    w.close();
  }
});

t.test('a watch resumed from before the watch cache ring is served from etcd’s history', async (t) => {
  const s = await startServer([...etcdFlags('/ring'), '--watch-cache-size=4']);
  t.teardown(() => s.stop());
  const log = new WriteLog(s.admin);
  let o = await log.create(CM, { metadata: { name: 'ring' }, data: { n: '0' } });
  const from = rvOf(o);
  for (let n = 1; n <= 20; n++) o = await log.update(`${CM}/ring`, { ...o, data: { n: String(n) } });
  const w = await s.admin.stream(`${CM}?watch=1&resourceVersion=${from}`);
  const evs = await collectThrough(w, log.lastRv, 10_000);
  w.close();
  t.same(evs.map((e) => e.object.data.n), Array.from({ length: 20 }, (_, i) => String(i + 1)), 'the 20 updates after it, though the ring holds 4');
  t.same(validateReliable(evs, log.writes, { from, to: log.lastRv }), []);
});

t.test('compaction coordinated between two servers: older revisions are 410 Expired on both', async (t) => {
  const dir = tempDir();
  const flags = [...etcdFlags('/compact'), '--etcd-compaction-interval=1s'];
  const a = await startServer(flags, dir);
  const b = await startServer(flags, dir);
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });
  const first = (await a.admin.post(CM, { metadata: { name: 'c1' } })).json;
  const early = rvOf(first);
  await a.admin.post(CM, { metadata: { name: 'c2' } });
  let expired = false;
  for (let i = 0; i < 100 && !expired; i++) {
    await b.admin.post(CM, { metadata: { generateName: 'tick-' } });
    expired = (await b.admin.get(`${CM}?resourceVersion=${early}&resourceVersionMatch=Exact`)).status === 410;
    if (!expired) await sleep(100);
  }
  t.ok(expired, 'an Exact list at an early revision becomes 410 Expired on B');
  t.equal((await a.admin.get(`${CM}?resourceVersion=${early}&resourceVersionMatch=Exact`)).status, 410, 'and on A');
  const w = await a.admin.stream(`${CM}?watch=1&resourceVersion=${early - 1}`);
  const evs = await collectUntil(w, (e) => e.some((x) => x.type === 'ERROR'), 5000);
  w.close();
  const err = evs.find((e) => e.type === 'ERROR');
  t.equal(err?.object?.code, 410, 'a watch from a compacted revision ends with an ERROR event 410');
  t.equal((await a.admin.get(`${CM}/c1`)).status, 200, 'the current state is all there');
});
