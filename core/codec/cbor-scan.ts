/**
 * One pass over a CBOR data item before cbor-x reads it. It enforces what upstream's decode mode
 * (apimachinery 1.32, fxamacker/cbor) enforces and cbor-x does not, and rewrites, only when the item
 * needs it, the few forms upstream accepts but cbor-x would read differently, so that cbor-x sees
 * nothing but maps with text keys, arrays, text, numbers, booleans and null.
 *
 * Refused (CborDecodeError, upstream's wording):
 *   well-formedness: truncated items, reserved additional information, a break outside an
 *   indefinite-length item, mixed chunks in an indefinite-length string, bytes after the item;
 *   limits: nesting deeper than 64 (arrays, maps and tags each count), more than 1024 array elements
 *   or map pairs (request bodies);
 *   meaning: duplicate map keys (a byte-string key and a text key with the same bytes are the same key),
 *   keys that are not strings, text that is not UTF-8, NaN and infinities, simple values other than
 *   false/true/null, bignums (tags 2 and 3), integers outside int64, a time tag whose content is not a
 *   time.
 * Accepted and rewritten: tags (dropped, content kept; tag 1 epoch times become RFC 3339 text; a byte
 * string under tag 21/22/23 becomes its base64url/base64/base16 text), byte strings (text of their
 * bytes), indefinite-length strings (one definite string). Indefinite-length arrays and maps are kept:
 * cbor-x reads them.
 */
import { isUtf8 } from 'node:buffer';
import { goQuote } from '../api/validation.js';
import { parseRfc3339 } from './protobuf/wire-times.js';

export interface CborLimits {
  maxDepth: number;
  maxArrayElements: number;
  maxMapPairs: number;
}

/**
 * A body upstream's CBOR decoder refuses. `nested` is set for a problem inside the value of a
 * top-level field other than apiVersion and kind: upstream has read the body's kind by then and words
 * the error for it (`typeMeta`, as the body gave it).
 */
export class CborDecodeError extends Error {
  override readonly name = 'CborDecodeError';
  constructor(
    message: string,
    readonly nested: boolean,
    readonly typeMeta?: { apiVersion: string; kind: string },
  ) {
    super(message);
  }
}

export interface Scanned {
  /** The item as cbor-x should read it: a view of the input (leading self-described tags skipped) or a rewritten copy. */
  item: Uint8Array;
  /** Input bytes the item took (with any leading tags). */
  length: number;
}

const enum Major {
  Unsigned = 0,
  Negative = 1,
  Bytes = 2,
  Text = 3,
  Array = 4,
  Map = 5,
  Tag = 6,
  Simple = 7,
}

/** fxamacker's names of the major types, as its errors say them. */
const typeNames = ['positive integer', 'negative integer', 'byte string', 'UTF-8 text string', 'array', 'map', 'tag', 'primitives'];

const INT64_MAX = (1n << 63n) - 1n;

interface Head {
  major: number;
  info: number;
  /** The argument; exact below 2^53. */
  arg: number;
  /** The argument's high 32 bits (8-byte arguments), for range checks. */
  hi: number;
  lo: number;
}

/** What a scanned item was, for callers that need it (map keys, time tags). */
interface ItemInfo {
  major: number;
  /** For strings (after tags): the raw bytes' identity (latin1) and text. */
  key?: string;
  text?: string;
}

function cborHead(major: number, n: number): Uint8Array {
  const m = major << 5;
  if (n < 24) return Uint8Array.of(m | n);
  if (n < 0x100) return Uint8Array.of(m | 24, n);
  if (n < 0x10000) return Uint8Array.of(m | 25, n >> 8, n & 0xff);
  const b = new Uint8Array(5);
  b[0] = m | 26;
  new DataView(b.buffer).setUint32(1, n);
  return b;
}

function textItem(text: string): Uint8Array {
  const bytes = Buffer.from(text, 'utf8');
  return Buffer.concat([cborHead(Major.Text, bytes.length), bytes]);
}

const pad = (n: number, w: number): string => String(n).padStart(w, '0');

/** Go's time.Unix(sec, nsec).UTC().Format(time.RFC3339Nano); throws past year 9999. */
function rfc3339Nano(sec: number, nsec: number): string {
  const carry = Math.floor(nsec / 1e9);
  sec += carry;
  nsec -= carry * 1e9;
  const d = new Date(sec * 1000);
  const year = d.getUTCFullYear();
  if (!Number.isFinite(d.getTime()) || year < 0 || year > 9999) {
    throw new CborDecodeError('cbor: decoded time cannot be represented in RFC3339 format with sub-second precision: Time.MarshalText: year outside of range [0,9999]', false);
  }
  const frac = nsec ? `.${pad(nsec, 9).replace(/0+$/, '')}` : '';
  return `${pad(year, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}${frac}Z`;
}

