/**
 * The CBOR writer for answers: a JSON-shaped value (what JSON.parse gives, or an object built in code)
 * as one data item in preferred serialization (shortest heads, maps in the object's key order), with a
 * kind's typed fields written as upstream writes them: []byte fields as byte strings under tag 22
 * (expected base64) and int64 fields as integers however large (see CborShape in cbor.ts).
 *
 * It writes what cbor-x wrote for the same values with `forCbor` applied first, byte for byte (the
 * codec tests compare the two), with three differences that follow JSON and upstream: an `undefined`
 * property is left out and an `undefined` array element is null (cbor-x wrote the simple value
 * `undefined`, which upstream's decoder refuses), and a lone UTF-16 surrogate becomes U+FFFD in every
 * string (cbor-x did that only past 63 characters and wrote invalid UTF-8 below).
 *
 * Why not cbor-x: a list answer encodes each item separately (the item's bytes are memoized), and for
 * values this simple cbor-x's generic dispatch and per-call setup were a quarter of the time; the
 * typed fields also needed a copy of the value (forCbor) before cbor-x could write them.
 *
 * Results are views into 8 KiB slabs that later writes continue after (never over), as cbor-x's are.
 */
import type { CborShape } from './cbor.js';

const SLAB = 8192;
/** Below this much room a new write starts a new slab instead. */
const MIN_ROOM = 2048;

let target: Buffer = Buffer.allocUnsafeSlow(SLAB);
let view = new DataView(target.buffer, target.byteOffset, target.byteLength);
let pos = 0;
/** Where the current write began in `target` (moved along when the write outgrows its slab). */
let start = 0;

/** Makes room for `n` more bytes of the current write, moving it into a larger slab when needed. */
function room(n: number): void {
  if (pos + n <= target.length) return;
  const written = pos - start;
  const next = Buffer.allocUnsafeSlow(Math.max(SLAB, (written + n) * 2));
  target.copy(next, 0, start, pos);
  target = next;
  view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  start = 0;
  pos = written;
}

/** Head of major type `major` (already shifted: 0x00, 0x20, ... 0xe0) with argument n < 2^32. */
function head(major: number, n: number): void {
  if (n < 24) target[pos++] = major | n;
  else if (n < 0x100) {
    target[pos++] = major | 24;
    target[pos++] = n;
  } else if (n < 0x10000) {
    target[pos++] = major | 25;
    target[pos++] = n >> 8;
    target[pos++] = n & 0xff;
  } else {
    target[pos++] = major | 26;
    view.setUint32(pos, n);
    pos += 4;
  }
}

/** Size of the head `head(_, n)` writes. */
const headSize = (n: number): number => (n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 5);

const utf8Write = (Buffer.prototype as unknown as { utf8Write(this: Buffer, s: string, offset: number, length: number): number }).utf8Write;

function writeString(s: string): void {
  const len = s.length;
  room(len * 3 + 5);
  if (len < 64) {
    // short strings are nearly always ASCII: written by hand, falling back at the first other character
    const at = pos;
    const h = headSize(len);
    let p = at + h;
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) return writeUtf8(s);
      target[p++] = c;
    }
    head(0x60, len);
    pos = p;
    return;
  }
  writeUtf8(s);
}

/** A string with non-ASCII text: UTF-8 (lone surrogates as U+FFFD), its head sized to the bytes. */
function writeUtf8(s: string): void {
  const at = pos;
  const guess = headSize(s.length);
  const n = utf8Write.call(target, s, at + guess, target.length - at - guess);
  const h = headSize(n);
  // UTF-8 is at least as long as the UTF-16 length, so the head may only need to grow
  if (h !== guess) target.copyWithin(at + h, at + guess, at + guess + n);
  head(0x60, n);
  pos = at + h + n;
}

function writeNumber(v: number): void {
  room(9);
  if (v >>> 0 === v) head(0x00, v);
  else if (v >> 0 === v) head(0x20, -1 - v);
  else if (v < 0 && v >= -0x100000000 && Math.floor(v) === v) {
    target[pos++] = 0x3a;
    view.setUint32(pos, -1 - v);
    pos += 4;
  } else {
    target[pos++] = 0xfb;
    view.setFloat64(pos, v);
    pos += 8;
  }
}

