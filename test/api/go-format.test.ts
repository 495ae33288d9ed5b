import t from 'tap';
import { compareUtf8, goDuration, goDurationOfMillis } from '../../core/api/go-format.js';

const ns = 1;
const us = 1000 * ns;
const ms = 1000 * us;
const s = 1000 * ms;
const min = 60 * s;
const h = 60 * min;

t.test("goDuration writes Go's own examples as time.Duration's String does (Go's time_test.go durationTests)", async (t) => {
  // each positive one also negated, "-" before it, as Go's test checks
  const cases: [string, number | bigint][] = [
    ['0s', 0],
    ['1ns', 1 * ns],
    ['1.1µs', 1100 * ns],
    ['2.2ms', 2200 * us],
    ['3.3s', 3300 * ms],
    ['4m5s', 4 * min + 5 * s],
    ['4m5.001s', 4 * min + 5001 * ms],
    ['5h6m7.001s', 5 * h + 6 * min + 7001 * ms],
    ['8m0.000000001s', 8 * min + 1 * ns],
    ['2562047h47m16.854775807s', (1n << 63n) - 1n],
    ['-2562047h47m16.854775808s', -(1n << 63n)],
  ];
  for (const [want, d] of cases) {
    t.equal(goDuration(d), want, want);
    if (d > 0) t.equal(goDuration(typeof d === 'bigint' ? -d : -d), `-${want}`, `-${want}`);
    if (typeof d === 'number') t.equal(goDuration(BigInt(d)), want, `${want} from a bigint`);
  }
});

t.test('goDuration: each unit at its edges, as Go writes them', async (t) => {
  const cases: [string, number][] = [
    ['999ns', 999],
    ['1µs', 1 * us],
    ['250µs', 250 * us],
    ['999.999µs', 999_999],
    ['1ms', 1 * ms],
    ['1.234567ms', 1_234_567],
    ['999.999999ms', 999_999_999],
    ['1s', 1 * s],
    ['2.5s', 2500 * ms],
    ['59.999999999s', 60 * s - 1],
    ['1m0s', 1 * min],
    ['1h0m0s', 1 * h],
    ['1h0m0.5s', 1 * h + 500 * ms],
    ['25h0m1s', 25 * h + 1 * s],
  ];
  for (const [want, d] of cases) t.equal(goDuration(d), want, want);
  t.equal(goDuration(1.9), '1ns', 'a fraction of a nanosecond is dropped, as a Duration has none');
  t.equal(goDuration(-0), '0s');
});

t.test('goDurationOfMillis: a performance.now() interval, to the nearest nanosecond', async (t) => {
  t.equal(goDurationOfMillis(1.234567), '1.234567ms');
  t.equal(goDurationOfMillis(0.25), '250µs');
  t.equal(goDurationOfMillis(2500), '2.5s');
  t.equal(goDurationOfMillis(0.0000004), '0s');
});

t.test("compareUtf8 orders strings as Go compares them: by their UTF-8 bytes (code points)", async (t) => {
  const cases: [string, string, number][] = [
    ['a', 'b', -1],
    ['b', 'a', 1],
    ['a', 'a', 0],
    ['a', 'ab', -1],
    ['Z', 'a', -1],
    ['authorization.svc.io/decision', 'authorization.svc.io/reason', -1],
    // U+FF21 (3 bytes of UTF-8) comes before U+1F600 (4 bytes); in UTF-16 units the pair's 0xD83D is lower
    ['\uff21', '\u{1f600}', -1],
    ['\u{1f600}', '\uff21', 1],
    ['\u{1f600}', '\u{1f601}', -1],
    ['\ud7ff', '\u{10000}', -1],
  ];
  for (const [a, b, want] of cases) t.equal(Math.sign(compareUtf8(a, b)), want, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  const utf8Sorted = (xs: string[]) => [...xs].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  const keys = ['b', 'a/\u{1f600}', 'a/\uff21', 'a/z', 'A', 'a', '\u00e9', '\u{10ffff}', '\uffff'];
  t.same([...keys].sort(compareUtf8), utf8Sorted(keys), 'the same order as comparing the UTF-8 bytes');
});
