/**
 * Strategic merge patch (application/strategic-merge-patch+json) as the API server applies it: a JSON
 * merge patch whose lists with patchStrategy=merge merge by patchMergeKey (scalars as sets), plus the
 * directives `$patch: replace | delete` (on maps and list items), `$retainKeys`,
 * `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`. A null deletes a field. Errors are
 * MergeErrors with upstream's text and status (400 bad directive format, 422 lists of lists, 500 else).
 */
import type { Schema } from '../schema/schema.js';
import { MergeError, PatchContentError } from './errors.js';
import { goJsonKind, goV } from './go-format.js';
import { type JsonObject, type JsonValue, cloneJson, isObject, jsonKind, putKey } from './json-values.js';
import { type MergeMapFn, mergeSlice, sliceElementKind } from './smp-lists.js';
import { normalizeElementOrder, partitionMaps, partitionScalars } from './smp-order.js';
import { type PatchMeta, SchemaLookup, mainStrategy, smpErrors } from './smp-meta.js';

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList';
const SET_ELEMENT_ORDER = '$setElementOrder';

/** Applies `patch` (the decoded request body) to `original` under `schema`; neither is modified. */
export function applyStrategicMergePatch(original: JsonObject, patch: unknown, schema: Schema): JsonObject {
  if (patch === null) return cloneJson(original);
  if (!isObject(patch)) throw new MergeError(`json: cannot unmarshal ${goJsonKind(patch as JsonValue)} into Go value of type map[string]interface {}`, 400);
  return mergeMap(cloneJson(original), cloneJson(patch), new SchemaLookup(schema), '');
}

const fieldPath = (path: string, key: string): string => (path ? `${path}.${key}` : key);

/** Runs `f`, naming `field` in a PatchContentError it raises (the innermost field wins). */
function atField<T>(field: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof PatchContentError) e.at(field);
    throw e;
  }
}

/** Merges `patch` into `original` (the map at `path`); both are this module's own copies and are modified. */
function mergeMap(original: JsonObject, patch: JsonObject, lookup: SchemaLookup, path: string): JsonObject {
  if (Object.hasOwn(patch, DIRECTIVE)) return atField(fieldPath(path, DIRECTIVE), () => mapDirective(patch));
  applyRetainKeys(original, patch);
  applySetElementOrders(original, patch, lookup, path);
  for (const k of Object.keys(patch)) {
    const patchV = patch[k];
    if (patchV === undefined) continue;
    const isDeleteList = k.startsWith(DELETE_FROM_PRIMITIVE_LIST);
    const key = isDeleteList ? fieldOfDirective(k, DELETE_FROM_PRIMITIVE_LIST) : k;
    if (patchV === null) {
      delete original[key];
      continue;
    }
    // upstream ignores a non-list here; it is a malformed directive all the same
    if (isDeleteList && !Array.isArray(patchV)) throw smpErrors.badArgType('slice', patchV).at(fieldPath(path, k));
    atField(fieldPath(path, isDeleteList ? k : key), () => mergeField(original, key, patchV, isDeleteList, lookup, fieldPath(path, key)));
  }
  return original;
}

function mergeField(original: JsonObject, key: string, patchV: JsonValue, isDeleteList: boolean, lookup: SchemaLookup, path: string): void {
  const cur = Object.hasOwn(original, key) ? original[key] : undefined;
  if (cur === undefined || jsonKind(cur) !== jsonKind(patchV)) {
    // New or differently typed values are taken from the patch, without nulls or directives.
    if (!isDeleteList) setCleaned(original, key, patchV);
    return;
  }
  if (isObject(cur)) {
    const { sub, meta } = lookup.forStruct(key);
    putKey(original, key, mainStrategy(meta.strategies) === 'replace' ? patchV : mergeMap(cur, patchV as JsonObject, sub, path));
  } else if (Array.isArray(cur)) {
    const { sub, meta } = lookup.forSlice(key);
    putKey(original, key, mergeListField(cur, patchV as JsonValue[], sub, meta, isDeleteList, path));
  } else {
    setCleaned(original, key, patchV);
  }
}

