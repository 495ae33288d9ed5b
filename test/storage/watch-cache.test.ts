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

/**
 * The fan-out's timing rules run on a test clock: work "costs" time by advancing it, so a pass's
 * measured length is exactly what the test says, whatever else the machine is doing. Timers are real
 * (a pause of n ms on this clock waits n real ms).
 */
class TestClock {
  ms = 1000;
  readonly now = (): number => this.ms;
  spend(ms: number): void {
    this.ms += ms;
  }
}

function clockedCache(clock: TestClock): WatchCache {
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe, now: clock.now });
  cache.reset([], 0);
  return cache;
}

/** A watcher that records what it gets, pass by pass, and costs `costMs` of the clock per event. */
function slowWatcher(clock: TestClock, costMs: number, behind = false) {
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
      clock.spend(costMs);
      return true;
    },
    close() {},
    nextTick() {
      tick++;
    },
  };
  return w;
}

t.test('a long fan-out pass is followed by a pause of half its length; events recorded meanwhile reach each watcher together, in order', async (t) => {
  const clock = new TestClock();
  const cache = clockedCache(clock);
  const w = slowWatcher(clock, 20);
  cache.addWatcher(w);
  cache.applyPut('/a', new Uint8Array(10), 1);
  t.same(w.passes, [[1]], 'the first event after a quiet spell goes out at once');
  await new Promise((r) => process.nextTick(r));
  t.equal(cache.fanOutPausedUntil, clock.ms + 10, 'a 20 ms pass pauses the fan-out 10 ms');
  w.nextTick();
  cache.applyPut('/b', new Uint8Array(10), 2);
  cache.applyPut('/c', new Uint8Array(10), 3);
  t.same(w.passes, [[1]], 'within the pause, events wait');
  t.equal(cache.revision, 3, 'the state is current meanwhile (reads do not wait for the fan-out)');
  t.equal(cache.watchersRevision, 1, 'a bookmark cannot pass the events still waiting');
  await new Promise((r) => setTimeout(r, 40));
  t.same(w.passes, [[1], [2, 3]], 'after the pause both go out in one pass, in order');
  t.equal(cache.watchersRevision, 3);
});

t.test('the pause is bounded: a pass of 500 ms pauses 50 ms', async (t) => {
  const clock = new TestClock();
  const cache = clockedCache(clock);
  cache.addWatcher(slowWatcher(clock, 500));
  cache.applyPut('/a', new Uint8Array(10), 1);
  await new Promise((r) => process.nextTick(r));
  t.equal(cache.fanOutPausedUntil, clock.ms + 50);
});

// each case: what the code that records an event goes on to do in the same turn (ms of the clock)
const cheapPassCases = [
  { rule: 'cheap fan-out passes never pause: with few watchers every event goes out as it is recorded', recorderWorkMs: 0 },
  { rule: 'what the code that recorded an event does after it (encoding its response, say) is not counted as the fan-out pass\'s cost', recorderWorkMs: 5 },
];
for (const { rule, recorderWorkMs } of cheapPassCases) {
  t.test(rule, async (t) => {
    const clock = new TestClock();
    const cache = clockedCache(clock);
    const w = slowWatcher(clock, 0.5);
    cache.addWatcher(w);
    for (let rev = 1; rev <= 5; rev++) {
      cache.applyPut('/a', new Uint8Array(10), rev);
      t.same(w.passes.at(-1), [rev], `event ${rev} delivered within applyPut`);
      clock.spend(recorderWorkMs);
      await new Promise((r) => process.nextTick(r));
      w.nextTick();
      t.equal(cache.fanOutPausedUntil, 0, 'a pass of 0.5 ms is not followed by a pause');
    }
  });
}

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
  const clock = new TestClock();
  const cache = clockedCache(clock);
  const w = slowWatcher(clock, 20);
  let closed = '';
  w.close = () => void (closed = 'closed');
  cache.addWatcher(w);
  cache.applyPut('/a', new Uint8Array(10), 1);
  await new Promise((r) => process.nextTick(r));
  w.nextTick();
  cache.applyPut('/b', new Uint8Array(10), 2);
  cache.reset([], 2);
  await new Promise((r) => setTimeout(r, 40));
  t.equal(closed, 'closed');
  t.same(w.passes, [[1]], 'the waiting event was not sent to the closed watcher');
});

