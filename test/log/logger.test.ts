import t from 'tap';
import { Logger } from '../../core/log/logger.js';

/** 07:05:09.123456 on 27 November 2026, in epoch milliseconds (the clock the logger reads). */
const at = Date.UTC(2026, 10, 27, 7, 5, 9, 123) + 0.456;

function capture(format: 'text' | 'json', v = 0): { log: Logger; lines: [string, string][] } {
  const lines: [string, string][] = [];
  return { log: new Logger(format, v, (l, sev) => lines.push([sev, l]), () => at), lines };
}

t.test('text lines carry klog\'s header, the quoted message and key="value" pairs', async (t) => {
  const { log, lines } = capture('text');
  log.info('HTTP', { verb: 'GET', resp: 200, ok: true });
  log.error('failed', new Error('disk full'), { path: '/x' });
  t.match(lines[0]![1], new RegExp(`^I1127 07:05:09\\.123456 +${process.pid} svc-apiserver\\] "HTTP" verb="GET" resp=200 ok=true$`));
  t.match(lines[1]![1], /^E1127 07:05:09\.123456 .* "failed" path="\/x" err="disk full"$/);
  t.same(lines.map((l) => l[0]), ['I', 'E']);
});

t.test('json lines are one object each: ts, caller, msg, v, the pairs; errors carry err and no v', async (t) => {
  const { log, lines } = capture('json', 2);
  log.info('hello', { a: 'b' }, 2);
  log.error('bad', new Error('boom'));
  log.warn('careful');
  const [info, err, warn] = lines.map((l) => JSON.parse(l[1]));
  // component-base's JSON logger: ts is milliseconds since the epoch, a float with the sub-millisecond part
  t.same(info, { ts: at, caller: 'svc-apiserver', msg: 'hello', v: 2, a: 'b' });
  t.same(err, { ts: at, caller: 'svc-apiserver', msg: 'bad', err: 'boom' });
  t.equal(warn.v, 0);
  t.match(lines[0]![1], /^\{"ts":1795763109123\.456,/, 'written as zap writes the float');
});

t.test('a line above the verbosity is not written', async (t) => {
  const { log, lines } = capture('text', 2);
  log.info('shown', undefined, 2);
  log.info('hidden', undefined, 3);
  t.equal(lines.length, 1);
  t.equal(log.enabled(3), false);
  t.equal(new Logger('text', 3).enabled(3), true);
});

t.test("the text header's time is the local time, as klog writes Go's time.Now()", async (t) => {
  const saved = process.env.TZ;
  t.teardown(() => {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  });
  // UTC+05:30 all year (no daylight saving): 07:05:09.123456 UTC on 27 November is 12:35:09.123456 there
  process.env.TZ = 'Asia/Kolkata';
  const { log, lines } = capture('text');
  log.info('local');
  t.match(lines[0]![1], /^I1127 12:35:09\.123456 /);
  // and across midnight: the local date, not UTC's
  const late = Date.UTC(2026, 11, 31, 20, 0, 0, 5) + 0.25;
  const out: string[] = [];
  new Logger('text', 0, (l) => out.push(l), () => late).info('new year');
  t.match(out[0], /^I0101 01:30:00\.005250 /);
});

t.test('a map value is written as Go writes a map: keys sorted, nested maps too, in both formats', async (t) => {
  const value = { zeta: 1, alpha: { y: 'b', x: 'a' }, mid: [{ d: 1, c: 2 }] };
  const text = capture('text');
  text.log.info('m', { m: value, e: new Error('boom') });
  t.match(text.lines[0]![1], / "m" m=\{"alpha":\{"x":"a","y":"b"\},"mid":\[\{"c":2,"d":1\}\],"zeta":1\} e="boom"$/);
  const json = capture('json');
  json.log.info('m', { m: value, e: new Error('boom') });
  t.match(json.lines[0]![1], /,"m":\{"alpha":\{"x":"a","y":"b"\},"mid":\[\{"c":2,"d":1\}\],"zeta":1\},"e":"boom"\}$/);
  t.same(value, { zeta: 1, alpha: { y: 'b', x: 'a' }, mid: [{ d: 1, c: 2 }] }, "the caller's object is left as it was");
  t.same(Object.keys(value), ['zeta', 'alpha', 'mid']);
});
