/**
 * Result order for strategic merge patch lists, as upstream computes it: items named by the patch
 * (or by `$setElementOrder`) sorted in that order, the other live items sorted in live order, then
 * the two interleaved so a live item precedes the patch items it preceded live; patch items the live
 * list does not know take precedence.
 */
import { type JsonObject, type JsonValue, isObject } from './json-values.js';
import { smpErrors } from './smp-meta.js';

export type ElementKind = 'map' | 'scalar';

interface Partition {
  inPatch: JsonValue[];
  serverOnly: JsonValue[];
}

export function partitionScalars(list: JsonValue[], by: JsonValue[]): Partition {
  const named = new Set(by);
  const out: Partition = { inPatch: [], serverOnly: [] };
  for (const v of list) (named.has(v) ? out.inPatch : out.serverOnly).push(v);
  return out;
}

export function partitionMaps(list: JsonValue[], by: JsonValue[], mergeKey: string): Partition {
  const out: Partition = { inPatch: [], serverOnly: [] };
  for (const v of list) {
    if (!isObject(v)) throw smpErrors.badArgType('map', v);
    if (!Object.hasOwn(v, mergeKey)) throw smpErrors.noMergeKey(v, mergeKey);
    (findByKey(by, mergeKey, v[mergeKey]!) >= 0 ? out.inPatch : out.serverOnly).push(v);
  }
  return out;
}

function findByKey(list: JsonValue[], mergeKey: string, value: JsonValue): number {
  for (let i = 0; i < list.length; i++) {
    const item = list[i]!;
    if (!isObject(item)) throw smpErrors.plain(`value for key ${i} is not a map`);
    if (Object.hasOwn(item, mergeKey) && item[mergeKey] === value) return i;
  }
  return -1;
}

/** Identity of an item for ordering: the merge key's value for maps, the item itself otherwise. */
const identity = (item: JsonValue, mergeKey: string, kind: ElementKind): JsonValue | undefined =>
  kind === 'map' ? (isObject(item) ? item[mergeKey] : undefined) : item;

/** First position of each identity in `list`. */
function positions(list: JsonValue[], mergeKey: string, kind: ElementKind): Map<JsonValue | undefined, number> {
  const at = new Map<JsonValue | undefined, number>();
  list.forEach((item, i) => {
    const id = identity(item, mergeKey, kind);
    if (!at.has(id)) at.set(id, i);
  });
  return at;
}

/** Sorts patch items by `patchOrder` and live-only items by `serverOrder`, then interleaves them. */
export function normalizeElementOrder(
  inPatch: JsonValue[],
  serverOnly: JsonValue[],
  patchOrder: JsonValue[],
  serverOrder: JsonValue[],
  mergeKey: string,
  kind: ElementKind,
): JsonValue[] {
  const patchSorted = normalizeSliceOrder(inPatch, patchOrder, mergeKey, kind);
  const serverSorted = normalizeSliceOrder(serverOnly, serverOrder, mergeKey, kind);
  return mergeSortedSlice(serverSorted, patchSorted, serverOrder, mergeKey, kind);
}

function normalizeSliceOrder(toSort: JsonValue[], order: JsonValue[], mergeKey: string, kind: ElementKind): JsonValue[] {
  let toDelete: JsonValue[] = [];
  if (kind === 'map') {
    for (const list of [toSort, order]) {
      for (const item of list) {
        if (!isObject(item)) throw smpErrors.badArgType('map', item);
        if (!Object.hasOwn(item, mergeKey)) throw smpErrors.noMergeKey(item, mergeKey);
      }
    }
    toDelete = toSort.filter((v) => (v as JsonObject).$patch === 'delete');
    toSort = toSort.filter((v) => (v as JsonObject).$patch !== 'delete');
  }
  const at = positions(order, mergeKey, kind);
  const less = (a: JsonValue, b: JsonValue): boolean => {
    const ia = at.get(identity(a, mergeKey, kind));
    const ib = at.get(identity(b, mergeKey, kind));
    return ia === undefined || ib === undefined ? true : ia < ib;
  };
  return [...stableSort(toSort, less), ...toDelete];
}

/**
 * Go's sort.SliceStable: insertion sort up to 20 items (the result upstream gets even when items
 * are missing from the order list), otherwise a stable sort, which agrees whenever the order is total.
 */
function stableSort(list: JsonValue[], less: (a: JsonValue, b: JsonValue) => boolean): JsonValue[] {
  const out = list.slice();
  if (out.length <= 20) {
    for (let i = 1; i < out.length; i++) {
      for (let j = i; j > 0 && less(out[j]!, out[j - 1]!); j--) [out[j], out[j - 1]] = [out[j - 1]!, out[j]!];
    }
    return out;
  }
  return out.sort((a, b) => (less(a, b) ? -1 : less(b, a) ? 1 : 0));
}

/**
 * Interleaves live-only items (left) into patch items (right): a live item goes first when the live
 * list has it before the next patch item; patch items unknown to the live list go first.
 */
function mergeSortedSlice(left: JsonValue[], right: JsonValue[], serverOrder: JsonValue[], mergeKey: string, kind: ElementKind): JsonValue[] {
  const at = positions(serverOrder, mergeKey, kind);
  const out: JsonValue[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++]!);
    else if (j >= right.length) out.push(left[i++]!);
    else {
      const li = at.get(identity(left[i]!, mergeKey, kind));
      const ri = at.get(identity(right[j]!, mergeKey, kind));
      out.push(li !== undefined && ri !== undefined && li < ri ? left[i++]! : right[j++]!);
    }
  }
  return out;
}
