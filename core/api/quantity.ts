/**
 * Quantity: upstream's resource.Quantity, the fixed-point numbers of resource lists (`500m`, `1Gi`,
 * `2e3`). Parsing follows upstream's grammar and scanner (sign, digits with an optional fraction,
 * then a decimal SI suffix n u m k M G T P E, a binary one Ki Mi Gi Ti Pi Ei, or a decimal exponent
 * e<int>/E<int>); values are exact (a BigInt scaled by a power of ten), fractions below a nano are
 * rounded away from zero to 1n, binary values are capped at 2^63-1. The printed form is upstream's
 * canonical one: the text as written when it already is canonical, else the mantissa with the largest
 * suffix of the value's format that keeps it whole (1000m -> 1, 1536Mi stays, 0.5 -> 500m).
 *
 * One deliberate difference: a decimal SI value whose exponent goes past E (1000E) is printed with the
 * E suffix and a larger mantissa (1000E) where upstream's printer drops the suffix and so the value.
 */

export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

export const QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
export const QUANTITY_NUMERIC_ERROR = 'unable to parse numeric part of quantity';
export const QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix";

export class QuantityParseError extends Error {}

const DECIMAL_SUFFIXES: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIXES: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_BY_EXPONENT = new Map(Object.entries(DECIMAL_SUFFIXES).map(([k, v]) => [v, k]));
const BINARY_BY_EXPONENT = new Map<number, string>([[0, ''], ...Object.entries(BINARY_SUFFIXES).map(([k, v]) => [v, k] as [number, string])]);
const SUFFIX_CHARS = 'eEinumkKMGTP';
const NANO = -9;
const MAX_BINARY = (1n << 63n) - 1n;
/** Digits an int64 holds for sure (upstream's fast path limit). */
const MAX_INT64_FACTORS = 18;

const pow10 = (n: number): bigint => 10n ** BigInt(n);
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const abs = (v: bigint): bigint => (v < 0n ? -v : v);

interface Scanned {
  positive: boolean;
  num: string;
  denom: string;
  suffix: string;
}

/** upstream's parseQuantityString, scanning the same way (leading zeros dropped, `1.` and `.5` allowed). */
function scan(str: string): Scanned {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') pos++;
  while (pos < end && str[pos] === '0') pos++;
  if (pos >= end) return { positive, num: '0', denom: '', suffix: '' };
  let i = pos;
  while (i < end && isDigit(str[i])) i++;
  let num = str.slice(pos, i);
  pos = i;
  if (pos >= end) return { positive, num, denom: '', suffix: '' };
  if (!num) num = '0';
  let denom = '';
  if (str[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && isDigit(str[i])) i++;
    denom = str.slice(pos, i);
    pos = i;
    if (pos >= end) return { positive, num, denom, suffix: '' };
  }
  const suffixStart = pos;
  i = pos;
  while (i < end && SUFFIX_CHARS.includes(str[i]!)) i++;
  if (i >= end) return { positive, num, denom, suffix: str.slice(suffixStart) };
  pos = i;
  if (str[pos] === '-' || str[pos] === '+') pos++;
  for (i = pos; i < end; i++) if (!isDigit(str[i])) throw new QuantityParseError(QUANTITY_FORMAT_ERROR);
  return { positive, num, denom, suffix: str.slice(suffixStart) };
}

function interpret(suffix: string): { base: 10 | 2; exponent: number; format: QuantityFormat } {
  if (Object.hasOwn(DECIMAL_SUFFIXES, suffix)) return { base: 10, exponent: DECIMAL_SUFFIXES[suffix]!, format: 'DecimalSI' };
  if (Object.hasOwn(BINARY_SUFFIXES, suffix)) return { base: 2, exponent: BINARY_SUFFIXES[suffix]!, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?\d+$/.test(suffix.slice(1))) {
    const e = Number(suffix.slice(1));
    if (Number.isSafeInteger(e) && Math.abs(e) <= 2 ** 31 - 1) return { base: 10, exponent: e, format: 'DecimalExponent' };
  }
  throw new QuantityParseError(QUANTITY_SUFFIX_ERROR);
}

export class Quantity {
  /** The value is `unscaled * 10^scale`. */
  private constructor(
    readonly unscaled: bigint,
    readonly scale: number,
    readonly format: QuantityFormat,
    /** The text as written, kept when it already is canonical (upstream caches it the same way). */
    private cached?: string,
  ) {}

  static zero(format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(0n, 0, format);
  }

  /** An integer count (upstream's NewQuantity(n, DecimalSI)). */
  static fromInt(n: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(BigInt(n), 0, format);
  }

