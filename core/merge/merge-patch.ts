/**
 * RFC 7386 JSON merge patch as the API server applies it (evanphx/json-patch v4): objects merge
 * member by member, null deletes a member, anything else replaces. Kept from upstream: a null patch
 * or a scalar patch is a 400 "Invalid JSON Patch", an array patch replaces the document, and nulls
 * inside a value that lands where no object was are pruned (also inside objects within arrays).
 */
import { MergeError } from './errors.js';
import { type JsonObject, type JsonValue, cloneJson, isObject, putKey } from './json-values.js';

export function applyMergePatch(doc: JsonValue, patch: JsonValue): JsonValue {
  if (doc === null) throw new MergeError('Invalid JSON Document', 400);
  if (patch === null || (!isObject(patch) && !Array.isArray(patch))) throw new MergeError('Invalid JSON Patch', 400);
  if (Array.isArray(patch)) return pruneNulls(cloneJson(patch));
  if (!isObject(doc)) return pruneNulls(cloneJson(patch));
  return mergeObjects(cloneJson(doc), patch);
}

/** Merges `patch` into `doc` (a copy owned by this module). */
function mergeObjects(doc: JsonObject, patch: JsonObject): JsonObject {
  for (const k in patch) {
    const v = patch[k];
    if (v === undefined) continue;
    if (v === null) {
      delete doc[k];
      continue;
    }
    const cur = Object.hasOwn(doc, k) ? doc[k] : undefined;
    if (cur === undefined || cur === null) putKey(doc, k, pruneNulls(cloneJson(v)));
    else putKey(doc, k, mergeValue(cur, v));
  }
  return doc;
}

function mergeValue(cur: JsonValue, patch: JsonValue): JsonValue {
  if (!isObject(cur)) return pruneNulls(cloneJson(patch));
  if (!isObject(patch)) return cloneJson(patch);
  return mergeObjects(cur, patch);
}

/** Drops null members of objects, also in objects inside arrays; null array items stay. No recursion: patches may nest deep. */
function pruneNulls(v: JsonValue): JsonValue {
  const stack: JsonValue[] = [v];
  while (stack.length) {
    const x = stack.pop()!;
    if (Array.isArray(x)) {
      for (const item of x) if (item !== null && typeof item === 'object') stack.push(item);
    } else if (isObject(x)) {
      for (const k in x) {
        const y = x[k];
        if (y === null) delete x[k];
        else if (y !== undefined && typeof y === 'object') stack.push(y);
      }
    }
  }
  return v;
}
