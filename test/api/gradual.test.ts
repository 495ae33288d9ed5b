/**
 * gradually(): a pass over many items a slice of the thread at a time, the one way background passes
 * over a kind's objects yield to requests (listers' indexes, the watch cache's describing).
 */
import t from 'tap';
import { gradually } from '../../core/api/gradual.js';

/** A visit that takes a moment, so that a pass of a few thousand needs several slices. */
const busy = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

t.test('every item is visited in order, none in the calling turn, and the event loop runs between slices', async (t) => {
  const items = Array.from({ length: 2000 }, (_, i) => i);
  const seen: number[] = [];
  let turns = 0;
  const counting = setInterval(() => turns++, 0);
  const pass = gradually(items, (i) => {
    busy(0.01);
    seen.push(i);
  }, { sliceMs: 2, failed: () => t.fail('no visit fails') });
  t.equal(seen.length, 0, 'nothing visited before the calling code is done');
  await pass;
  clearInterval(counting);
  t.strictSame(seen, items, 'every item, in order');
  t.ok(turns > 1, `timers ran ${turns} times during the pass`);
});

t.test('stopped() is asked before each item and ends the pass there', async (t) => {
  const seen: number[] = [];
  await gradually([1, 2, 3, 4, 5], (i) => seen.push(i), { stopped: () => seen.length >= 3, failed: () => undefined });
  t.strictSame(seen, [1, 2, 3], 'no item after the stop');
  let visits = 0;
  await gradually([1, 2], () => visits++, { stopped: () => true, failed: () => undefined });
  t.equal(visits, 0, 'a pass stopped before it starts visits nothing');
});

t.test('an item whose visit throws is reported with its error and the pass goes on', async (t) => {
  const seen: string[] = [];
  const failed: [string, string][] = [];
  await gradually(
    ['a', 'bad', 'c'],
    (s) => {
      if (s === 'bad') throw new Error(`cannot visit ${s}`);
      seen.push(s);
    },
    { failed: (s, err) => failed.push([s, err.message]) },
  );
  t.strictSame(failed, [['bad', 'cannot visit bad']], 'the failure reported with its item');
  t.strictSame(seen, ['a', 'c'], 'the items after it visited');
});

t.test('any iterable: a generator is read lazily, a slice at a time', async (t) => {
  let made = 0;
  function* numbers(): Generator<number> {
    for (let i = 0; i < 3; i++) {
      made++;
      yield i;
    }
  }
  const seen: number[] = [];
  const pass = gradually(numbers(), (i) => seen.push(i), { failed: () => undefined });
  t.equal(made, 0, 'nothing read before the first slice');
  await pass;
  t.strictSame(seen, [0, 1, 2], 'every item');
});
