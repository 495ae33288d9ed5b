/**
 * WorkQueue: a key is queued once however often it is added, never handed to two workers at once (an
 * add while it is held runs it again after `done`), failures come back with a delay that doubles per
 * consecutive failure up to the cap, and `forget` starts the count again.
 */
import t from 'tap';
import { WorkQueue } from '../../core/controllers/work-queue.js';

t.test('a key added while queued is queued once, with its latest payload', async (t) => {
  const q = new WorkQueue<number>();
  q.add('a', 1);
  q.add('b', 1);
  q.add('a', 2);
  t.equal(q.length, 2);
  t.same(await q.get(), { key: 'a', item: 2 });
  t.same(await q.get(), { key: 'b', item: 1 });
  t.equal(q.length, 0);
});

t.test('a key added while a worker holds it is handed out again only after done', async (t) => {
  const q = new WorkQueue<string>();
  q.add('a', 'first');
  const held = await q.get();
  t.equal(held?.item, 'first');
  q.add('a', 'second');
  t.equal(q.length, 0, 'not queued while held');
  q.done('a');
  t.equal(q.length, 1, 'queued again after done');
  t.same(await q.get(), { key: 'a', item: 'second' });
  q.done('a');
  t.equal(q.length, 0, 'done without a new add does not requeue');
});

t.test('a waiting worker gets the next key added', async (t) => {
  const q = new WorkQueue<number>();
  const waiting = q.get();
  q.add('x', 7);
  t.same(await waiting, { key: 'x', item: 7 });
});

t.test('failures: the delay doubles per consecutive failure, up to the cap; forget resets', async (t) => {
  const q = new WorkQueue<number>({ baseDelayMs: 1, maxDelayMs: 4 });
  // retry timers do not keep a process alive (unref): this test keeps it alive while it waits
  const alive = setInterval(() => undefined, 1000);
  t.teardown(() => clearInterval(alive));
  const delays: number[] = [];
  for (let i = 0; i < 5; i++) {
    delays.push(q.addRateLimited('k', i));
    const got = await q.get();
    t.same(got, { key: 'k', item: i }, 'the key comes back after its delay');
    q.done('k');
  }
  t.same(delays, [1, 2, 4, 4, 4], 'doubling, capped');
  t.equal(q.failuresOf('k'), 5);
  q.forget('k');
  t.equal(q.failuresOf('k'), 0);
  t.equal(q.addRateLimited('k', 9), 1, 'back to the base delay after forget');
  await q.get();
  q.done('k');
});

t.test('shutDown releases waiting workers and stops taking work', async (t) => {
  const q = new WorkQueue<number>();
  const waiting = q.get();
  q.shutDown();
  t.equal(await waiting, undefined);
  q.add('a', 1);
  t.equal(q.length, 0);
  t.equal(await q.get(), undefined);
});
