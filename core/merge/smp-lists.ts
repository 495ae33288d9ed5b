/**
 * List merging for strategic merge patch (patchStrategy=merge): lists of scalars merge as ordered
 * sets (plus `$deleteFromPrimitiveList`), lists of maps merge item by item on the merge key (plus
 * `$patch: delete | replace` items), then come out in upstream's order (smp-order.ts).
 */
import { goType, goV } from './go-format.js';
import { type JsonObject, type JsonValue, isObject } from './json-values.js';
import { type SchemaLookup, smpErrors } from './smp-meta.js';
import { type ElementKind, normalizeElementOrder, partitionMaps, partitionScalars } from './smp-order.js';

export type MergeMapFn = (original: JsonObject, patch: JsonObject, lookup: SchemaLookup) => JsonObject;

/** Kind of the items of the given lists, which must all have the same Go type and not be lists. */
export function sliceElementKind(...slices: JsonValue[][]): ElementKind {
  let first: string | undefined;
  for (const s of slices) {
    for (const v of s) {
      if (v === null) throw smpErrors.plain('list element is null');
      const t = goType(v);
      if (first === undefined) {
        first = t;
        if (Array.isArray(v)) throw smpErrors.noListOfLists();
      } else if (first !== t) {
        throw smpErrors.plain(`list element types are not identical: ${goV(slices)}`);
      }
    }
  }
  if (first === undefined) throw smpErrors.plain('no elements in any of the given slices');
  return first === 'map[string]interface {}' ? 'map' : 'scalar';
}

/** The merged list, and the caller's original list as upstream's in-place edits leave it (see GoSlice). */
export interface SliceMerge {
  merged: JsonValue[];
  originalAfter: JsonValue[];
}

export function mergeSlice(
  original: JsonValue[],
  patch: JsonValue[],
  lookup: SchemaLookup,
  mergeKey: string,
  isDeleteList: boolean,
  mergeMap: MergeMapFn,
): SliceMerge {
  if (original.length === 0 && patch.length === 0) return { merged: original, originalAfter: original };
  const kind = sliceElementKind(original, patch);
  if (kind !== 'map') {
    if (isDeleteList) return { merged: deleteFromSlice(original, patch), originalAfter: original };
    const merged = dedupeScalars([...original, ...patch]);
    const { inPatch, serverOnly } = partitionScalars(merged, patch);
    return { merged: normalizeElementOrder(inPatch, serverOnly, patch, original, mergeKey, kind), originalAfter: original };
  }
  if (!mergeKey) throw smpErrors.plain(`cannot merge lists without merge key for ${lookup.name()}`);
  const slice = new GoSlice(original);
  const plain = applySpecialItems(slice, patch, mergeKey);
  const serverOrder = slice.items();
  const merged = mergeByKey(slice, plain, mergeKey, lookup, mergeMap);
  const { inPatch, serverOnly } = partitionMaps(merged, plain, mergeKey);
  return { merged: normalizeElementOrder(inPatch, serverOnly, plain, serverOrder, mergeKey, kind), originalAfter: slice.callerView() };
}

/**
 * The live list as a Go slice: deleting an item shifts the rest left inside the same backing array
 * and appending writes into its spare capacity, so the caller's (longer) view of the original list
 * changes too. Upstream orders `$setElementOrder` results by that view; capacities are those Go's
 * JSON decoding gives (powers of two).
 */
class GoSlice {
  /** The caller's backing array; spare capacity beyond its length can be written too. */
  private readonly callerBacking: JsonValue[];
  private readonly callerLength: number;
  private readonly cap: number;
  /** The array this slice currently lives in: the caller's until an append outgrows it. */
  private data: JsonValue[];
  private len: number;

  constructor(original: JsonValue[]) {
    this.callerBacking = this.data = original.slice();
    this.callerLength = this.len = original.length;
    this.cap = this.len === 0 ? 0 : 2 ** Math.ceil(Math.log2(this.len));
  }

  items(): JsonValue[] {
    return this.data.slice(0, this.len);
  }

  callerView(): JsonValue[] {
    return this.callerBacking.slice(0, this.callerLength);
  }

  get(i: number): JsonValue {
    return this.data[i]!;
  }

  set(i: number, v: JsonValue): void {
    this.data[i] = v;
  }

  length(): number {
    return this.len;
  }

  delete(i: number): void {
    for (let k = i; k < this.len - 1; k++) this.data[k] = this.data[k + 1]!;
    this.len--;
  }

  replaceWith(items: JsonValue[]): void {
    this.data = items.slice();
    this.len = items.length;
  }

  append(v: JsonValue): void {
    if (this.data === this.callerBacking && this.len >= this.cap) this.data = this.data.slice(0, this.len);
    this.data[this.len++] = v;
  }
}

const dedupeScalars = (list: JsonValue[]): JsonValue[] => [...new Set(list)];

function deleteFromSlice(current: JsonValue[], toDelete: JsonValue[]): JsonValue[] {
  const gone = new Set(toDelete);
  return current.filter((v) => !gone.has(v));
}

/** `$patch: delete` items remove live items with that key; a `$patch: replace` item makes the rest replace the list. */
function applySpecialItems(slice: GoSlice, patch: JsonValue[], mergeKey: string): JsonValue[] {
  const plain: JsonValue[] = [];
  let replace = false;
  for (const v of patch) {
    const item = v as JsonObject;
    if (!Object.hasOwn(item, '$patch')) {
      plain.push(v);
      continue;
    }
    const directive = item.$patch;
    if (directive === 'delete') {
      if (!Object.hasOwn(item, mergeKey)) throw smpErrors.noMergeKey(item, mergeKey);
      for (let i = findInSlice(slice, mergeKey, item[mergeKey]!); i >= 0; i = findInSlice(slice, mergeKey, item[mergeKey]!)) slice.delete(i);
    } else if (directive === 'replace') replace = true;
    else if (directive === 'merge') throw smpErrors.plain('merging lists cannot yet be specified in the patch');
    else throw smpErrors.badPatchType(directive, item);
  }
  if (!replace) return plain;
  slice.replaceWith(plain);
  return [];
}

function findInSlice(slice: GoSlice, mergeKey: string, value: JsonValue): number {
  for (let i = 0; i < slice.length(); i++) {
    const item = slice.get(i);
    if (!isObject(item)) throw smpErrors.plain(`value for key ${i} is not a map`);
    if (Object.hasOwn(item, mergeKey) && item[mergeKey] === value) return i;
  }
  return -1;
}

/** Patch items merge into the live item with the same key (or the earlier patch item); new ones are appended. */
function mergeByKey(slice: GoSlice, patch: JsonValue[], mergeKey: string, lookup: SchemaLookup, mergeMap: MergeMapFn): JsonValue[] {
  for (const v of patch) {
    const item = v as JsonObject;
    if (!Object.hasOwn(item, mergeKey)) throw smpErrors.noMergeKey(item, mergeKey);
    const at = findInSlice(slice, mergeKey, item[mergeKey]!);
    if (at >= 0) slice.set(at, mergeMap(slice.get(at) as JsonObject, item, lookup));
    else slice.append(v);
  }
  return slice.items();
}