/** A mergeMap for the items of the list at `path`. */
const itemMerger =
  (path: string): MergeMapFn =>
  (o, p, l) =>
    mergeMap(o, p, l, path);

function mergeListField(cur: JsonValue[], patch: JsonValue[], sub: SchemaLookup, meta: PatchMeta, isDeleteList: boolean, path: string): JsonValue[] {
  if (mainStrategy(meta.strategies) === 'merge' || isDeleteList) return mergeSlice(cur, patch, sub, meta.mergeKey, isDeleteList, itemMerger(path)).merged;
  return patch;
}

function setCleaned(original: JsonObject, key: string, value: JsonValue): void {
  discardNulls(value);
  const cleaned = removeDirectives(value);
  if (cleaned === DROP) delete original[key];
  else putKey(original, key, cleaned);
}

/** `$patch` on a map: replace keeps the patch as the value, delete empties it. */
function mapDirective(patch: JsonObject): JsonObject {
  const directive = patch[DIRECTIVE];
  if (directive === 'replace') {
    delete patch[DIRECTIVE];
    return patch;
  }
  if (directive === 'delete') return {};
  throw smpErrors.badPatchType(directive, patch);
}

/** `$deleteFromPrimitiveList/name` -> `name`; the prefix must be followed by `/` and a field. */
function fieldOfDirective(key: string, prefix: string): string {
  const slash = key.indexOf('/');
  if (slash < 0 || key.slice(0, slash) !== prefix) {
    throw prefix === DELETE_FROM_PRIMITIVE_LIST ? smpErrors.badPatchFormatForPrimitiveList() : smpErrors.badPatchFormatForSetElementOrderList();
  }
  return key.slice(slash + 1);
}

/** `$retainKeys`: fields of the original not listed are cleared; the patch may only set listed fields. */
function applyRetainKeys(original: JsonObject, patch: JsonObject): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const list = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(list)) throw smpErrors.badPatchFormatForRetainKeys();
  const keep = new Set<JsonValue>(list);
  for (const k of Object.keys(patch)) {
    if (patch[k] === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST) || k.startsWith(SET_ELEMENT_ORDER)) continue;
    if (!keep.has(k)) throw smpErrors.badPatchFormatForRetainKeys();
  }
  for (const k of Object.keys(original)) if (!keep.has(k)) delete original[k];
}

/**
 * `$setElementOrder/name`: merges the named list (taking the patch's items) and orders the result as
 * the directive lists it, live items not listed going before the listed ones they preceded.
 */
function applySetElementOrders(original: JsonObject, patch: JsonObject, lookup: SchemaLookup, path: string): void {
  for (const k of Object.keys(patch)) {
    if (k.startsWith(SET_ELEMENT_ORDER)) atField(fieldPath(path, k), () => applySetElementOrder(original, patch, lookup, path, k));
  }
}

function applySetElementOrder(original: JsonObject, patch: JsonObject, lookup: SchemaLookup, path: string, k: string): void {
  const order = patch[k];
  delete patch[k];
  if (!Array.isArray(order)) throw smpErrors.badArgType('slice', order);
  const field = fieldOfDirective(k, SET_ELEMENT_ORDER);
  const origList = listMember(original, field);
  const patchList = listMember(patch, field);
  const { sub, meta } = lookup.forSlice(field);
  const strategy = mainStrategy(meta.strategies);
  checkOrderAgainstPatch(patchList ?? [], order, meta.mergeKey);
  let merged: JsonValue[];
  // Upstream orders by the live list as the merge left it in memory (see GoSlice in smp-lists.ts).
  let serverOrder = origList ?? [];
  if (origList && !patchList) merged = origList;
  else if (!origList && patchList) merged = removeDirectives(patchList) as JsonValue[];
  else if (origList && patchList && strategy === 'merge') ({ merged, originalAfter: serverOrder } = mergeSlice(origList, patchList, sub, meta.mergeKey, false, itemMerger(fieldPath(path, field))));
  else if (origList && patchList) merged = patchList;
  else return;
  const { inPatch, serverOnly } = meta.mergeKey ? partitionMaps(merged, order, meta.mergeKey) : partitionScalars(merged, order);
  const kind = sliceElementKind(origList ?? [], patchList ?? []);
  putKey(original, field, normalizeElementOrder(inPatch, serverOnly, order, serverOrder, meta.mergeKey, kind));
  delete patch[field];
}