const expectedEncodings: Readonly<Record<number, (b: Buffer) => string>> = {
  21: (b) => b.toString('base64url'),
  22: (b) => b.toString('base64'),
  23: (b) => b.toString('hex'),
};

class Scanner {
  private pos = 0;
  private depth = 0;
  /** Rewritten output so far (undefined until something needs rewriting) and how far the input is copied. */
  private out: Uint8Array[] | undefined;
  private copied = 0;
  private itemStart = 0;
  private topDepth = 0;
  private inTopValue = false;
  readonly typeMeta = { apiVersion: '', kind: '' };

  constructor(
    private readonly b: Uint8Array,
    private readonly limits: CborLimits,
    /** Lenient: structure only (to read the kind of a body whose content fails). */
    private readonly lenient = false,
  ) {}

  scan(allowTrailing: boolean): Scanned {
    const b = this.b;
    if (b.length === 0) this.syntax('EOF');
    // leading self-described tags are skipped without a rewrite (the common case)
    while (b.length - this.pos >= 3 && b[this.pos] === 0xd9 && b[this.pos + 1] === 0xd9 && b[this.pos + 2] === 0xf7) {
      this.pos += 3;
      this.enter();
    }
    this.itemStart = this.copied = this.pos;
    this.topDepth = this.depth + 1;
    this.item();
    if (!allowTrailing && this.pos < b.length) this.syntax(`cbor: ${b.length - this.pos} bytes of extraneous data starting at index ${this.pos}`);
    const item = this.out ? Buffer.concat([...this.out, b.subarray(this.copied, this.pos)]) : b.subarray(this.itemStart, this.pos);
    return { item, length: this.pos };
  }

  // ---- failures -------------------------------------------------------------------------------

  private syntax(message: string): never {
    throw new CborDecodeError(message, false);
  }

  /** A well-formed item upstream does not accept (skipped when lenient). */
  private refuse(message: string): void {
    if (this.lenient) return;
    throw new CborDecodeError(message, this.inTopValue);
  }

  private unacceptable(type: string, what: string): void {
    this.refuse(`cbor: data item of cbor type ${type} is not accepted by protocol: ${what}`);
  }

  // ---- reading --------------------------------------------------------------------------------

  private need(n: number): void {
    if (this.b.length - this.pos < n) this.syntax('unexpected EOF');
  }

  private head(): Head {
    this.need(1);
    const b = this.b;
    const first = b[this.pos++]!;
    const major = first >> 5;
    const info = first & 0x1f;
    if (info < 24) return { major, info, arg: info, hi: 0, lo: info };
    if (info === 24) {
      this.need(1);
      const v = b[this.pos++]!;
      return { major, info, arg: v, hi: 0, lo: v };
    }
    if (info === 25 || info === 26 || info === 27) {
      const n = info === 25 ? 2 : info === 26 ? 4 : 8;
      this.need(n);
      const view = new DataView(b.buffer, b.byteOffset + this.pos, n);
      this.pos += n;
      if (n === 2) return { major, info, arg: view.getUint16(0), hi: 0, lo: view.getUint16(0) };
      if (n === 4) return { major, info, arg: view.getUint32(0), hi: 0, lo: view.getUint32(0) };
      const hi = view.getUint32(0);
      const lo = view.getUint32(4);
      return { major, info, arg: hi * 2 ** 32 + lo, hi, lo };
    }
    if (info === 31) return { major, info, arg: 0, hi: 0, lo: 0 };
    return this.syntax(`cbor: invalid additional information ${info} for type ${typeNames[major]}`);
  }

  private enter(): void {
    if (++this.depth > this.limits.maxDepth) this.syntax(`cbor: exceeded max nested level ${this.limits.maxDepth}`);
  }

  private isBreak(): boolean {
    this.need(1);
    if (this.b[this.pos] !== 0xff) return false;
    this.pos++;
    return true;
  }

  // ---- rewriting ------------------------------------------------------------------------------

  /** Replaces input [start, end) by `replacement` (nothing: dropped) in the item cbor-x reads. */
  private replace(start: number, end: number, replacement?: Uint8Array): void {
    if (this.lenient) return;
    this.out ??= [];
    if (start > this.copied) this.out.push(this.b.subarray(this.copied, start));
    if (replacement) this.out.push(replacement);
    this.copied = end;
  }

  // ---- items ----------------------------------------------------------------------------------

