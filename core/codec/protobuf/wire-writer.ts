/**
 * A protobuf wire writer for the encode hot path: one growable scratch buffer, reused across encodes,
 * with nested messages' lengths back-patched (one byte reserved, the content moved when the length
 * needs more). protobufjs's Writer queues one operation object per value and allocates on finish,
 * which made encoding several times slower than JSON.stringify; its generated encoders stay the
 * reference the tests compare this writer's bytes with.
 */

let scratch = Buffer.allocUnsafe(64 * 1024);

const TWO_32 = 2 ** 32;

export class WireWriter {
  private buf = scratch;
  private pos = 0;

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = scratch = next;
  }

  /** A varint of a non-negative integer below 2^32. */
  uint32(v: number): this {
    this.ensure(5);
    const b = this.buf;
    while (v > 0x7f) {
      b[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[this.pos++] = v;
    return this;
  }

  /** A varint of an integer as a 64-bit two's complement value (int64, uint64, and negative int32). */
  int64(v: number): this {
    if (v >= 0 && v < TWO_32) return this.uint32(v);
    this.ensure(10);
    let hi: number;
    let lo: number;
    if (v >= 0) {
      hi = Math.floor(v / TWO_32) >>> 0;
      lo = v >>> 0;
    } else {
      const u = BigInt.asUintN(64, BigInt(v));
      hi = Number(u >> 32n);
      lo = Number(u & 0xffffffffn);
    }
    const b = this.buf;
    while (hi > 0 || lo > 0x7f) {
      b[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    b[this.pos++] = lo;
    return this;
  }

  uint64(v: number): this {
    return this.int64(v);
  }

  int32(v: number): this {
    return v >= 0 ? this.uint32(v) : this.int64(v);
  }

  sint32(v: number): this {
    return this.uint32(((v << 1) ^ (v >> 31)) >>> 0);
  }

  sint64(v: number): this {
    return this.int64(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  bool(v: boolean): this {
    this.ensure(1);
    this.buf[this.pos++] = v ? 1 : 0;
    return this;
  }

  fixed32(v: number): this {
    this.ensure(4);
    this.pos = this.buf.writeUInt32LE(v >>> 0, this.pos);
    return this;
  }

  sfixed32(v: number): this {
    this.ensure(4);
    this.pos = this.buf.writeInt32LE(v | 0, this.pos);
    return this;
  }

  fixed64(v: number): this {
    this.ensure(8);
    this.pos = this.buf.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v)), this.pos);
    return this;
  }

  sfixed64(v: number): this {
    return this.fixed64(v);
  }

  float(v: number): this {
    this.ensure(4);
    this.pos = this.buf.writeFloatLE(v, this.pos);
    return this;
  }

  double(v: number): this {
    this.ensure(8);
    this.pos = this.buf.writeDoubleLE(v, this.pos);
    return this;
  }

  /** A length-delimited UTF-8 string. */
  string(s: string): this {
    // up to 42 UTF-16 units is at most 126 UTF-8 bytes: a one-byte length, written after the text
    if (s.length < 43) {
      this.ensure(1 + s.length * 3);
      const b = this.buf;
      const at = this.pos++;
      // ASCII is copied here: cheaper than a call into the runtime for a short string
      let i = 0;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        b[this.pos + i] = c;
      }
      const n = i === s.length ? i : b.utf8Write(s, this.pos);
      b[at] = n;
      this.pos += n;
      return this;
    }
    const n = Buffer.byteLength(s);
    this.uint32(n);
    this.ensure(n);
    this.pos += this.buf.utf8Write(s, this.pos);
    return this;
  }

  /**
   * The JSON text JSON.stringify(v) makes, written straight into the buffer: objects are walked here
   * (FieldsV1 is a tree of objects whose keys are mostly ASCII), anything else and subtrees deeper
   * than a few dozen levels go through JSON.stringify. Not length-delimited: see begin()/end().
   */
  json(v: unknown, depth = 0): this {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || depth > 64 || typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      this.text(JSON.stringify(v));
      return this;
    }
    this.ensure(1);
    this.buf[this.pos++] = 0x7b; // {
    let first = true;
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const value = o[k];
      // JSON.stringify leaves these keys out of an object
      if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
      if (!first) {
        this.ensure(1);
        this.buf[this.pos++] = 0x2c; // ,
      }
      first = false;
      this.jsonKey(k);
      this.json(value, depth + 1);
    }
    this.ensure(1);
    this.buf[this.pos++] = 0x7d; // }
    return this;
  }

  /** `"key":`, copied byte by byte when it is printable ASCII needing no escape. */
  private jsonKey(k: string): void {
    this.ensure(k.length + 3);
    const b = this.buf;
    const start = this.pos;
    b[start] = 0x22;
    let i = 0;
    for (; i < k.length; i++) {
      const c = k.charCodeAt(i);
      if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80) break;
      b[start + 1 + i] = c;
    }
    if (i === k.length) {
      b[start + 1 + i] = 0x22;
      b[start + 2 + i] = 0x3a; // :
      this.pos = start + 3 + i;
      return;
    }
    this.text(JSON.stringify(k));
    this.ensure(1);
    this.buf[this.pos++] = 0x3a;
  }

  /** UTF-8 of `s` without a length. */
  private text(s: string | undefined): void {
    if (s === undefined) return;
    this.ensure(s.length * 3);
    this.pos += this.buf.utf8Write(s, this.pos);
  }

  /** Length-delimited bytes. */
  bytes(b: Uint8Array): this {
    this.uint32(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  /** Starts a length-delimited value (after its tag); returns where its content starts. */
  begin(): number {
    this.ensure(1);
    this.pos++;
    return this.pos;
  }

  /** Ends the value begun at `start`: writes its length there, moving the content when it needs more than a byte. */
  end(start: number): this {
    const len = this.pos - start;
    if (len < 0x80) {
      this.buf[start - 1] = len;
      return this;
    }
    let extra = 0;
    for (let v = len >>> 7; v > 0x7f; v >>>= 7) extra++;
    extra++;
    this.ensure(extra);
    this.buf.copyWithin(start + extra, start, this.pos);
    let at = start - 1;
    let v = len;
    while (v > 0x7f) {
      this.buf[at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[at] = v;
    this.pos += extra;
    return this;
  }

  /** Where writing stands. */
  get position(): number {
    return this.pos;
  }

  /** Drops what was written since `position`. */
  rewind(position: number): void {
    this.pos = position;
  }

  /** A copy of what was written (the scratch buffer is reused by the next encode). */
  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    return out;
  }
}

declare global {
  interface Buffer {
    utf8Write(s: string, offset?: number, length?: number): number;
  }
}
