/**
 * Values spelled as upstream's Go code spells them (durations, floats, the order of strings), for
 * logs, audit, metrics and the merge library's messages alike.
 */

/**
 * A duration as Go's time.Duration String writes it, which is how upstream's logs spell one (klog's
 * text format and component-base's JSON logger, zap's StringDurationEncoder, both call it): `0s`;
 * under a microsecond `<n>ns`; under a millisecond `µs` (U+00B5) and under a second `ms`, each with
 * up to 3 or 6 fraction digits and no trailing zeros; from a second on `<h>h<m>m<s>s` with the
 * seconds' fraction to the nanosecond, hours and minutes only once there are any (`1m0s`, `1h0m0s`).
 */

const pow10 = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000];

/** `whole.fraction` of v / 10^prec, the fraction without trailing zeros (none at all when it is 0). */
function scaled(v: number, prec: number): string {
  const unit = pow10[prec]!;
  const whole = Math.floor(v / unit);
  let frac = v - whole * unit;
  if (frac === 0) return String(whole);
  let digits = prec;
  while (frac % 10 === 0) {
    frac /= 10;
    digits--;
  }
  return `${whole}.${String(frac).padStart(digits, '0')}`;
}

/**
 * `ns` nanoseconds (a whole number; a fraction is dropped, as a Go Duration has none) as Go writes
 * them. A bigint takes Go's whole range (int64); a number is exact to 2^53 ns (104 days).
 */
export function goDuration(ns: number | bigint): string {
  let neg: boolean;
  let secs: number;
  let frac: number;
  if (typeof ns === 'bigint') {
    neg = ns < 0n;
    const u = neg ? -ns : ns;
    secs = Number(u / 1_000_000_000n);
    frac = Number(u % 1_000_000_000n);
  } else {
    const u = Math.trunc(Math.abs(ns));
    neg = ns < 0 && u > 0;
    secs = Math.floor(u / 1e9);
    frac = u - secs * 1e9;
  }
  let out: string;
  if (secs === 0) {
    if (frac === 0) return '0s';
    if (frac < 1000) out = `${frac}ns`;
    else if (frac < 1_000_000) out = `${scaled(frac, 3)}µs`;
    else out = `${scaled(frac, 6)}ms`;
  } else {
    out = `${secs % 60}${frac === 0 ? '' : `.${String(frac).padStart(9, '0').replace(/0+$/, '')}`}s`;
    const mins = Math.floor(secs / 60);
    if (mins > 0) {
      out = `${mins % 60}m${out}`;
      const hours = Math.floor(mins / 60);
      if (hours > 0) out = `${hours}h${out}`;
    }
  }
  return neg ? `-${out}` : out;
}

/** A performance.now() interval (milliseconds with their fraction) as Go writes the Duration. */
export const goDurationOfMillis = (ms: number): string => goDuration(Math.round(ms * 1e6));

/** Go's order of strings: bytewise on UTF-8, which is code point order (JavaScript's < compares UTF-16 units). */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // a surrogate stands for a code point above U+FFFF, after every BMP character in UTF-8
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** Keys in Go's map order (bytewise UTF-8, as encoding/json writes a map); keys already so, the usual case, cost one pass. */
export function goKeyOrder(keys: string[]): string[] {
  for (let i = 1; i < keys.length; i++) if (compareUtf8(keys[i - 1]!, keys[i]!) > 0) return keys.sort(compareUtf8);
  return keys;
}

/**
 * Go's strconv.FormatFloat(f, 'g', -1, 64), which fmt's %v and Prometheus's encoders use: the
 * shortest digits that read back as f (JavaScript finds the same ones), in exponent form when the
 * exponent is below -4 or 6 and more (`1e+06`, `1e-05`, the exponent with two digits at least), plain
 * otherwise (`100000`, `0.0001`); `+Inf`, `-Inf`, `NaN`, and `-0` for negative zero.
 */
export function goFloat(f: number): string {
  if (Number.isInteger(f) && f < 1e6 && f > -1e6) return Object.is(f, -0) ? '-0' : String(f);
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : f < 0 ? '-Inf' : 'NaN';
  const e = f.toExponential();
  const at = e.indexOf('e');
  const exp = Number(e.slice(at + 1));
  if (exp >= -4 && exp < 6) return String(f);
  const abs = exp < 0 ? -exp : exp;
  return `${e.slice(0, at)}e${exp < 0 ? '-' : '+'}${abs < 10 ? '0' : ''}${abs}`;
}