  private item(): ItemInfo {
    const start = this.pos;
    const h = this.head();
    switch (h.major) {
      case Major.Unsigned:
      case Major.Negative:
        return this.integer(h);
      case Major.Bytes:
      case Major.Text:
        return this.string(h, start);
      case Major.Array:
        return this.array(h);
      case Major.Map:
        return this.map(h);
      case Major.Tag:
        return this.tag(h, start);
      default:
        return this.simple(h);
    }
  }

  private integer(h: Head): ItemInfo {
    if (h.info === 31) this.syntax(`cbor: invalid additional information 31 for type ${typeNames[h.major]}`);
    if (h.info === 27 && h.hi >= 0x80000000) {
      const v = (BigInt(h.hi) << 32n) | BigInt(h.lo);
      const shown = h.major === Major.Unsigned ? `${v}` : `-${v + 1n}`;
      if (v > INT64_MAX) this.refuse(`cbor: cannot unmarshal ${typeNames[h.major]} into Go value of type int64 (${shown} overflows Go's int64)`);
    }
    return { major: h.major };
  }

  /** A definite or indefinite string; byte strings and indefinite strings are rewritten as text. */
  private string(h: Head, start: number): ItemInfo {
    const raw = this.stringBytes(h);
    const text = raw.toString('utf8');
    if (h.major === Major.Bytes || h.info === 31) this.replace(start, this.pos, textItem(text));
    return { major: h.major, key: raw.toString('latin1'), text };
  }

  /** The bytes of a string whose head was read (indefinite chunks joined); text must be UTF-8. */
  private stringBytes(h: Head): Buffer {
    if (h.info !== 31) {
      if (h.hi > 0 || h.arg > this.b.length - this.pos) this.syntax('unexpected EOF');
      const raw = this.bytes(this.pos, this.pos + h.arg);
      this.pos += h.arg;
      if (h.major === Major.Text && !this.lenient && !isUtf8(raw)) this.refuse('cbor: invalid UTF-8 string');
      return raw;
    }
    const chunks: Buffer[] = [];
    while (!this.isBreak()) {
      const c = this.head();
      if (c.major !== h.major || c.info === 31) this.syntax(`cbor: wrong element type ${typeNames[c.major]} for indefinite-length ${typeNames[h.major]}`);
      chunks.push(this.stringBytes(c));
    }
    return Buffer.concat(chunks);
  }

  private bytes(from: number, to: number): Buffer {
    const b = this.b;
    return Buffer.from(b.buffer, b.byteOffset + from, to - from);
  }

  private array(h: Head): ItemInfo {
    this.enter();
    const max = this.limits.maxArrayElements;
    if (h.info === 31) {
      for (let n = 0; !this.isBreak(); n++) {
        if (n >= max) this.syntax(`cbor: exceeded max number of elements ${max} for CBOR array`);
        this.item();
      }
    } else {
      if (h.arg > max) this.syntax(`cbor: exceeded max number of elements ${max} for CBOR array`);
      if (h.arg > this.b.length - this.pos) this.syntax('unexpected EOF');
      for (let i = 0; i < h.arg; i++) this.item();
    }
    this.depth--;
    return { major: Major.Array };
  }

  private map(h: Head): ItemInfo {
    this.enter();
    const top = this.depth === this.topDepth;
    const max = this.limits.maxMapPairs;
    const indefinite = h.info === 31;
    if (!indefinite) {
      if (h.arg > max) this.syntax(`cbor: exceeded max number of key-value pairs ${max} for CBOR map`);
      if (h.arg > (this.b.length - this.pos) / 2) this.syntax('unexpected EOF');
    }
    const seen = new Set<string>();
    for (let i = 0; indefinite ? !this.isBreak() : i < h.arg; i++) {
      if (indefinite && i >= max) this.syntax(`cbor: exceeded max number of key-value pairs ${max} for CBOR map`);
      const k = this.item();
      if (k.key === undefined) this.refuse(`cbor: cannot unmarshal ${typeNames[k.major]} into Go value of type string`);
      else if (seen.has(k.key)) this.refuse(`cbor: found duplicate map key ${goQuote(k.text ?? '')} at map element index ${i}`);
      else seen.add(k.key);
      const typeField = top && (k.text === 'apiVersion' || k.text === 'kind') ? (k.text as 'apiVersion' | 'kind') : undefined;
      const outer = this.inTopValue;
      if (top && !typeField) this.inTopValue = true;
      const v = this.item();
      this.inTopValue = outer;
      if (typeField && v.text !== undefined) this.typeMeta[typeField] = v.text;
    }
    this.depth--;
    return { major: Major.Map };
  }

