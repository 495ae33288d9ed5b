/**
 * The etcd v3 store against a real etcd: the storage conformance suite, upstream's key layout,
 * compaction coordinated between servers through compact_rev_key, and an unreachable etcd answered
 * as StoreError Unavailable.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Etcd3Store } from '../../core/storage/etcd3/store.js';
import { SharedReads } from '../../core/storage/etcd3/shared-reads.js';
import { Compactor } from '../../core/storage/compactor.js';
import { StoreError, type Store } from '../../core/storage/interface.js';
import { freePort } from '../helpers/server.js';
import { startEtcd } from '../helpers/etcd.js';
import { runStorageConformance } from './conformance.js';

const etcd = await startEtcd();
t.teardown(() => etcd.stop());

const prefixes = new Map<Store, string>();
const open = (prefix: string): Etcd3Store => new Etcd3Store({ endpoints: [etcd.endpoint], prefix });

runStorageConformance(t, {
  async make() {
    const prefix = `/t-${randomBytes(4).toString('hex')}`;
    const s = open(prefix);
    prefixes.set(s, prefix);
    return s;
  },
  async reopen(s) {
    const prefix = prefixes.get(s)!;
    await s.close();
    const again = open(prefix);
    prefixes.set(again, prefix);
    return again;
  },
});

t.test('keys are laid out as upstream lays them out under --etcd-prefix', async (t) => {
  const s = open('/registry');
  t.teardown(() => s.close());
  const cases: [string, string][] = [
    ['/registry/core/configmaps/default/cfg', '/registry/configmaps/default/cfg'],
    ['/registry/core/namespaces/team-a', '/registry/namespaces/team-a'],
    ['/registry/core/services/default/web', '/registry/services/specs/default/web'],
    ['/registry/coordination.svc.io/leases/svc-system/lock', '/registry/leases/svc-system/lock'],
    ['/registry/rbac.authorization.svc.io/clusterroles/admin', '/registry/clusterroles/admin'],
    ['/registry/apiextensions.svc.io/customresourcedefinitions/widgets.example.com', '/registry/apiextensions.svc.io/customresourcedefinitions/widgets.example.com'],
    ['/registry/example.com/widgets/default/w1', '/registry/example.com/widgets/default/w1'],
  ];
  for (const [key, etcdKey] of cases) {
    t.equal(s.keys.toEtcd(key), etcdKey, `${key} is stored at ${etcdKey}`);
    t.equal(s.keys.fromEtcd(etcdKey), key, `${etcdKey} reads back as ${key}`);
  }
  const tag = randomBytes(3).toString('hex');
  const key = `/registry/core/configmaps/ns-${tag}/cfg`;
  await s.create(key, Buffer.from('v'));
  t.equal(await etcd.client.get(`/registry/configmaps/ns-${tag}/cfg`).string(), 'v', 'etcd holds the value at the upstream key');
  const listed = await s.list(`/registry/core/configmaps/ns-${tag}/`);
  t.same(listed.items.map((i) => i.key), [key], 'and lists it under the registry key');
  const other = new Etcd3Store({ endpoints: [etcd.endpoint], prefix: '/other' });
  t.teardown(() => other.close());
  t.equal(await other.get(key), null, 'another --etcd-prefix is another key space');
});

t.test('compaction is coordinated through compact_rev_key: one compaction per round however many servers', async (t) => {
  const a = open(`/c-${randomBytes(3).toString('hex')}`);
  const b = open(`/c-${randomBytes(3).toString('hex')}`);
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const ca = new Compactor(a, 0);
  const cb = new Compactor(b, 0);
  const compactions: number[] = [];
  for (let round = 0; round < 4; round++) {
    await a.create(`/k/${round}`, Buffer.from('x'));
    const got = [await ca.runOnce(), await cb.runOnce()].filter((r) => r > 0);
    t.ok(got.length <= 1, `round ${round}: at most one server compacted (${got.join(',') || 'none'})`);
    compactions.push(...got);
  }
  t.ok(compactions.length >= 2, `compactions happened (${compactions.join(', ')})`);
  t.ok(compactions.every((r, i) => i === 0 || r > compactions[i - 1]!), 'to increasing revisions');
  t.equal(await a.compactedRevision(), compactions.at(-1), 'the record holds the last compacted revision');
  const current = await a.currentRevision();
  t.ok(compactions.at(-1)! < current, 'never to the current revision: one round of history is kept');
});

t.test('an unreachable etcd is StoreError Unavailable naming the endpoints', async (t) => {
  const port = await freePort();
  const s = new Etcd3Store({ endpoints: [`http://127.0.0.1:${port}`], prefix: '/registry', callTimeoutMs: 2000 });
  t.teardown(() => s.close());
  try {
    await s.get('/registry/core/configmaps/default/x');
    t.fail('expected an error');
  } catch (e) {
    t.ok(e instanceof StoreError, 'a StoreError');
    t.equal((e as StoreError).code, 'Unavailable');
    t.match((e as Error).message, `127.0.0.1:${port}`, 'naming the endpoint');
  }
});

t.test('a whole list larger than one range page and than gRPC’s default message size is one snapshot', async (t) => {
  const prefix = `/big-${randomBytes(3).toString('hex')}`;
  const s = open(prefix);
  t.teardown(() => s.close());
  const value = 'v'.repeat(1024);
  const n = 6000;
  for (let i = 0; i < n; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, n - i) }, (_, j) => etcd.client.put(`${prefix}/many/k${String(i + j).padStart(5, '0')}`).value(value)));
  }
  const snapshot = await s.currentRevision();
  await s.create('/many/later', Buffer.from('after the snapshot'));
  const all = await s.list('/many/', { revision: snapshot });
  t.equal(all.items.length, n, `${n} items of 1 KiB (about 6 MiB) in one list`);
  t.equal(all.revision, snapshot, 'read at one revision');
  t.equal(all.items[0]!.key, '/many/k00000');
  t.equal(all.items[n - 1]!.key, `/many/k${String(n - 1).padStart(5, '0')}`, 'in key order, nothing after the snapshot');
  t.equal(all.more, false);
});

t.test('shared reads stay linearizable: every reader sees the writes acknowledged before it asked', async (t) => {
  const s = open(`/shared-${randomBytes(3).toString('hex')}`);
  t.teardown(() => s.close());
  await s.create('/r/counter', Buffer.from('0'));
  const stale: string[] = [];
  await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      for (;;) {
        const kv = (await s.get('/r/counter'))!;
        try {
          const w = await s.update('/r/counter', kv.modRevision, Buffer.from(String(i)));
          // many readers at once: their reads are shared, and each must still see its own write or a later one
          const [seen, current] = await Promise.all([s.get('/r/counter'), s.currentRevision()]);
          if (seen!.modRevision < w.revision) stale.push(`writer ${i} acknowledged at ${w.revision} then read ${seen!.modRevision}`);
          if (current < w.revision) stale.push(`writer ${i} acknowledged at ${w.revision} then saw current revision ${current}`);
          return;
        } catch (e) {
          if (!(e instanceof StoreError) || e.code !== 'Conflict') throw e;
        }
      }
    }),
  );
  t.same(stale, [], 'no reader saw less than its own acknowledged write');
});

t.test('a shared read is only given to callers that arrived before it was sent', async (t) => {
  const shared = new SharedReads();
  const sent: { resolve: (v: number) => void }[] = [];
  const read = () => new Promise<number>((resolve) => sent.push({ resolve }));
  const first = shared.run('k', read);
  const second = shared.run('k', read);
  const third = shared.run('k', read);
  t.equal(sent.length, 1, 'one read in flight');
  sent[0]!.resolve(1);
  t.equal(await first, 1, 'the first caller gets the read it started');
  await new Promise((r) => setImmediate(r));
  t.equal(sent.length, 2, 'the callers that came meanwhile share one read, sent after the first returned');
  sent[1]!.resolve(2);
  t.same([await second, await third], [2, 2], 'and get its answer, not the older one');
  const other = shared.run('other', read);
  t.equal(sent.length, 3, 'another key is another read');
  sent[2]!.resolve(3);
  t.equal(await other, 3);
});
