/**
 * Removal of a field set from a value (structured-merge-diff's RemoveItems): members are dropped with
 * everything below them, children are descended into. As upstream, a container left with nothing, or
 * an atomic value something below which was to be removed, becomes null rather than disappearing.
 */
import type { Schema } from '../schema/schema.js';
import type { FieldSet } from './field-set.js';
import { type JsonObject, type JsonValue, isObject, putKey } from './json-values.js';
import { type ListAtom, requireItemKey } from './list-keys.js';
import { type Atom, UNTYPED, atomOf, childAtom, isLeafAtom } from './schema-view.js';

export function removeItems(value: JsonValue, schema: Schema, toRemove: FieldSet): JsonValue {
  if (toRemove.isEmpty()) return value;
  return removeBelow(value, atomOf(schema), toRemove);
}

function removeBelow(value: JsonValue, atom: Atom, toRemove: FieldSet): JsonValue {
  if (atom.t === 'scalar') return value;
  if (atom.t === 'untyped') {
    if (isObject(value)) return removeFromMap(value, atom, toRemove);
    return Array.isArray(value) ? null : value;
  }
  if (isLeafAtom(atom)) return null;
  if (atom.t === 'list') return Array.isArray(value) ? removeFromList(value, atom, toRemove) : null;
  return isObject(value) ? removeFromMap(value, atom, toRemove) : null;
}

function removeFromMap(obj: JsonObject, atom: Atom, toRemove: FieldSet): JsonValue {
  let out: JsonObject | null = null;
  for (const k in obj) {
    let v = obj[k];
    if (v === undefined) continue;
    const id = `f:${k}`;
    if (toRemove.hasMemberId(id)) continue;
    const sub = toRemove.childAtId(id);
    if (sub) v = removeBelow(v, childAtom(atom, k) ?? UNTYPED, sub);
    putKey((out ??= {}), k, v);
  }
  return out;
}

function removeFromList(list: JsonValue[], atom: ListAtom, toRemove: FieldSet): JsonValue {
  const out: JsonValue[] = [];
  for (const item of list) {
    const id = requireItemKey(atom, item);
    if (toRemove.hasMemberId(id)) continue;
    const sub = toRemove.childAtId(id);
    out.push(sub ? removeBelow(item, atom.items, sub) : item);
  }
  return out.length ? out : null;
}
