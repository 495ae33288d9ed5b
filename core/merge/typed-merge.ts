/**
 * Merge of a live object with an applied configuration under the schema (structured-merge-diff's
 * Merge, v4.4): the applied value wins at every leaf, granular maps and structs merge key by key, set
 * and map lists merge item by item and come out in the applied order for shared items, with live-only
 * items kept at their place. Nothing is removed here; pruning is apply's later step. Untouched
 * subtrees are shared with the inputs rather than copied.
 */
import type { Schema } from '../schema/schema.js';
import { type JsonObject, type JsonValue, isEmptyObject, isMapLike, isObject, putKey } from './json-values.js';
import { type ListAtom, requireItemKey } from './list-keys.js';
import { type Atom, UNTYPED, atomOf, childAtom, isLeafAtom } from './schema-view.js';

type Side = JsonValue | undefined;

export function mergeValues(lhs: Side, rhs: Side, schema: Schema): JsonValue {
  return mergeNode(lhs, rhs, atomOf(schema)) ?? null;
}

function mergeNode(lhs: Side, rhs: Side, atom: Atom): Side {
  if (isLeafAtom(atom)) return rhs !== undefined ? rhs : lhs;
  switch (atom.t) {
    case 'list':
      return mergeList(lhs, rhs, atom);
    case 'untyped':
      return mergeUntyped(lhs, rhs);
    default:
      return mergeMap(lhs, rhs, atom);
  }
}

/** Objects merge key by key; any other change of kind lets the applied value win. */
function mergeUntyped(lhs: Side, rhs: Side): Side {
  if (rhs === undefined) return lhs;
  if (isMapLike(lhs) && isMapLike(rhs)) return mergeMap(lhs, rhs, UNTYPED);
  return rhs;
}

function mergeMap(lhs: Side, rhs: Side, atom: Atom): Side {
  const l = isObject(lhs) ? lhs : undefined;
  const r = isObject(rhs) ? rhs : undefined;
  // Two empty sides stay a leaf, which keeps the difference between null and {}.
  if ((!l || isEmptyObject(l)) && (!r || isEmptyObject(r))) return rhs !== undefined ? rhs : lhs;
  if (!r) return l;
  if (!l) return r;
  const out: JsonObject = {};
  for (const k in l) {
    const lv = l[k];
    if (lv === undefined) continue;
    const rv = r[k];
    putKey(out, k, rv === undefined ? lv : (mergeNode(lv, rv, childAtom(atom, k) ?? UNTYPED) as JsonValue));
  }
  for (const k in r) {
    const rv = r[k];
    if (rv !== undefined && l[k] === undefined) putKey(out, k, rv);
  }
  return out;
}

interface IndexedList {
  keys: string[];
  /** Item by key; a duplicated key maps to null, as upstream does not merge duplicates. */
  byKey: Map<string, JsonValue>;
}

function indexList(list: JsonValue[], atom: ListAtom): IndexedList {
  const keys: string[] = new Array(list.length);
  const byKey = new Map<string, JsonValue>();
  for (let i = 0; i < list.length; i++) {
    const item = list[i]!;
    const key = requireItemKey(atom, item);
    byKey.set(key, byKey.has(key) ? null : item);
    keys[i] = key;
  }
  return { keys, byKey };
}

function mergeList(lhs: Side, rhs: Side, atom: ListAtom): Side {
  const l = Array.isArray(lhs) ? lhs : undefined;
  const r = Array.isArray(rhs) ? rhs : undefined;
  if ((!l || l.length === 0) && (!r || r.length === 0)) return rhs !== undefined ? rhs : lhs;
  if (!r) return l;
  if (!l) return r;
  return interleave(l, indexList(l, atom), indexList(r, atom), atom.items);
}

/**
 * Walks both lists at once: shared items are emitted in the applied list's order, live-only items
 * stay where they are relative to the shared items around them, new applied items come at their
 * applied position.
 */
function interleave(l: JsonValue[], lhs: IndexedList, rhs: IndexedList, itemAtom: Atom): JsonValue[] {
  const out: JsonValue[] = [];
  const shared = rhs.keys.filter((k) => lhs.byKey.has(k));
  let sharedAt = 0;
  let nextShared = shared[sharedAt++];
  const emitted = new Set<string>();
  const emit = (lv: Side, rv: Side): void => void out.push(mergeNode(lv, rv, itemAtom) as JsonValue);
  const lLen = lhs.keys.length;
  const rLen = rhs.keys.length;
  let lI = 0;
  let rI = 0;
  while (lI < lLen || rI < rLen) {
    if (lI < lLen && rI < rLen) {
      const key = lhs.keys[lI]!;
      if (key === rhs.keys[rI]) {
        emitted.add(key);
        emit(lhs.byKey.get(key), rhs.byKey.get(key));
        lI++;
        rI++;
        nextShared = shared[sharedAt++];
        continue;
      }
      // A shared item that is not due yet: it is emitted when the applied list reaches it.
      if (rhs.byKey.has(key) && nextShared !== undefined && nextShared !== key) {
        lI++;
        continue;
      }
    }
    if (lI < lLen) {
      const key = lhs.keys[lI]!;
      if (!rhs.byKey.has(key)) {
        emit(l[lI], undefined);
        lI++;
        continue;
      }
      if (emitted.has(key)) lI++;
    }
    if (rI < rLen) {
      const key = rhs.keys[rI]!;
      emitted.add(key);
      emit(lhs.byKey.get(key), rhs.byKey.get(key));
      rI++;
      if (nextShared === key) nextShared = shared[sharedAt++];
    }
  }
  return out;
}
