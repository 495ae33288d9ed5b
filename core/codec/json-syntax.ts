/**
 * Go's encoding/json syntax errors (`invalid character 'x' looking for beginning of value`,
 * `unexpected end of JSON input`, `invalid character '[' exceeded max depth`, ...) for bytes the
 * native parser rejected or that nest too deep, found by scanning them the way Go's scanner does
 * (byte by byte, a space fed at the end of input). Runs only on error paths, so clients see
 * upstream's wording for request bodies and Secret docker configs alike.
 */
import { goQuote } from '../api/validation.js';
import { MAX_JSON_DEPTH } from './limits.js';

class GoSyntaxError extends Error {}

/** Go's quoteChar: a byte as `'x'`. */
function quoteChar(c: number): string {
  if (c === 0x27) return `'\\''`;
  if (c === 0x22) return `'"'`;
  const q = goQuote(String.fromCharCode(c));
  return `'${q.slice(1, -1)}'`;
}

export const isJsonSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** Scans one JSON document the way Go's scanner does, throwing its error text. */
class GoJsonScanner {
  private i = 0;
  constructor(private readonly b: Uint8Array) {}

  /**
   * Go's scanner feeds a space at end of input: states that reject a space report it as an invalid
   * character, all others as "unexpected end of JSON input".
   */
  private fail(context: string, spaceAtEnd = false): never {
    if (this.i >= this.b.length) {
      throw new GoSyntaxError(spaceAtEnd ? `invalid character ' ' ${context}` : 'unexpected end of JSON input');
    }
    throw new GoSyntaxError(`invalid character ${quoteChar(this.b[this.i]!)} ${context}`);
  }
  private skipSpace(): void {
    while (this.i < this.b.length && isJsonSpace(this.b[this.i]!)) this.i++;
  }
  private peek(): number {
    return this.i < this.b.length ? this.b[this.i]! : -1;
  }

  /**
   * One value and its containers, without recursion: the open containers are a stack, so a document
   * nested up to the depth limit is scanned on any thread's stack, and one past it fails as Go's
   * scanner fails it (at the opening bracket that is one too many).
   */
  document(): void {
    const open: number[] = [];
    let wantValue = true;
    for (;;) {
      if (wantValue) {
        this.skipSpace();
        const c = this.peek();
        if (c === 0x7b || c === 0x5b) {
          if (open.length >= MAX_JSON_DEPTH) this.fail('exceeded max depth');
          this.i++;
          open.push(c);
          this.skipSpace();
          const close = c === 0x7b ? 0x7d : 0x5d;
          if (this.peek() === close) {
            this.i++;
            open.pop();
            wantValue = false;
          } else if (c === 0x7b) this.objectKey();
          continue;
        }
        this.scalar();
        wantValue = false;
      }
      if (open.length === 0) break;
      const inObject = open[open.length - 1] === 0x7b;
      this.skipSpace();
      const c = this.peek();
      this.i++;
      if (c === 0x2c) {
        if (inObject) this.objectKey();
        wantValue = true;
      } else if (c === (inObject ? 0x7d : 0x5d)) open.pop();
      else {
        this.i--;
        this.fail(inObject ? 'after object key:value pair' : 'after array element');
      }
    }
    this.skipSpace();
    if (this.i < this.b.length) this.fail('after top-level value');
  }

  /** A key and its colon; the value follows. */
  private objectKey(): void {
    this.skipSpace();
    if (this.peek() !== 0x22) this.fail('looking for beginning of object key string');
    this.string();
    this.skipSpace();
    if (this.peek() !== 0x3a) this.fail('after object key');
    this.i++;
  }

  private scalar(): void {
    const c = this.peek();
    if (c === 0x22) return this.string();
    if (c === 0x2d || isDigit(c)) return this.number();
    if (c === 0x74) return this.literal('true');
    if (c === 0x66) return this.literal('false');
    if (c === 0x6e) return this.literal('null');
    this.fail('looking for beginning of value');
  }

  private string(): void {
    this.i++;
    for (;;) {
      const c = this.peek();
      if (c < 0) this.fail('in string literal');
      if (c === 0x22) {
        this.i++;
        return;
      }
      if (c === 0x5c) {
        this.i++;
        const e = this.peek();
        if (e === 0x75) {
          this.i++;
          for (let k = 0; k < 4; k++) {
            if (!isHex(this.peek())) this.fail('in \\u hexadecimal character escape', true);
            this.i++;
          }
          continue;
        }
        // b f n r t \ / "
        if (e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74 || e === 0x5c || e === 0x2f || e === 0x22) {
          this.i++;
          continue;
        }
        this.fail('in string escape code', true);
      }
      if (c < 0x20) this.fail('in string literal');
      this.i++;
    }
  }

  private digits(): void {
    while (isDigit(this.peek())) this.i++;
  }

  private number(): void {
    if (this.peek() === 0x2d) {
      this.i++;
      if (!isDigit(this.peek())) this.fail('in numeric literal', true);
    }
    if (this.peek() === 0x30) this.i++;
    else this.digits();
    if (this.peek() === 0x2e) {
      this.i++;
      if (!isDigit(this.peek())) this.fail('after decimal point in numeric literal', true);
      this.digits();
    }
    const e = this.peek();
    if (e === 0x65 || e === 0x45) {
      this.i++;
      const sign = this.peek();
      if (sign === 0x2b || sign === 0x2d) this.i++;
      if (!isDigit(this.peek())) this.fail('in exponent of numeric literal', true);
      this.digits();
    }
  }

  private literal(word: string): void {
    this.i++;
    for (let k = 1; k < word.length; k++) {
      if (this.peek() !== word.charCodeAt(k)) this.fail(`in literal ${word} (expecting '${word[k]}')`, true);
      this.i++;
    }
  }
}

/** Go's message for the first syntax error in `b`, or undefined when `b` is one valid JSON value. */
export function goJsonSyntaxError(b: Uint8Array): string | undefined {
  try {
    new GoJsonScanner(b).document();
    return undefined;
  } catch (e) {
    if (e instanceof GoSyntaxError) return e.message;
    throw e;
  }
}
