/**
 * JSON request bodies: native JSON.parse for the value, plus one scan of the text for duplicate keys
 * (JSON.parse silently keeps the last one, as Go's decoder does, but field validation must report
 * them) and for nesting past Go's depth limit. The scan only reads keys and skips values; it runs on
 * write bodies, never on reads.
 */

import { goJsonSyntaxError } from './json-syntax.js';
import { MAX_JSON_DEPTH } from './limits.js';

export class JsonSyntaxError extends Error {}

/** Nesting past MAX_JSON_DEPTH in text that is otherwise valid JSON; `offset` is the bracket that is one too many. */
export class JsonDepthError extends JsonSyntaxError {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

export interface DecodedJson {
  value: unknown;
  /** Paths of keys that occur more than once in their object, e.g. `spec.replicas`, `items[0].name`. */
  duplicates: string[];
  /** The same duplicates as key and offset of the key in the text (for YAML's line-numbered wording). */
  duplicateKeys: { key: string; offset: number }[];
}

export function decodeJson(text: string): DecodedJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new JsonSyntaxError(goJsonSyntaxError(Buffer.from(text)) ?? (e as Error).message);
  }
  const out: DecodedJson = { value, duplicates: [], duplicateKeys: [] };
  if (typeof value === 'object' && value !== null) new DuplicateScanner(text, out).scan();
  return out;
}

const joinKey = (path: string, key: string): string => (path ? `${path}.${key}` : key);

/** One open object or array while scanning. */
interface Open {
  object: boolean;
  path: string;
  /** Array: index of the next item. */
  index: number;
  /** Object: first key, then every key once a second one arrives. */
  first: string | undefined;
  seen: Set<string> | undefined;
}

/**
 * Walks JSON text that is known to be valid, recording duplicate keys per object and refusing
 * nesting past MAX_JSON_DEPTH (the text parsed, so that is its only error, worded as Go's scanner
 * words it). Open containers are an explicit stack: no recursion, whatever the depth.
 */
class DuplicateScanner {
  private i = 0;
  constructor(
    private readonly s: string,
    private readonly out: DecodedJson,
  ) {}

  private ws(): void {
    const s = this.s;
    let c = s.charCodeAt(this.i);
    while (c === 32 || c === 10 || c === 13 || c === 9) c = s.charCodeAt(++this.i);
  }

  /** Reads a string token starting at the opening quote; returns its decoded text only if asked. */
  private string(decode: boolean): string {
    const s = this.s;
    const start = this.i + 1;
    let j = start;
    let escaped = false;
    for (;;) {
      const c = s.charCodeAt(j);
      if (c === 34 /* " */) break;
      if (c === 92 /* \ */) {
        escaped = true;
        j += 2;
        continue;
      }
      j++;
    }
    this.i = j + 1;
    if (!decode) return '';
    const raw = s.slice(start, j);
    return escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
  }

  private scalar(): void {
    const s = this.s;
    let c = s.charCodeAt(this.i);
    while (this.i < s.length && c !== 44 && c !== 125 && c !== 93 && c !== 32 && c !== 10 && c !== 13 && c !== 9) c = s.charCodeAt(++this.i);
  }

  /** The key of the next member of `o` (at its opening quote), recorded; returns the member's path. */
  private key(o: Open): string {
    this.ws();
    const at = this.i;
    const key = this.string(true);
    if (o.first === undefined) o.first = key;
    else {
      if (!o.seen) o.seen = new Set([o.first]);
      if (o.seen.has(key)) {
        this.out.duplicates.push(joinKey(o.path, key));
        this.out.duplicateKeys.push({ key, offset: at });
      } else o.seen.add(key);
    }
    this.ws();
    this.i++; // :
    return joinKey(o.path, key);
  }

  scan(): void {
    const stack: Open[] = [];
    let path = '';
    for (;;) {
      // a value starts here, at `path`
      this.ws();
      const c = this.s.charCodeAt(this.i);
      if (c === 123 /* { */ || c === 91 /* [ */) {
        if (stack.length >= MAX_JSON_DEPTH) throw new JsonDepthError(`invalid character '${c === 123 ? '{' : '['}' exceeded max depth`, this.i);
        this.i++;
        this.ws();
        if (this.s.charCodeAt(this.i) === (c === 123 ? 125 : 93)) this.i++; // empty
        else {
          const o: Open = { object: c === 123, path, index: 0, first: undefined, seen: undefined };
          stack.push(o);
          path = o.object ? this.key(o) : `${o.path}[0]`;
          continue;
        }
      } else if (c === 34) this.string(false);
      else this.scalar();
      // the value ended: close every container that ends here, or step to the next member
      for (;;) {
        const o = stack[stack.length - 1];
        if (!o) return;
        this.ws();
        if (this.s.charCodeAt(this.i++) === 44 /* , */) {
          path = o.object ? this.key(o) : `${o.path}[${++o.index}]`;
          break;
        }
        stack.pop(); // } or ]
      }
    }
  }
}

/**
 * Nesting read from the binary formats' embedded values (protobuf raw JSON, CBOR items turned into
 * JSON values): deep enough for any object, shallow enough for the recursive steps after decoding.
 */
export const MAX_BODY_DEPTH = 1000;

/** Go's wording for a body nested too deeply, at the bracket that went one level too far. */
export const tooDeep = (bracket: string): string => `invalid character '${bracket}' exceeded max depth`;

/** Whether a decoded value nests deeper than `max` (arrays and objects), found without recursion. */
export function exceedsDepth(v: unknown, max: number = MAX_BODY_DEPTH): boolean {
  let level: unknown[] = [v];
  for (let depth = 0; level.length; depth++) {
    const next: unknown[] = [];
    for (const x of level) {
      if (typeof x !== 'object' || x === null) continue;
      if (depth >= max) return true;
      for (const y of Array.isArray(x) ? x : Object.values(x)) if (typeof y === 'object' && y !== null) next.push(y);
    }
    level = next;
  }
  return false;
}