t.test('a long pass goes on in slices: requests are served between them, every watcher gets the events in order, bookmarks wait for the whole pass', async (t) => {
  const clock = new TestClock();
  const cache = clockedCache(clock);
  // 64 watchers of 1 ms each: a 64 ms pass, past the slice length (the slice is checked every 32 watchers)
  const ws = Array.from({ length: 64 }, () => slowWatcher(clock, 1));
  for (const w of ws) cache.addWatcher(w);
  let servedMidPass = -1;
  setImmediate(() => (servedMidPass = ws.filter((w) => w.passes.length > 0).length));
  cache.applyPut('/a', new Uint8Array(10), 1);
  const handedAtOnce = ws.filter((w) => w.passes.length > 0).length;
  t.equal(handedAtOnce, 32, 'the first slice handed the event to 32 of 64 watchers, then let the loop go on');
  t.equal(cache.watchersRevision, 0, 'a bookmark cannot pass an event not yet handed to every watcher');
  await new Promise((r) => setTimeout(r, 100));
  t.equal(servedMidPass, 32, 'a callback queued during the pass ran between its slices');
  for (const w of ws) t.same(w.passes.flat(), [1]);
  t.equal(cache.watchersRevision, 1);
});

t.test('a pass over watchers whose transport sends after the turn ends after the check phase, so that its pause counts the sending', async (t) => {
  // the watcher's "session" sends in an immediate costing 4 ms; its own onEvent is free
  const run = async (sendsAfterTurn: boolean) => {
    const clock = new TestClock();
    const cache = clockedCache(clock);
    const log: string[] = [];
    cache.addWatcher({
      sendsAfterTurn,
      onEvent(ev) {
        log.push(`hand ${ev.revision} (fan-out paused until ${cache.fanOutPausedUntil})`);
        setImmediate(() => {
          clock.spend(4);
          log.push(`send ${ev.revision}`);
        });
        return true;
      },
      close() {},
    });
    cache.applyPut('/a', new Uint8Array(10), 1);
    cache.applyPut('/b', new Uint8Array(10), 2);
    // both sends done (the pause is a real timer of 2 ms; a busy machine may run it late)
    for (let waited = 0; log.length < 4 && waited < 5000; waited += 5) await new Promise((r) => setTimeout(r, 5));
    return log;
  };
  // the clock starts at 1000: the first send ends at 1004, and its 4 ms make a 2 ms pause
  t.same(await run(true), ['hand 1 (fan-out paused until 0)', 'send 1', 'hand 2 (fan-out paused until 1006)', 'send 2'],
    'the second event waited for the first pass\'s sending and the pause it made');
  t.same(await run(false), ['hand 1 (fan-out paused until 0)', 'hand 2 (fan-out paused until 0)', 'send 1', 'send 2'],
    'a transport that sends within the pass: the cheap pass did not pause and the second event went out at the next tick');
});

t.test('describeGradually finds what every object present is, a slice at a time, and stops when asked', async (t) => {
  const asked = new Set<string>();
  const lazily = (key: string, stored: Uint8Array, revision: number): CachedObject => ({
    key,
    namespace: '',
    name: key,
    revision,
    stored,
    labels: undefined,
    fields: {},
    get unreadable() {
      asked.add(key);
      // each takes a moment: the pass needs several slices
      const until = performance.now() + 0.02;
      while (performance.now() < until);
      return undefined;
    },
  });
  const cache = new WatchCache({ prefix: '/', capacity: 100, maxBytes: 1 << 20, describe: lazily });
  const n = 2000;
  cache.reset(Array.from({ length: n }, (_, i) => ({ key: `/k${i}`, value: Buffer.from('{}'), modRevision: 1 })), 1);
  let turns = 0;
  const counting = setInterval(() => turns++, 0);
  await cache.describeGradually(5, () => false);
  clearInterval(counting);
  t.equal(asked.size, n, 'every object described');
  t.ok(turns > 1, `timers ran ${turns} times meanwhile`);
  asked.clear();
  await cache.describeGradually(5, () => asked.size >= 10);
  t.equal(asked.size, 10, 'a stopped pass goes no further');
});
