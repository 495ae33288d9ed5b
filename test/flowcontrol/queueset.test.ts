import t from 'tap';
import { allocate } from '../../core/flowcontrol/controller.js';
import { RetryAfter } from '../../core/server/stages/priority-and-fairness.js';
import { Dealer, Execution, flowHash, Pending, QueueSet, type RejectReason, type WorkEstimate } from '../../core/flowcontrol/queueset.js';

const one: WorkEstimate = { initialSeats: 1, finalSeats: 0, additionalLatencyMs: 0 };
const seats = (n: number): WorkEstimate => ({ initialSeats: n, finalSeats: 0, additionalLatencyMs: 0 });

function level(limit: number, queuing = { queues: 8, handSize: 2, queueLengthLimit: 50 }, waitLimitMs = 10_000): QueueSet {
  const qs = new QueueSet('test', queuing, false, waitLimitMs);
  qs.limit = limit;
  return qs;
}

const asExecution = (r: Execution | Pending | RejectReason): Execution => {
  if (!(r instanceof Execution)) throw new Error(`expected to run, got ${r instanceof Pending ? 'a wait' : r}`);
  return r;
};
const asPending = (r: Execution | Pending | RejectReason): Pending => {
  if (!(r instanceof Pending)) throw new Error(`expected to wait, got ${r instanceof Execution ? 'a run' : r}`);
  return r;
};

t.test('shuffle sharding: a hand is handSize distinct queues of the deck, the same for the same flow', async (t) => {
  const d = new Dealer(128, 6);
  for (const key of ['a', 'b', 'system-nodes\0node-1', 'global-default\0alice']) {
    const hand = d.deal(flowHash(key));
    t.equal(hand.length, 6, `${JSON.stringify(key)}: six cards`);
    t.equal(new Set(hand).size, 6, 'all distinct');
    t.ok(hand.every((c) => c >= 0 && c < 128), 'all in the deck');
    t.same(d.deal(flowHash(key)), hand, 'dealt again: the same hand');
  }
  const hands = new Set(Array.from({ length: 200 }, (_, i) => d.deal(flowHash(`user-${i}`)).join(',')));
  t.ok(hands.size > 190, `200 flows get (almost) 200 different hands (${hands.size})`);
});

t.test("a flow's hand as upstream deals it: SHA-256 of schema, zero byte and distinguisher, dealt by the hash's remainders", async (t) => {
  // values from an independent implementation of upstream's hashFlowID and shufflesharding.Dealer
  const rows: [string, string, number, number, bigint, number[]][] = [
    ['global-default', 'alice', 128, 6, 0xf4de3bd42ccdf6b7n, [55, 62, 126, 125, 105, 1]],
    ['system-nodes', 'system:node:n1', 64, 6, 0x7c71ae117bf78d24n, [36, 37, 40, 20, 55, 27]],
    ['leader-election-x', '', 16, 4, 0x6af8a868caccb43fn, [15, 0, 2, 10]],
    ['workload-low', 'system:serviceaccount:team:robot', 128, 6, 0xd101e59548db61b8n, [56, 76, 80, 114, 0, 36]],
  ];
  for (const [fs, distinguisher, deck, hand, hash, cards] of rows) {
    const h = flowHash(`${fs}\0${distinguisher}`);
    t.equal(h, hash, `${fs}/${distinguisher}: hash`);
    t.same(new Dealer(deck, hand).deal(h), cards, `${fs}/${distinguisher}: hand`);
  }
});

t.test('a request runs at once while seats are free; beyond them it waits and runs when seats come back', async (t) => {
  const qs = level(2);
  const a = asExecution(qs.start('f1', one));
  const b = asExecution(qs.start('f2', one));
  t.equal(qs.seatsInUse, 2);
  const c = asPending(qs.start('f3', one));
  t.equal(qs.waitingCount, 1);
  a.finish();
  const ran = await c.result;
  t.ok(ran instanceof Execution, 'the waiting request runs once a seat is free');
  t.equal((ran as Execution).waitedMs >= 0, true);
  a.finish();
  t.equal(qs.seatsInUse, 2, 'finishing twice gives the seat back once');
  b.finish();
  (ran as Execution).finish();
  t.equal(qs.seatsInUse, 0);
  t.equal(qs.executing, 0);
});

