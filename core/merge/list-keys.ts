/**
 * Identity of list items for set and map lists: a set item is keyed by its value (`v:"a"`), a
 * map-list item by its key fields (`k:{"name":"web"}`), using a key field's schema default when the
 * item omits it. `itemKey` gives the identifying text alone (what merges and comparisons need);
 * `itemPE` the full path element. Failures carry upstream's message text.
 */
import { goJson, goJsonString } from './go-format.js';
import { type JsonValue, isObject } from './json-values.js';
import { type KeyField, type PathElement, keyPE, valuePE } from './path-element.js';
import { type ListAtom, keyDefault } from './schema-view.js';

export type { ListAtom };

/** Why a list item has no identity. */
export class ItemKeyError {
  constructor(readonly message: string) {}
}

/** A list item without identity found by a walker that trusts its input; callers re-validate. */
export class InvalidListItem extends Error {}

// Set items repeat across objects (finalizers, verbs): their elements are shared.
const valueCache = new Map<string, PathElement>();
const VALUE_CACHE_LIMIT = 20000;

export function itemKey(list: ListAtom, item: JsonValue): string | ItemKeyError {
  if (list.keys.length === 0) {
    const bad = setItemProblem(item);
    return bad ? new ItemKeyError(bad) : `v:${goJson(item)}`;
  }
  if (item === null) return new ItemKeyError('associative list with keys may not have a null element');
  if (!isObject(item)) return new ItemKeyError('associative list with keys may not have non-map elements');
  let id = 'k:{';
  for (let i = 0; i < list.sortedKeys.length; i++) {
    const name = list.sortedKeys[i]!;
    const value = keyValue(list, item, name);
    if (value === undefined) return new ItemKeyError(omitsKey(name));
    if (i > 0) id += ',';
    id += list.keyLabels[i]! + (typeof value === 'string' ? goJsonString(value) : goJson(value));
  }
  return `${id}}`;
}

/** itemKey for walkers over values validated earlier or trusted (stored objects). */
export function requireItemKey(list: ListAtom, item: JsonValue): string {
  const k = itemKey(list, item);
  if (typeof k !== 'string') throw new InvalidListItem(k.message);
  return k;
}

/** The item's path element, or the reason it has none. */
export function itemPE(list: ListAtom, item: JsonValue): PathElement | string {
  if (list.keys.length > 0) return keyedItemPE(list, item);
  const bad = setItemProblem(item);
  if (bad) return bad;
  if (typeof item !== 'string') return valuePE(item);
  let pe = valueCache.get(item);
  if (!pe) {
    if (valueCache.size >= VALUE_CACHE_LIMIT) valueCache.clear();
    valueCache.set(item, (pe = valuePE(item)));
  }
  return pe;
}

export function requireItemPE(list: ListAtom, item: JsonValue): PathElement {
  const pe = itemPE(list, item);
  if (typeof pe === 'string') throw new InvalidListItem(pe);
  return pe;
}

function setItemProblem(item: JsonValue): string | undefined {
  if (isObject(item)) return "associative list without keys has an element that's a map type";
  if (Array.isArray(item)) return 'not supported: associative list with lists as elements';
  if (item === null) return "associative list without keys has an element that's an explicit null";
  return undefined;
}

const omitsKey = (name: string): string => `associative list with keys has an element that omits key field "${name}" (and doesn't have default value)`;

const keyValue = (list: ListAtom, item: Record<string, JsonValue | undefined>, name: string): JsonValue | undefined =>
  item[name] !== undefined ? item[name] : keyDefault(list, name);

function keyedItemPE(list: ListAtom, item: JsonValue): PathElement | string {
  if (item === null) return 'associative list with keys may not have a null element';
  if (!isObject(item)) return 'associative list with keys may not have non-map elements';
  const fields: KeyField[] = [];
  for (const name of list.keys) {
    const value = keyValue(list, item, name);
    if (value === undefined) return omitsKey(name);
    fields.push({ name, value });
  }
  return keyPE(fields);
}
