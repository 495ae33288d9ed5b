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

/** Levels of nesting the recursive fast paths here handle before switching to an explicit stack. */
const RECURSION_LIMIT = 64;

/** A deep copy; values nested past what a recursive copy may take are copied with an explicit stack. */
export function cloneJson<T extends JsonValue | undefined>(v: T): T {
  return cloneAt(v, 0);
}

function cloneAt<T extends JsonValue | undefined>(v: T, depth: number): T {
  if (v === null || typeof v !== 'object') return v;
  if (depth > RECURSION_LIMIT) return cloneDeep(v);
  if (Array.isArray(v)) {
    const out: JsonValue[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = cloneAt(v[i] as JsonValue, depth + 1);
    return out as T;
  }
  const out: JsonObject = {};
  for (const k in v) {
    const x = (v as JsonObject)[k];
    if (x !== undefined) putKey(out, k, cloneAt(x, depth + 1));
  }
  return out as T;
}

/** cloneJson without recursion: each container is created when met and filled when its turn comes. */
function cloneDeep<T extends JsonValue>(v: T): T {
  const emptyLike = (x: JsonObject | JsonValue[]): JsonObject | JsonValue[] => (Array.isArray(x) ? new Array(x.length) : {});
  const root = emptyLike(v as JsonObject | JsonValue[]);
  const stack: [JsonObject | JsonValue[], JsonObject | JsonValue[]][] = [[v as JsonObject | JsonValue[], root]];
  while (stack.length) {
    const [src, dst] = stack.pop()!;
    if (Array.isArray(src)) {
      for (let i = 0; i < src.length; i++) {
        const x = src[i] as JsonValue;
        if (x !== null && typeof x === 'object') {
          const c = emptyLike(x);
          (dst as JsonValue[])[i] = c;
          stack.push([x, c]);
        } else (dst as JsonValue[])[i] = x;
      }
      continue;
    }
    for (const k in src) {
      const x = src[k];
      if (x === undefined) continue;
      if (x !== null && typeof x === 'object') {
        const c = emptyLike(x);
        putKey(dst as JsonObject, k, c);
        stack.push([x, c]);
      } else putKey(dst as JsonObject, k, x);
    }
  }
  return root as T;
}

/** Whether `v` nests arrays and objects more than `limit` levels deep (walked without recursion). */
export function nestsDeeperThan(v: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object') continue;
    if (d + 1 > limit) return true;
    for (const k in x as object) stack.push([(x as Record<string, unknown>)[k], d + 1]);
  }
  return false;
}