t.test('fairness: a flow that floods does not delay another flow beyond its fair turn', async (t) => {
  // a clock that moves only as requests are served (10 ms each): fair queuing by service time, free of this machine's load
  let now = 0;
  const qs = new QueueSet('test', { queues: 64, handSize: 1, queueLengthLimit: 1000 }, false, 1e9, () => now);
  qs.limit = 1;
  const running = asExecution(qs.start('seed', one));
  const order: string[] = [];
  const waits: Promise<void>[] = [];
  const enqueue = (flow: string): void => {
    const p = asPending(qs.start(flow, one));
    waits.push(
      p.result.then((e) => {
        order.push(flow);
        now += 10;
        (e as Execution).finish();
      }),
    );
  };
  for (let i = 0; i < 20; i++) enqueue('flood');
  enqueue('quiet');
  now += 10;
  running.finish();
  await Promise.all(waits);
  t.ok(order.indexOf('quiet') <= 2, `the quiet flow's request runs among the first, not after the flood's 20 (position ${order.indexOf('quiet')})`);
});

t.test('seats: a wide request waits for its seats, and runs alone when wider than the limit', async (t) => {
  const qs = level(4);
  const a = asExecution(qs.start('f1', seats(3)));
  const wide = asPending(qs.start('f2', seats(2)));
  t.equal(qs.seatsInUse, 3, 'the 2-seat request does not fit in the 1 seat left');
  a.finish();
  const w = (await wide.result) as Execution;
  t.equal(qs.seatsInUse, 2);
  w.finish();
  const huge = asExecution(qs.start('f3', seats(9)));
  t.equal(qs.seatsInUse, 9, 'nothing runs: a request wider than the limit runs alone');
  t.ok(qs.start('f4', one) instanceof Pending, 'and the next waits for it');
  huge.finish();
});

t.test("a write's final seats stay taken for its additional latency after it finished", async (t) => {
  const qs = level(10);
  const w = asExecution(qs.start('f', { initialSeats: 1, finalSeats: 3, additionalLatencyMs: 50 }));
  let released = false;
  w.holder = { released: () => (released = true) };
  t.equal(qs.seatsInUse, 3, 'the larger of initial and final seats while it runs');
  w.finish();
  t.equal(qs.seatsInUse, 3, 'the final seats are still held just after it finished');
  t.equal(qs.executing, 0, 'though the request no longer counts as executing');
  t.notOk(released, 'its release (current_executing_seats) has not come yet');
  await new Promise((r) => setTimeout(r, 80));
  t.equal(qs.seatsInUse, 0, 'and come back after the additional latency');
  t.ok(released, 'then the release is told');
});

t.test('refusals: a full queue, a wait past the limit, a client that left, a level that rejects', async (t) => {
  const qs = level(1, { queues: 1, handSize: 1, queueLengthLimit: 2 }, 100);
  const run = asExecution(qs.start('f', one));
  const w1 = asPending(qs.start('f', one));
  const w2 = asPending(qs.start('f', one));
  t.equal(qs.start('f', one), 'queue-full', 'a third waiter finds the queue full');
  w2.cancel();
  t.equal(await w2.result, 'cancelled', 'a cancelled wait is refused as cancelled');
  t.equal(await w1.result, 'time-out', 'a wait past the limit times out');
  t.equal(qs.waitingCount, 0);
  run.finish();
  const reject = new QueueSet('reject', undefined, false, 1000);
  reject.limit = 1;
  const r1 = asExecution(reject.start('f', one));
  t.equal(reject.start('g', one), 'concurrency-limit', 'a level without queues refuses what it cannot run');
  r1.finish();
  t.ok(reject.start('g', one) instanceof Execution, 'and runs it once the seat is back');
});