  private tag(h: Head, start: number): ItemInfo {
    if (h.info === 31) this.syntax('cbor: invalid additional information 31 for type tag');
    this.enter();
    const number = h.hi > 0 ? Infinity : h.arg;
    const encode = expectedEncodings[number];
    let info: ItemInfo;
    if (number === 2 || number === 3) {
      this.unacceptable('tag', 'bignum');
      info = this.item();
    } else if (number === 1) {
      info = this.epochTime(start);
    } else if (encode && this.pos < this.b.length && this.b[this.pos]! >> 5 === Major.Bytes) {
      // a byte string to be shown in an encoding: that encoding's text
      const text = encode(this.stringBytes(this.head()));
      this.replace(start, this.pos, textItem(text));
      info = { major: Major.Text, key: Buffer.from(text).toString('latin1'), text };
    } else {
      this.replace(start, this.pos); // the tag itself is dropped, its content kept
      info = this.item();
      if (number === 0 && info.major !== Major.Text) this.refuse(`cbor: tag number 0 must be followed by text string, got ${typeNames[info.major]}`);
      else if (number === 0 && info.text !== undefined && !parseRfc3339(info.text)) this.refuse(`cbor: cannot set ${goQuote(info.text)} for time.Time: not an RFC 3339 time`);
    }
    this.depth--;
    return info;
  }

  /** Tag 1: seconds since the epoch (integer or float), written as RFC 3339 text as upstream decodes it. */
  private epochTime(start: number): ItemInfo {
    const contentStart = this.pos;
    const c = this.head();
    let sec: number;
    let nsec = 0;
    if (c.major === Major.Unsigned || c.major === Major.Negative) {
      this.integer(c);
      sec = c.major === Major.Unsigned ? c.arg : -1 - c.arg;
    } else if (c.major === Major.Simple && c.info >= 25 && c.info <= 27) {
      this.pos = contentStart;
      this.item(); // NaN and infinities are refused there
      const f = this.floatAt(contentStart);
      sec = Math.trunc(f);
      nsec = Math.trunc((f - sec) * 1e9);
    } else {
      this.pos = contentStart;
      const other = this.item();
      this.refuse(`cbor: tag number 1 must be followed by integer or floating-point number, got ${typeNames[other.major]}`);
      return other;
    }
    if (this.lenient) return { major: Major.Text };
    const text = rfc3339Nano(sec, nsec);
    this.replace(start, this.pos, textItem(text));
    return { major: Major.Text, key: Buffer.from(text).toString('latin1'), text };
  }

  private floatAt(at: number): number {
    const b = this.b;
    const info = b[at]! & 0x1f;
    const view = new DataView(b.buffer, b.byteOffset + at + 1);
    if (info === 26) return view.getFloat32(0);
    if (info === 27) return view.getFloat64(0);
    return halfToNumber(view.getUint16(0));
  }

  private simple(h: Head): ItemInfo {
    const info = h.info;
    if (info === 20 || info === 21 || info === 22) return { major: Major.Simple };
    if (info === 31) this.syntax('cbor: unexpected "break" code');
    if (info === 24) {
      if (h.arg < 32) this.syntax(`cbor: invalid simple value ${h.arg} for type primitives`);
      this.unacceptable('primitives', `simple value ${h.arg} is not recognized`);
    } else if (info < 24) {
      this.unacceptable('primitives', `simple value ${info} is not recognized`);
    } else {
      const f = info === 25 ? halfToNumber(h.arg) : this.floatAt(this.pos - (info === 26 ? 5 : 9));
      if (Number.isNaN(f)) this.unacceptable('primitives', 'floating-point NaN');
      else if (!Number.isFinite(f)) this.unacceptable('primitives', 'floating-point infinity');
    }
    return { major: Major.Simple };
  }
}

/** An IEEE 754 half-precision float. */
function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  if (exp === 0) return sign * mant * 2 ** -24;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/**
 * Checks one data item against upstream's rules and returns what cbor-x should read. With
 * `allowTrailing`, bytes after the item are left alone (a CBOR sequence).
 */
export function scanCbor(input: Uint8Array, limits: CborLimits, allowTrailing: boolean): Scanned {
  try {
    return new Scanner(input, limits).scan(allowTrailing);
  } catch (e) {
    if (e instanceof CborDecodeError && e.nested && !e.typeMeta) throw new CborDecodeError(e.message, true, peekTypeMeta(input, limits));
    throw e;
  }
}

/** The apiVersion and kind a body names, read structurally (its content failed a check). */
function peekTypeMeta(input: Uint8Array, limits: CborLimits): { apiVersion: string; kind: string } {
  const s = new Scanner(input, limits, true);
  try {
    s.scan(true);
  } catch {
    // what was read before the failure is what there is
  }
  return s.typeMeta;
}