function listMember(o: JsonObject, key: string): JsonValue[] | undefined {
  if (!Object.hasOwn(o, key)) return undefined;
  const v = o[key];
  if (!Array.isArray(v)) throw smpErrors.badArgType('slice', v);
  return v;
}

/** The patch list's items (deletions aside) must appear in the order list, in the same order. */
function checkOrderAgainstPatch(patchList: JsonValue[], order: JsonValue[], mergeKey: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  let items = patchList;
  if (mergeKey) {
    for (const v of patchList) if (!isObject(v)) throw smpErrors.badArgType('map', v);
    items = patchList.filter((v) => (v as JsonObject)[DIRECTIVE] !== 'delete');
  }
  let p = 0;
  let o = 0;
  while (p < items.length && o < order.length) {
    if (isObject(items[p]) && Object.hasOwn(items[p] as JsonObject, DIRECTIVE)) {
      p++;
      continue;
    }
    if (sameKey(items[p]!, order[o]!, mergeKey)) p++;
    o++;
  }
  if (p < items.length) throw smpErrors.plain(`The order in patch list:\n${goV(patchList)}\n doesn't match ${SET_ELEMENT_ORDER} list:\n${goV(order)}\n`);
}

function sameKey(a: JsonValue, b: JsonValue, mergeKey: string): boolean {
  if (!mergeKey) return a === b;
  if (!isObject(a)) throw smpErrors.badArgType('map', a);
  if (!isObject(b)) throw smpErrors.badArgType('map', b);
  if (!Object.hasOwn(a, mergeKey)) throw smpErrors.noMergeKey(a, mergeKey);
  if (!Object.hasOwn(b, mergeKey)) throw smpErrors.noMergeKey(b, mergeKey);
  return a[mergeKey] === b[mergeKey];
}

/** Marker for a value that is itself a directive and must not be kept. */
const DROP = Symbol('drop');

/** Whether a value is a directive map (`{$patch: ...}`), which is never kept. */
const isDirectiveMap = (v: JsonValue | undefined): boolean => isObject(v) && Object.hasOwn(v, DIRECTIVE);

/**
 * Removes directive maps (`{$patch: ...}`) from a value taken over from the patch (this module's own
 * copy, edited in place). Whether a value is dropped depends on it alone, so the walk drops children
 * as it meets them, with an explicit stack: patches may nest deep.
 */
function removeDirectives(v: JsonValue): JsonValue | typeof DROP {
  if (isDirectiveMap(v)) return DROP;
  const stack: JsonValue[] = [v];
  while (stack.length) {
    const x = stack.pop()!;
    if (Array.isArray(x)) {
      let kept = 0;
      for (const item of x) {
        if (isDirectiveMap(item)) continue;
        x[kept++] = item;
        if (item !== null && typeof item === 'object') stack.push(item);
      }
      x.length = kept;
    } else if (isObject(x)) {
      for (const k of Object.keys(x)) {
        const y = x[k] as JsonValue;
        if (isDirectiveMap(y)) delete x[k];
        else if (y !== null && typeof y === 'object') stack.push(y);
      }
    }
  }
  return v;
}

/** Drops null members anywhere in a value taken over from the patch (explicit stack, as above). */
function discardNulls(v: JsonValue): void {
  const stack: JsonValue[] = [v];
  while (stack.length) {
    const x = stack.pop()!;
    if (Array.isArray(x)) {
      for (const item of x) if (item !== null && typeof item === 'object') stack.push(item);
    } else if (isObject(x)) {
      for (const k of Object.keys(x)) {
        const y = x[k];
        if (y === null) delete x[k];
        else if (y !== undefined && typeof y === 'object') stack.push(y);
      }
    }
  }
}
