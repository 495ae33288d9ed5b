import t from 'tap';
import { allocate } from '../../core/flowcontrol/controller.js';
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
  const qs = level(1, { queues: 64, handSize: 1, queueLengthLimit: 1000 });
  const running = asExecution(qs.start('seed', one));
  const order: string[] = [];
  const waits: Promise<void>[] = [];
  const enqueue = (flow: string): void => {
    const p = asPending(qs.start(flow, one));
    waits.push(
      p.result.then((e) => {
        order.push(flow);
        (e as Execution).finish();
      }),
    );
  };
  for (let i = 0; i < 20; i++) enqueue('flood');
  enqueue('quiet');
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
  t.equal(qs.seatsInUse, 3, 'the larger of initial and final seats while it runs');
  w.finish();
  t.equal(qs.seatsInUse, 3, 'the final seats are still held just after it finished');
  await new Promise((r) => setTimeout(r, 80));
  t.equal(qs.seatsInUse, 0, 'and come back after the additional latency');
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

t.test('a level with zero seats runs one request at a time, as upstream (a request wider than the limit runs alone)', async (t) => {
  const qs = level(0);
  const a = asExecution(qs.start('f', one));
  const b = asPending(qs.start('g', one));
  a.finish();
  ((await b.result) as Execution).finish();
  t.equal(qs.executing, 0);
});

t.test('an exempt level never queues or refuses, and counts what runs', async (t) => {
  const qs = new QueueSet('exempt', undefined, true, 1000);
  const runs = Array.from({ length: 50 }, () => asExecution(qs.start('f', seats(3))));
  t.equal(qs.executing, 50);
  for (const r of runs) r.finish();
  t.equal(qs.seatsInUse, 0);
});

t.test('allocation of seats among levels: each between its bounds, in proportion to its target', async (t) => {
  const rows: [string, number, { lower: number; upper: number; target: number }[], number[]][] = [
    ['targets fit: proportional', 100, [{ lower: 0, upper: 100, target: 10 }, { lower: 0, upper: 100, target: 30 }], [25, 75]],
    ['lower bounds hold', 100, [{ lower: 60, upper: 100, target: 1 }, { lower: 0, upper: 100, target: 1 }], [60, 40]],
    ['upper bounds hold', 100, [{ lower: 0, upper: 10, target: 50 }, { lower: 0, upper: 100, target: 50 }], [10, 90]],
    ['lower bounds beyond the total', 10, [{ lower: 8, upper: 20, target: 1 }, { lower: 8, upper: 20, target: 1 }], [8, 8]],
  ];
  for (const [name, total, items, want] of rows) {
    const got = allocate(total, items).allocs.map((x) => Math.round(x));
    t.same(got, want, name);
  }
});