  /** upstream's ParseQuantity; throws QuantityParseError with upstream's messages. */
  static parse(str: string): Quantity {
    if (str.length === 0) throw new QuantityParseError(QUANTITY_FORMAT_ERROR);
    if (str === '0') return new Quantity(0n, 0, 'DecimalSI', '0');
    const { positive, num, denom, suffix } = scan(str);
    const { base, exponent, format } = interpret(suffix);
    let digits = BigInt(num + denom);
    let scale = -denom.length;
    if (base === 10) scale += exponent;
    else digits *= 1n << BigInt(exponent);
    if (!positive) digits = -digits;

    // whether upstream's int64 fast path takes the string as it is (canonical already)
    let keep = false;
    let fmt = format;
    const shifted = num + denom;
    if (format === 'BinarySI') {
      const precision = exponent >= 0 && denom.length === 0 ? 15 - num.length - Math.trunc((exponent * 3) / 10) - 1 : -1;
      keep = precision >= 0 && abs(digits) <= MAX_BINARY && exponent % 10 === 0 && (BigInt(shifted) & 7n) !== 0n;
    } else {
      const precision = MAX_INT64_FACTORS - (num.length + denom.length);
      keep = precision >= 0 && scale >= NANO && abs(digits) <= MAX_BINARY && scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0';
    }
    // fractions below a nano round away from zero
    if (scale < NANO && digits !== 0n) {
      const div = pow10(NANO - scale);
      const q = abs(digits) / div;
      const rem = abs(digits) % div;
      const rounded = rem === 0n ? q : q + 1n;
      digits = digits < 0n ? -rounded : rounded;
      scale = NANO;
    }
    if (format === 'BinarySI') {
      if (compareValue(abs(digits), scale, MAX_BINARY, 0) > 0) {
        digits = digits < 0n ? -MAX_BINARY : MAX_BINARY;
        scale = 0;
      }
      // a binary value between 0 and 1 is shown as decimal
      if (digits !== 0n && compareValue(abs(digits), scale, 1n, 0) < 0) fmt = 'DecimalSI';
    }
    return new Quantity(digits, scale, fmt, keep ? str : undefined);
  }

  /** Parses, or returns undefined for text that is not a quantity. */
  static tryParse(str: string): Quantity | undefined {
    try {
      return Quantity.parse(str);
    } catch {
      return undefined;
    }
  }

  sign(): -1 | 0 | 1 {
    return this.unscaled === 0n ? 0 : this.unscaled < 0n ? -1 : 1;
  }

  isZero(): boolean {
    return this.unscaled === 0n;
  }

  /** -1, 0 or 1 as this value is below, equal to or above `y`. */
  cmp(y: Quantity): -1 | 0 | 1 {
    return compareValue(this.unscaled, this.scale, y.unscaled, y.scale);
  }

  /** The sum; its format is this one's unless this is zero (upstream's Add). */
  add(y: Quantity): Quantity {
    const s = Math.min(this.scale, y.scale);
    const v = this.unscaled * pow10(this.scale - s) + y.unscaled * pow10(y.scale - s);
    return new Quantity(v, s, this.isZero() ? y.format : this.format);
  }

  sub(y: Quantity): Quantity {
    const s = Math.min(this.scale, y.scale);
    const v = this.unscaled * pow10(this.scale - s) - y.unscaled * pow10(y.scale - s);
    return new Quantity(v, s, this.isZero() ? y.format : this.format);
  }

  /** ceil(value * 1000), as upstream's MilliValue. */
  milliValue(): bigint {
    return toScale(this.unscaled, this.scale, -3).ceil;
  }

  /** The value rounded towards zero to an integer (upstream's Value, for values that fit). */
  value(): bigint {
    return toScale(this.unscaled, this.scale, 0).whole;
  }

  /** The canonical text (upstream's String). */
  toString(): string {
    return (this.cached ??= this.canonical());
  }

  toJSON(): string {
    return this.toString();
  }

  private canonical(): string {
    if (this.unscaled === 0n) return '0';
    let format = this.format;
    if (format === 'BinarySI') {
      const inRange = compareValue(this.unscaled, this.scale, -1024n, 0) > 0 && compareValue(this.unscaled, this.scale, 1024n, 0) < 0;
      const { whole, exact } = toScale(this.unscaled, this.scale, 0);
      if (inRange || !exact) format = 'DecimalSI';
      else {
        let amount = whole;
        let exp = 0;
        while (amount % 1024n === 0n && amount !== 0n) {
          amount /= 1024n;
          exp += 10;
        }
        return `${amount}${BINARY_BY_EXPONENT.get(exp) ?? ''}`;
      }
    }
    let amount = this.unscaled;
    let exponent = this.scale;
    while (amount % 10n === 0n) {
      amount /= 10n;
      exponent++;
    }
    const r = ((exponent % 3) + 3) % 3;
    if (r) {
      amount *= pow10(r);
      exponent -= r;
    }
    if (format === 'DecimalExponent') return exponent === 0 ? `${amount}` : `${amount}e${exponent}`;
    if (exponent > 18) {
      amount *= pow10(exponent - 18);
      exponent = 18;
    }
    return `${amount}${DECIMAL_BY_EXPONENT.get(exponent) ?? ''}`;
  }
}

/** The value `unscaled * 10^scale` at `target` scale: rounded towards zero (whole), up (ceil), and whether exact. */
function toScale(unscaled: bigint, scale: number, target: number): { whole: bigint; ceil: bigint; exact: boolean } {
  if (scale >= target) {
    const v = unscaled * pow10(scale - target);
    return { whole: v, ceil: v, exact: true };
  }
  const div = pow10(target - scale);
  const whole = unscaled / div;
  const exact = unscaled % div === 0n;
  const ceil = exact || unscaled < 0n ? whole : whole + 1n;
  return { whole, ceil, exact };
}

function compareValue(a: bigint, as: number, b: bigint, bs: number): -1 | 0 | 1 {
  const s = Math.min(as, bs);
  const x = a * pow10(as - s);
  const y = b * pow10(bs - s);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A ResourceList as objects carry it: resource name -> quantity text. */
export type ResourceList = Record<string, string>;

/** The quantity of one entry (zero when absent or unreadable). */
export function quantityOf(list: Readonly<ResourceList> | undefined, name: string): Quantity {
  const v = list?.[name];
  return (v !== undefined && Quantity.tryParse(v)) || Quantity.zero();
}
