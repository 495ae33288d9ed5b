/**
 * Small helpers over plain JSON values shared by every patch and merge algorithm here: kind tests,
 * deep equality (object key order ignored, list order significant, absent == undefined) and a fast
 * deep copy. Keys holding `undefined` count as absent, as they do once the value is serialised.
 */
import type { JsonObject, JsonValue } from '../api/types.js';

export type { JsonObject, JsonValue };

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export type JsonKind = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

export function jsonKind(v: JsonValue): JsonKind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v as 'boolean' | 'number' | 'string' | 'object';
}

/** Number of keys whose value is defined. */
function definedSize(o: JsonObject): number {
  let n = 0;
  for (const k in o) if (o[k] !== undefined) n++;
  return n;
}

export function deepEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined) return false;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  let count = 0;
  for (const k in a) {
    const av = a[k];
    if (av === undefined) continue;
    count++;
    if (!deepEqual(av, b[k])) return false;
  }
  return count === definedSize(b);
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
