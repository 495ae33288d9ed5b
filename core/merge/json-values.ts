/**
 * Small helpers over plain JSON values shared by every patch and merge algorithm here: kind tests
 * and a fast deep copy (deep equality is api/validation's jsonEqual). Keys holding `undefined`
 * count as absent, as they do once the value is serialised.
 */
import type { JsonObject, JsonValue } from '../api/types.js';

export type { JsonObject, JsonValue };

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An object with no defined member. */
export function isEmptyObject(o: JsonObject): boolean {
  for (const k in o) if (o[k] !== undefined) return false;
  return true;
}

/** Absent, null or an object: what an untyped (deduced) node merges and compares as a map. */
export const isMapLike = (v: JsonValue | undefined): boolean => v === undefined || v === null || isObject(v);

export type JsonKind = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

export function jsonKind(v: JsonValue): JsonKind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v as 'boolean' | 'number' | 'string' | 'object';
}

/** Sets `o[k] = v`, also for the key `__proto__`, which plain assignment would treat as the prototype. */
export function putKey(o: JsonObject, k: string, v: JsonValue): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

export function cloneJson<T extends JsonValue | undefined>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    const out: JsonValue[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = cloneJson(v[i] as JsonValue);
    return out as T;
  }
  const out: JsonObject = {};
  for (const k in v) {
    const x = (v as JsonObject)[k];
    if (x !== undefined) putKey(out, k, cloneJson(x));
  }
  return out as T;
}
