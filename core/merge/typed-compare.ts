/**
 * Comparison of two values under the schema (structured-merge-diff's Compare, v4.4): which paths the
 * new value removed, modified (leaves whose value changed) and added. Containers that appear or
 * disappear are recorded along with everything below them; atomic values are compared whole; list
 * items with duplicate keys are compared as one atomic item. Path elements are only built for paths
 * that end up in a result.
 */
import type { Schema } from '../schema/schema.js';
import { FieldSet } from './field-set.js';
import { jsonEqual } from '../api/validation.js';
import { type JsonObject, type JsonValue, isEmptyObject, isMapLike, isObject } from './json-values.js';
import { type ListAtom, requireItemKey, requireItemPE } from './list-keys.js';
import { type PathElement, fieldPE } from './path-element.js';
import { type Atom, UNTYPED, atomOf, childAtom, isLeafAtom } from './schema-view.js';

export interface Comparison {
  removed: FieldSet;
  modified: FieldSet;
  added: FieldSet;
}

export const isSame = (c: Comparison): boolean => c.removed.isEmpty() && c.modified.isEmpty() && c.added.isEmpty();

type Side = JsonValue | undefined;

const enum Mark {
  None,
  Added,
  Removed,
  Modified,
}

/** The three result sets below one node, created on first use. */
class Level {
  removed: FieldSet | undefined;
  modified: FieldSet | undefined;
  added: FieldSet | undefined;
  mark(m: Mark, pe: PathElement): void {
    if (m === Mark.Added) (this.added ??= new FieldSet()).addMember(pe);
    else if (m === Mark.Removed) (this.removed ??= new FieldSet()).addMember(pe);
    else if (m === Mark.Modified) (this.modified ??= new FieldSet()).addMember(pe);
  }
  attach(child: Level, pe: PathElement): void {
    if (child.removed) (this.removed ??= new FieldSet()).attachChild(pe, child.removed);
    if (child.modified) (this.modified ??= new FieldSet()).attachChild(pe, child.modified);
    if (child.added) (this.added ??= new FieldSet()).attachChild(pe, child.added);
  }
  isEmpty(): boolean {
    return !this.removed && !this.modified && !this.added;
  }
}

/** What compareNode found below the node it just compared; read right after the call. */
let found: Level | undefined;

const takeFound = (): Level | undefined => {
  const l = found;
  found = undefined;
  return l;
};

export function compareValues(lhs: JsonValue, rhs: JsonValue, schema: Schema): Comparison {
  const root = new Level();
  visitContainer(lhs, rhs, atomOf(schema), root);
  return { removed: root.removed ?? new FieldSet(), modified: root.modified ?? new FieldSet(), added: root.added ?? new FieldSet() };
}

/** Compares one node; returns how the node itself changed and leaves what changed below it in `found`. */
function compareNode(lhs: Side, rhs: Side, atom: Atom): Mark {
  let leaf: Mark | undefined;
  if (atom.t === 'untyped') leaf = compareUntyped(lhs, rhs);
  else if (isLeafAtom(atom)) leaf = compareLeaf(lhs, rhs);
  else leaf = compareContainer(lhs, rhs, atom);
  if (leaf !== undefined) return leaf;
  if (lhs === undefined) return Mark.Added;
  if (rhs === undefined) return Mark.Removed;
  return Mark.None;
}

function compareLeaf(lhs: Side, rhs: Side): Mark {
  if (lhs === undefined) return Mark.Added;
  if (rhs === undefined) return Mark.Removed;
  return jsonEqual(lhs, rhs) ? Mark.None : Mark.Modified;
}

/** A leaf mark when both sides are empty (kept as a leaf), otherwise undefined with `found` set. */
function compareContainer(lhs: Side, rhs: Side, atom: Atom): Mark | undefined {
  if (bothEmpty(lhs, rhs, atom)) return compareLeaf(lhs, rhs);
  const sub = new Level();
  visitContainer(lhs, rhs, atom, sub);
  found = sub.isEmpty() ? undefined : sub;
  return undefined;
}

/**
 * Arbitrary JSON: objects are granular maps, everything else a leaf. When the kind changes, upstream
 * walks the value under both kinds, so a replaced object also reports its children as removed.
 */
function compareUntyped(lhs: Side, rhs: Side): Mark | undefined {
  const asKind = (mapLike: boolean): Mark | undefined => (mapLike ? compareContainer(lhs, rhs, UNTYPED) : compareLeaf(lhs, rhs));
  const lMap = isMapLike(lhs);
  const rMap = isMapLike(rhs);
  if (rhs === undefined) return asKind(lMap);
  if (lhs === undefined || lMap === rMap) return asKind(rMap);
  const first = asKind(lMap);
  const firstFound = takeFound();
  const second = asKind(rMap);
  found ??= firstFound;
  return first === Mark.Modified || second === Mark.Modified ? Mark.Modified : second;
}