t.test('zero seats, as upstream: a level with queues dispatches nothing until it gets seats; a level without queues runs one request at a time', async (t) => {
  const qs = level(0);
  const a = asPending(qs.start('f', one));
  t.equal(qs.executing, 0, 'queued: nothing runs on zero seats');
  qs.limit = 1;
  qs.configure(qs.queuing);
  ((await a.result) as Execution).finish();
  const reject = new QueueSet('reject', undefined, false, 1000);
  const r1 = asExecution(reject.start('f', one));
  t.equal(reject.start('g', one), 'concurrency-limit', 'without queues: one at a time (wider than the limit, alone)');
  r1.finish();
  t.equal(qs.executing + reject.executing, 0);
});

t.test("a full queue refuses only while the level's seats are all taken (upstream's rejectOrEnqueueToBound)", async (t) => {
  const qs = level(2, { queues: 1, handSize: 1, queueLengthLimit: 1 });
  const wide = asExecution(qs.start('f', seats(1)));
  const w = asPending(qs.start('f', seats(2)));
  t.equal(qs.seatsInUse, 1, 'one seat of two taken: the 2-seat request waits');
  const second = qs.start('f', one);
  t.ok(second instanceof Pending, 'the queue is full but a seat is free: enqueued, not refused');
  wide.finish();
  const ran = (await w.result) as Execution;
  t.equal(qs.seatsInUse, 2);
  const third = asPending(second as Pending);
  t.equal(qs.start('f', one), 'queue-full', 'all seats taken and the queue full: refused');
  ran.finish();
  ((await third.result) as Execution).finish();
});

t.test('shuffle sharding picks the queue of the hand with the least work waiting', async (t) => {
  const qs = level(1, { queues: 2, handSize: 2, queueLengthLimit: 50 });
  const run = asExecution(qs.start('a', one));
  const waits = [asPending(qs.start('a', seats(1))), asPending(qs.start('a', seats(1))), asPending(qs.start('a', seats(1)))];
  const byQueue = qs.allQueues.map((q) => q.waiting.length);
  t.same(byQueue.sort(), [1, 2], 'three waiters of one flow spread over both queues of its hand by the work waiting');
  const done = waits.map((p) => p.result.then((e) => (e as Execution).finish()));
  run.finish();
  await Promise.all(done);
});

t.test('R is wound back by half its range when it nears the end of the 64-bit seat-seconds (an epoch advance), and the observer is told', async (t) => {
  let now = 0;
  const qs = new QueueSet('epoch', { queues: 1, handSize: 1, queueLengthLimit: 50 }, false, 1e15, () => now);
  qs.limit = 1;
  const events: boolean[] = [];
  qs.observer = { changed() {}, dispatched() {}, noAccommodation() {}, epochAdvanced: (ok) => events.push(ok) };
  const run = asExecution(qs.start('f', one));
  const w = asPending(qs.start('g', one));
  // one active queue at one seat: R advances a seat-second per second; 1.5e11 s of it passes 3/4 of the range (1.38e11)
  now += 1.5e14;
  run.finish();
  t.same(events, [true], 'one advance, every value moved back consistently');
  t.ok(Math.abs(qs.currentR - (1.5e11 - 18446744073709551615 / 1e8 / 2)) < 1e3, `R went back by half the range (${qs.currentR})`);
  ((await w.result) as Execution).finish();
});

t.test('a request chosen next that does not fit is counted (request_dispatch_no_accommodation_total) and nothing overtakes it', async (t) => {
  const qs = level(3, { queues: 1, handSize: 1, queueLengthLimit: 50 });
  const misses: string[] = [];
  qs.observer = { changed() {}, dispatched() {}, noAccommodation: (fs) => misses.push(fs), epochAdvanced() {} };
  const a = asExecution(qs.start('f', seats(2)));
  const wide = asPending(qs.start('f', seats(2), 'wide-schema'));
  const narrow = asPending(qs.start('f', seats(1), 'narrow-schema'));
  t.ok(misses.length >= 1 && misses.every((m) => m === 'wide-schema'), 'the wide request did not fit, and was counted under its schema');
  t.equal(qs.executing, 1, 'the narrow one behind it waits too');
  a.finish();
  ((await wide.result) as Execution).finish();
  ((await narrow.result) as Execution).finish();
});

