import t from 'tap';
import { type CachedObject, WatchCache } from '../../core/storage/watch-cache.js';

const describe = (key: string, stored: Uint8Array, revision: number): CachedObject => ({ key, namespace: '', name: key.slice(1), revision, stored, labels: undefined, fields: {} });

t.test('the ring is bounded in bytes as well as events: large objects evict old events early', async (t) => {
  const MB = 1024 * 1024;
  const cache = new WatchCache({ prefix: '/', capacity: 10_000, maxBytes: 5 * MB, describe });
  cache.reset([], 0);
  const big = new Uint8Array(600 * 1024);
  for (let rev = 1; rev <= 40; rev++) cache.applyPut(`/o${rev % 3}`, big, rev);
  t.ok(cache.heldBytes <= 5 * MB, `held ${cache.heldBytes} bytes, bound 5 MiB`);
  t.ok(cache.heldBytes > 3 * MB, 'and not needlessly less');
  t.equal(cache.eventsAfter(1), undefined, 'an old resumption is no longer in the ring (the store history serves it)');
  const recent = cache.eventsAfter(38);
  t.same(recent?.map((e) => e.revision), [39, 40], 'recent events are still there');
  t.equal(cache.size, 3, 'the state is whole');
});

t.test('the newest event stays even when it alone passes the bound', async (t) => {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1000, describe });
  cache.reset([], 0);
  cache.applyPut('/a', new Uint8Array(5000), 1);
  t.same(cache.eventsAfter(0)?.map((e) => e.revision), [1]);
  cache.applyPut('/b', new Uint8Array(10), 2);
  t.same(cache.eventsAfter(1)?.map((e) => e.revision), [2], 'the big one went when a newer event came');
});

t.test('frames built for watchers count against the bound', async (t) => {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe });
  cache.reset([], 0);
  cache.applyPut('/a', new Uint8Array(100), 1);
  const before = cache.heldBytes;
  const ev = cache.eventsAfter(0)![0]!;
  cache.frame(ev, { key: 'x', encode: () => new Uint8Array(4000) }, 1);
  t.equal(cache.heldBytes, before + 4000);
  cache.frame(ev, { key: 'x', encode: () => new Uint8Array(4000) }, 1);
  t.equal(cache.heldBytes, before + 4000, 'a memoized frame is counted once');
});
