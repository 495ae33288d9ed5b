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

/** A watcher that records what it gets, pass by pass, and costs `busyMs` per event. */
function slowWatcher(busyMs: number, behind = false) {
  const passes: number[][] = [];
  let lastTick = -1;
  let tick = 0;
  const w = {
    passes,
    behind: () => behind,
    onEvent(ev: { revision: number }): boolean {
      if (lastTick !== tick) passes.push([]);
      lastTick = tick;
      passes[passes.length - 1]!.push(ev.revision);
      const until = performance.now() + busyMs;
      while (performance.now() < until);
      return true;
    },
    close() {},
    nextTick() {
      tick++;
    },
  };
  return w;
}

t.test('a long fan-out pass is followed by a pause; events recorded meanwhile reach each watcher together, in order', async (t) => {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe });
  cache.reset([], 0);
  const w = slowWatcher(20);
  cache.addWatcher(w);
  cache.applyPut('/a', new Uint8Array(10), 1);
  const firstPass = structuredClone(w.passes);
  await new Promise((r) => process.nextTick(r));
  w.nextTick();
  cache.applyPut('/b', new Uint8Array(10), 2);
  cache.applyPut('/c', new Uint8Array(10), 3);
  t.same(w.passes, [[1]], 'within the pause after a 20 ms pass, events wait');
  t.same(firstPass, [[1]], 'the first event after a quiet spell went out at once');
  t.equal(cache.revision, 3, 'the state is current meanwhile (reads do not wait for the fan-out)');
  t.equal(cache.watchersRevision, 1, 'a bookmark cannot pass the events still waiting');
  await new Promise((r) => setTimeout(r, 40));
  t.same(w.passes, [[1], [2, 3]], 'after the pause both go out in one pass, in order');
  t.equal(cache.watchersRevision, 3);
});

t.test('cheap fan-out passes never pause: with few watchers every event goes out as it is recorded', async (t) => {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe });
  cache.reset([], 0);
  const got: number[] = [];
  cache.addWatcher({ onEvent: (ev) => (got.push(ev.revision), true), close() {} });
  const deliveredAtOnce: (number | undefined)[] = [];
  for (let rev = 1; rev <= 5; rev++) {
    cache.applyPut('/a', new Uint8Array(10), rev);
    deliveredAtOnce.push(got.at(-1));
    await new Promise((r) => process.nextTick(r));
  }
  t.same(deliveredAtOnce, [1, 2, 3, 4, 5], 'each event was delivered within applyPut');
});

t.test('what the code that recorded an event does after it is not counted as the fan-out pass\'s cost', async (t) => {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe });
  cache.reset([], 0);
  const got: number[] = [];
  cache.addWatcher({ onEvent: (ev) => (got.push(ev.revision), true), close() {} });
  const deliveredAtOnce: (number | undefined)[] = [];
  for (let rev = 1; rev <= 3; rev++) {
    cache.applyPut('/a', new Uint8Array(10), rev);
    deliveredAtOnce.push(got.at(-1));
    // the writer goes on with its own work (encoding its response, say) in the same turn
    const until = performance.now() + 5;
    while (performance.now() < until);
    await new Promise((r) => process.nextTick(r));
  }
  t.same(deliveredAtOnce, [1, 2, 3], 'no pause followed the cheap passes');
});

t.test('watchers still sending earlier events get a pass\'s events after those that keep up', async (t) => {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe });
  cache.reset([], 0);
  const order: string[] = [];
  cache.addWatcher({ behind: () => true, onEvent: () => (order.push('behind'), true), close() {} });
  cache.addWatcher({ behind: () => false, onEvent: () => (order.push('current'), true), close() {} });
  cache.applyPut('/a', new Uint8Array(10), 1);
  t.same(order, ['current', 'behind']);
});

t.test('a reset drops the events waiting for a pass: the watchers are closed and nothing is sent after', async (t) => {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe });
  cache.reset([], 0);
  const w = slowWatcher(20);
  let closed = '';
  w.close = () => void (closed = 'closed');
  cache.addWatcher(w);
  cache.applyPut('/a', new Uint8Array(10), 1);
  await new Promise((r) => process.nextTick(r));
  w.nextTick();
  cache.applyPut('/b', new Uint8Array(10), 2);
  cache.reset([], 2);
  await new Promise((r) => setTimeout(r, 20));
  t.equal(closed, 'closed');
  t.same(w.passes, [[1]], 'the waiting event was not sent to the closed watcher');
});

t.test('a long pass goes on in slices: requests are served between them, every watcher gets the events in order, bookmarks wait for the whole pass', async (t) => {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe });
  cache.reset([], 0);
  // 64 watchers of 1 ms each: a 64 ms pass, past the slice length
  const ws = Array.from({ length: 64 }, () => slowWatcher(1));
  for (const w of ws) cache.addWatcher(w);
  let servedMidPass = -1;
  setImmediate(() => (servedMidPass = ws.filter((w) => w.passes.length > 0).length));
  cache.applyPut('/a', new Uint8Array(10), 1);
  const handedAtOnce = ws.filter((w) => w.passes.length > 0).length;
  t.ok(handedAtOnce > 0 && handedAtOnce < 64, `the first slice handed the event to ${handedAtOnce} of 64 watchers, then let the loop go on`);
  t.equal(cache.watchersRevision, 0, 'a bookmark cannot pass an event not yet handed to every watcher');
  await new Promise((r) => setTimeout(r, 200));
  t.ok(servedMidPass > 0 && servedMidPass < 64, `a callback queued during the pass ran when ${servedMidPass} of 64 watchers had the event`);
  for (const w of ws) t.same(w.passes.flat(), [1]);
  t.equal(cache.watchersRevision, 1);
});

t.test('a pass over watchers whose transport sends after the turn ends after the check phase, so that its pause counts the sending', async (t) => {
  // the watcher's "session" sends in an immediate costing 4 ms; its own onEvent is cheap
  const delayOfThird = async (sendsAfterTurn: boolean): Promise<number> => {
    const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe });
    cache.reset([], 0);
    const at = new Map<number, number>();
    cache.addWatcher({
      sendsAfterTurn,
      onEvent(ev) {
        at.set(ev.revision, performance.now());
        setImmediate(() => {
          const until = performance.now() + 4;
          while (performance.now() < until);
        });
        return true;
      },
      close() {},
    });
    cache.applyPut('/a', new Uint8Array(10), 1);
    await new Promise((r) => setTimeout(r, 20));
    cache.applyPut('/b', new Uint8Array(10), 2);
    const recorded = performance.now();
    cache.applyPut('/c', new Uint8Array(10), 3);
    await new Promise((r) => setTimeout(r, 30));
    return at.get(3)! - recorded;
  };
  const after = await delayOfThird(true);
  t.ok(after >= 5, `the 4 ms sent after the turn made a pause before the next pass (${after.toFixed(1)} ms)`);
  const within = await delayOfThird(false);
  t.ok(within < 2, `a transport that sends within the pass: the cheap pass did not pause (${within.toFixed(1)} ms)`);
});
