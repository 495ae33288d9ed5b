/**
 * JSON Pointer (RFC 6901) resolution the way evanphx/json-patch v4 does it for JSON Patch: a path
 * names a member inside its parent container, which must exist; array members are addressed by Go
 * strconv.Atoi indices (negative ones count from the end). Failures carry the library's messages.
 */
import { goQuote } from '../api/validation.js';
import { type JsonObject, type JsonValue, isObject, putKey } from './json-values.js';

export interface LookupError {
  error: string;
}

/** Lookup failures are instances of this class, so they cannot be mistaken for document values. */
class LookupFailure implements LookupError {
  constructor(readonly error: string) {}
}

export const isLookupError = (v: unknown): v is LookupError => v instanceof LookupFailure;
const lookupError = (error: string): LookupError => new LookupFailure(error);

/** The member a path names, inside its parent container. */
export interface Location {
  key: string;
  /** The current value: undefined when an object has no such member, a LookupError for a bad index. */
  get(): JsonValue | undefined | LookupError;
  set(v: JsonValue): void;
  add(v: JsonValue): string | undefined;
  remove(): string | undefined;
}

const decodeKey = (k: string): string => k.replaceAll('~1', '/').replaceAll('~0', '~');

/** Parent of the path's last segment, or undefined when a segment on the way does not exist. */
export function locate(doc: JsonValue, path: string): Location | undefined {
  const split = path.split('/');
  if (split.length < 2) return undefined;
  let container: JsonValue = doc;
  for (const part of split.slice(1, -1)) {
    const next: JsonValue | undefined | LookupError = childOf(container, decodeKey(part));
    if (next === undefined || next === null || isLookupError(next) || typeof next !== 'object') return undefined;
    container = next;
  }
  const key = decodeKey(split[split.length - 1]!);
  if (Array.isArray(container)) return arrayLocation(container, key);
  if (isObject(container)) return objectLocation(container, key);
  return undefined;
}

function childOf(container: JsonValue, key: string): JsonValue | undefined | LookupError {
  if (Array.isArray(container)) {
    const idx = arrayIndex(key, container.length);
    return typeof idx === 'number' ? container[idx] : idx;
  }
  if (isObject(container)) return own(container, key);
  return undefined;
}

/** An object's own member: keys such as `constructor` must not reach Object.prototype. */
const own = (obj: JsonObject, key: string): JsonValue | undefined => (Object.hasOwn(obj, key) ? obj[key] : undefined);

function objectLocation(obj: JsonObject, key: string): Location {
  return {
    key,
    get: () => own(obj, key),
    set: (v) => putKey(obj, key, v),
    add: (v) => void putKey(obj, key, v),
    remove: () => {
      if (own(obj, key) === undefined) return `Unable to remove nonexistent key: ${key}: missing value`;
      delete obj[key];
      return undefined;
    },
  };
}

function arrayLocation(arr: JsonValue[], key: string): Location {
  return {
    key,
    get: () => {
      const idx = arrayIndex(key, arr.length);
      return typeof idx === 'number' ? arr[idx] : idx;
    },
    set: (v) => {
      const idx = arrayIndex(key, arr.length);
      if (typeof idx === 'number') arr[idx] = v;
    },
    add: (v) => {
      if (key === '-') return void arr.push(v);
      const n = atoi(key);
      if (typeof n === 'string') return `value was not a proper array index: '${key}': ${n}`;
      const size = arr.length + 1;
      if (n >= size || n < -size) return `Unable to access invalid index: ${n}: invalid index referenced`;
      arr.splice(n < 0 ? n + size : n, 0, v);
      return undefined;
    },
    remove: () => {
      const n = atoi(key);
      if (typeof n === 'string') return n;
      if (n >= arr.length || n < -arr.length) return `Unable to access invalid index: ${n}: invalid index referenced`;
      arr.splice(n < 0 ? n + arr.length : n, 1);
      return undefined;
    },
  };
}

/** A position in an array of `length` items (negative counts from the end) or why there is none. */
function arrayIndex(key: string, length: number): number | LookupError {
  const n = atoi(key);
  if (typeof n === 'string') return lookupError(n);
  if (n >= length || n < -length) return lookupError(`Unable to access invalid index: ${n}: invalid index referenced`);
  return n < 0 ? n + length : n;
}

/** strconv.Atoi: an optionally signed decimal integer, or Go's error text. */
function atoi(s: string): number | string {
  if (!/^[+-]?\d+$/.test(s)) return `strconv.Atoi: parsing ${goQuote(s)}: invalid syntax`;
  const n = Number(s);
  if (!Number.isSafeInteger(n)) return `strconv.Atoi: parsing ${goQuote(s)}: value out of range`;
  return n;
}