t.test('an exempt level never queues or refuses, and counts what runs', async (t) => {
  const qs = new QueueSet('exempt', undefined, true, 1000);
  const runs = Array.from({ length: 50 }, () => asExecution(qs.start('f', seats(3))));
  t.equal(qs.executing, 50);
  for (const r of runs) r.finish();
  t.equal(qs.seatsInUse, 0);
});

t.test('allocation of seats among levels: each between its bounds, in proportion to its target', async (t) => {
  const rows: [string, number, { lower: number; upper: number; target: number }[], number[] | undefined][] = [
    ['targets fit: proportional', 100, [{ lower: 0, upper: 100, target: 10 }, { lower: 0, upper: 100, target: 30 }], [25, 75]],
    ['lower bounds hold', 100, [{ lower: 60, upper: 100, target: 1 }, { lower: 0, upper: 100, target: 1 }], [60, 40]],
    ['upper bounds hold', 100, [{ lower: 0, upper: 10, target: 50 }, { lower: 0, upper: 100, target: 50 }], [10, 90]],
    ['a target of zero counts as 0.001: the bounds decide', 10, [{ lower: 2, upper: 20, target: 0 }, { lower: 0, upper: 20, target: 1 }], [2, 8]],
    ['lower bounds beyond the total: no allocation (upstream keeps the limits as they were)', 10, [{ lower: 8, upper: 20, target: 8 }, { lower: 8, upper: 20, target: 8 }], undefined],
    ['upper bounds short of the total: no allocation', 100, [{ lower: 0, upper: 20, target: 1 }, { lower: 0, upper: 20, target: 1 }], undefined],
  ];
  for (const [name, total, items, want] of rows) {
    const got = allocate(total, items)?.allocs.map((x) => Math.round(x));
    t.same(got, want, name);
  }
});

t.test("Retry-After as upstream's dropped-requests tracker: doubled after 3 x retryAfter refusals in the last retryAfter seconds (at most 32), lowered by one when quieter", async (t) => {
  let now = 0;
  const ra = new RetryAfter(() => now);
  // second, refusals in that second, the Retry-After the last one of them is answered with
  const rows: [number, number, number, string][] = [
    [100, 3, 1, 'first second: 1 (nothing before it to judge)'],
    [101, 1, 2, '3 refusals in the previous second >= 3 x 1: doubled to 2'],
    [102, 6, 2, 'raised at 101, less than 2 s ago: stays 2'],
    [103, 1, 4, '7 refusals in (101, 102] >= 3 x 2, raised 2 s ago: doubled to 4'],
    [104, 1, 4, '11 refusals in the last 4 s: fewer than 12, not fewer than 4: stays'],
    [110, 1, 3, 'nothing in the last 4 s: lowered by one'],
    [111, 1, 2, 'one refusal in the last 3 s, fewer than 3: lowered by one'],
    [112, 1, 2, 'two refusals in the last 2 s: not fewer than 2, stays'],
  ];
  for (const [second, n, want, name] of rows) {
    now = second * 1000 + 100;
    let last = 0;
    for (let i = 0; i < n; i++) last = ra.drop('pl');
    t.equal(last, want, name);
  }
  t.equal(new RetryAfter(() => 0).drop('other'), 1, 'another level starts at 1');
  // a level refused without pause climbs to the 32 s ceiling and stays there
  const flood = new RetryAfter(() => now);
  let got = 0;
  for (let s = 0; s < 200; s++) {
    now = 5_000_000 + s * 1000;
    for (let i = 0; i < 200; i++) got = flood.drop('pl');
  }
  t.equal(got, 32, 'at most 32 s');
});