/** An int64 field: an integer as a CBOR integer whatever its size (a double is written as a double). */
function writeInt64(v: number): void {
  if (!Number.isInteger(v) || (v <= 0xffffffff && v >= -0x100000000)) return writeNumber(v);
  room(9);
  const b = BigInt(v);
  if (b >= 0n) {
    target[pos++] = 0x1b;
    view.setBigUint64(pos, b);
  } else {
    target[pos++] = 0x3b;
    view.setBigUint64(pos, -b - 1n);
  }
  pos += 8;
}

/** A []byte field's base64 text as a byte string under tag 22; text that is not base64 reads as Buffer reads it. */
function writeBase64(s: string): void {
  const bytes = Buffer.from(s, 'base64');
  room(bytes.length + 7);
  target[pos++] = 0xd6;
  head(0x40, bytes.length);
  bytes.copy(target, pos);
  pos += bytes.length;
}

function writeArray(a: readonly unknown[], each: CborShape | undefined): void {
  const n = a.length;
  room(5);
  head(0x80, n);
  for (let i = 0; i < n; i++) {
    const v = a[i];
    if (v === undefined) {
      room(1);
      target[pos++] = 0xf6;
    } else write(v, each);
  }
}

function writeMap(o: Readonly<Record<string, unknown>>, shape: CborShape | undefined): void {
  const keys = Object.keys(o);
  const n = keys.length;
  room(5);
  const at = pos;
  head(0xa0, n);
  const fields = shape !== undefined && typeof shape === 'object' && 'fields' in shape ? shape.fields : undefined;
  const each = shape !== undefined && typeof shape === 'object' && 'each' in shape ? shape.each : undefined;
  let skipped = 0;
  for (let i = 0; i < n; i++) {
    const k = keys[i]!;
    const v = o[k];
    if (v === undefined) {
      skipped++;
      continue;
    }
    writeString(k);
    write(v, fields !== undefined ? fieldShape(fields, k) : each);
  }
  if (skipped) rewriteHead(at, n, n - skipped);
}

/** The typed shape of field `k`; own properties only (a field may be called `constructor`). */
const fieldShape = (fields: Readonly<Record<string, CborShape>>, k: string): CborShape | undefined => (Object.prototype.hasOwnProperty.call(fields, k) ? fields[k] : undefined);

/** A map head written for `was` entries at `at` that holds `now`: rewritten, the entries moved when its size changed. */
function rewriteHead(at: number, was: number, now: number): void {
  const oldSize = headSize(was);
  const newSize = headSize(now);
  if (newSize !== oldSize) {
    target.copyWithin(at + newSize, at + oldSize, pos);
    pos -= oldSize - newSize;
  }
  const end = pos;
  pos = at;
  head(0xa0, now);
  pos = end;
}

function write(v: unknown, shape: CborShape | undefined): void {
  switch (typeof v) {
    case 'string':
      if (shape === 'bytes') return writeBase64(v);
      return writeString(v);
    case 'number':
      if (shape === 'int64') return writeInt64(v);
      return writeNumber(v);
    case 'boolean':
      room(1);
      target[pos++] = v ? 0xf5 : 0xf4;
      return;
    case 'object':
      if (v === null) {
        room(1);
        target[pos++] = 0xf6;
        return;
      }
      if (Array.isArray(v)) return writeArray(v, shape !== undefined && typeof shape === 'object' && 'each' in shape ? shape.each : undefined);
      return writeMap(v as Record<string, unknown>, shape);
    default:
      throw new TypeError(`cbor: a ${typeof v} is not a JSON value`);
  }
}

const SELF_DESCRIBED = [0xd9, 0xd9, 0xf7] as const;

/**
 * `value` as one CBOR data item, behind the self-described tag when `selfDescribed`; `shape` gives the
 * typed fields of the kind it is. The bytes are a view of a shared slab: keep them, never write to them.
 */
export function writeCbor(value: unknown, shape: CborShape | undefined, selfDescribed: boolean): Buffer {
  if (target.length - pos < MIN_ROOM) {
    target = Buffer.allocUnsafeSlow(SLAB);
    view = new DataView(target.buffer, target.byteOffset, target.byteLength);
    pos = 0;
  }
  start = pos;
  try {
    if (selfDescribed) {
      target[pos++] = SELF_DESCRIBED[0];
      target[pos++] = SELF_DESCRIBED[1];
      target[pos++] = SELF_DESCRIBED[2];
    }
    write(value, shape);
  } catch (e) {
    pos = start;
    throw e;
  }
  return target.subarray(start, pos);
}