function bothEmpty(lhs: Side, rhs: Side, atom: Atom): boolean {
  if (atom.t === 'list') return emptyList(lhs) && emptyList(rhs);
  return emptyMap(lhs) && emptyMap(rhs);
}

const emptyList = (v: Side): boolean => !Array.isArray(v) || v.length === 0;

const emptyMap = (v: Side): boolean => !isObject(v) || isEmptyObject(v);

function visitContainer(lhs: Side, rhs: Side, atom: Atom, level: Level): void {
  if (atom.t === 'list') visitList(lhs, rhs, atom, level);
  else visitMap(isObject(lhs) ? lhs : undefined, isObject(rhs) ? rhs : undefined, atom, level);
}

/** Records a child's changes in its parent's level; the child's path element is built only then. */
function record(level: Level, mark: Mark, below: Level | undefined, field: string | null, list?: ListAtom, item?: JsonValue): void {
  if (mark === Mark.None && !below) return;
  const p = field !== null ? fieldPE(field) : requireItemPE(list!, item!);
  if (below) level.attach(below, p);
  level.mark(mark, p);
}

function visitMap(l: JsonObject | undefined, r: JsonObject | undefined, atom: Atom, level: Level): void {
  if (l) {
    for (const k in l) {
      const lv = l[k];
      if (lv === undefined) continue;
      const mark = compareNode(lv, r?.[k], childAtom(atom, k) ?? UNTYPED);
      record(level, mark, takeFound(), k);
    }
  }
  if (r) {
    for (const k in r) {
      const rv = r[k];
      if (rv === undefined || (l && l[k] !== undefined)) continue;
      const mark = compareNode(undefined, rv, childAtom(atom, k) ?? UNTYPED);
      record(level, mark, takeFound(), k);
    }
  }
}

/** Items of one list by key, in first-seen order; items sharing a key also go to `dups`. */
interface Grouped {
  first: Map<string, JsonValue>;
  dups: Map<string, JsonValue[]> | undefined;
}

function groupItems(list: Side, atom: ListAtom, order: string[], other?: Grouped): Grouped {
  const g: Grouped = { first: new Map(), dups: undefined };
  if (!Array.isArray(list)) return g;
  for (const item of list) {
    const key = requireItemKey(atom, item);
    const seen = g.first.get(key);
    if (seen === undefined) {
      g.first.set(key, item);
      if (!other?.first.has(key)) order.push(key);
      continue;
    }
    g.dups ??= new Map();
    const d = g.dups.get(key);
    if (d) d.push(item);
    else g.dups.set(key, [seen, item]);
  }
  return g;
}

const itemsOf = (g: Grouped, key: string): JsonValue[] => {
  const d = g.dups?.get(key);
  if (d) return d;
  const v = g.first.get(key);
  return v === undefined ? NONE : [v];
};

const NONE: JsonValue[] = [];

function visitList(lhs: Side, rhs: Side, atom: ListAtom, level: Level): void {
  const order: string[] = [];
  const left = groupItems(lhs, atom, order);
  const right = groupItems(rhs, atom, order, left);
  const itemAtom = atom.items;
  for (const key of order) {
    if (!left.dups?.has(key) && !right.dups?.has(key)) {
      const lv = left.first.get(key);
      const rv = right.first.get(key);
      const mark = compareNode(lv, rv, itemAtom);
      record(level, mark, takeFound(), null, atom, (lv ?? rv)!);
      continue;
    }
    const ls = itemsOf(left, key);
    const rs = itemsOf(right, key);
    const first = (ls[0] ?? rs[0])!;
    if (ls.length >= 2 && rs.length >= 2) {
      if (ls.length !== rs.length || ls.some((v, i) => !jsonEqual(v, rs[i]))) level.mark(Mark.Modified, requireItemPE(atom, first));
    } else if (ls.length >= 2) {
      if (rs.length) record(level, compareNode(undefined, rs[0], itemAtom), takeFound(), null, atom, first);
      level.mark(Mark.Removed, requireItemPE(atom, first));
    } else {
      if (ls.length) record(level, compareNode(ls[0], undefined, itemAtom), takeFound(), null, atom, first);
      level.mark(Mark.Added, requireItemPE(atom, first));
    }
  }
}
