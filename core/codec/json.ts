/**
 * JSON request bodies: native JSON.parse for the value, plus one scan of the text for duplicate keys
 * (JSON.parse silently keeps the last one, as Go's decoder does, but field validation must report
 * them). The scan only reads keys and skips values; it runs on write bodies, never on reads. It also
 * bounds nesting, in Go's words: Go's decoder stops at 10000 levels, this server at MAX_BODY_DEPTH,
 * the depth its recursive steps (merges, field sets, JSON.stringify) handle with room to spare.
 */

import { goJsonSyntaxError } from './json-syntax.js';

export class JsonSyntaxError extends Error {}

/** Nesting this server reads in a request body (Go's JSON decoder: 10000; V8's JSON.stringify fails near 4500). */
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

export interface DecodedJson {
  value: unknown;
  /** Paths of keys that occur more than once in their object, e.g. `spec.replicas`, `items[0].name`. */
  duplicates: string[];
}

export function decodeJson(text: string): DecodedJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new JsonSyntaxError(goJsonSyntaxError(Buffer.from(text)) ?? (e as Error).message);
  }
  const duplicates: string[] = [];
  if (typeof value === 'object' && value !== null) new DuplicateScanner(text, duplicates).scanValue('');
  return { value, duplicates };
}

const joinKey = (path: string, key: string): string => (path ? `${path}.${key}` : key);

/** Walks JSON text that is known to be valid, recording duplicate keys per object. */
class DuplicateScanner {
  private i = 0;
  private depth = 0;
  constructor(
    private readonly s: string,
    private readonly out: string[],
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

  scanValue(path: string): void {
    this.ws();
    const c = this.s.charCodeAt(this.i);
    if (c === 123 /* { */) this.object(path);
    else if (c === 91 /* [ */) this.array(path);
    else if (c === 34) this.string(false);
    else this.scalar();
  }

  private scalar(): void {
    const s = this.s;
    let c = s.charCodeAt(this.i);
    while (this.i < s.length && c !== 44 && c !== 125 && c !== 93 && c !== 32 && c !== 10 && c !== 13 && c !== 9) c = s.charCodeAt(++this.i);
  }

  private enter(bracket: string): void {
    if (++this.depth > MAX_BODY_DEPTH) throw new JsonSyntaxError(tooDeep(bracket));
  }

  private object(path: string): void {
    this.enter('{');
    this.i++; // {
    this.ws();
    if (this.s.charCodeAt(this.i) === 125) {
      this.i++;
      this.depth--;
      return;
    }
    let seen: Set<string> | undefined;
    let first: string | undefined;
    for (;;) {
      this.ws();
      const key = this.string(true);
      if (first === undefined) first = key;
      else {
        if (!seen) seen = new Set([first]);
        if (seen.has(key)) this.out.push(joinKey(path, key));
        else seen.add(key);
      }
      this.ws();
      this.i++; // :
      this.scanValue(joinKey(path, key));
      this.ws();
      if (this.s.charCodeAt(this.i++) === 125) {
        this.depth--; // }
        return;
      } // else ,
    }
  }

  private array(path: string): void {
    this.enter('[');
    this.i++; // [
    this.ws();
    if (this.s.charCodeAt(this.i) === 93) {
      this.i++;
      this.depth--;
      return;
    }
    for (let n = 0; ; n++) {
      this.scanValue(`${path}[${n}]`);
      this.ws();
      if (this.s.charCodeAt(this.i++) === 93) {
        this.depth--; // ]
        return;
      } // else ,
    }
  }
}
