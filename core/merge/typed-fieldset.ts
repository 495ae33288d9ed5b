/**
 * The field set of a value: which paths an object sets, as structured-merge-diff's ToFieldSet
 * records them. Leaves (scalars, atomic lists/maps/structs) are members; a declared struct field is a
 * member only when null or an empty object; map entries and list items are always members. Duplicate
 * items of a set or map list are recorded once, as an atomic member.
 */
import type { Schema } from '../schema/schema.js';
import { FieldSet } from './field-set.js';
import { type JsonObject, type JsonValue, isEmptyObject, isObject } from './json-values.js';
import { type ListAtom, requireItemPE } from './list-keys.js';
import { type PathElement, fieldPE } from './path-element.js';
import { type Atom, UNTYPED, atomOf, childAtom, isLeafAtom } from './schema-view.js';

export function toFieldSet(value: JsonValue, schema: Schema): FieldSet {
  return childrenOf(value, atomOf(schema)) ?? new FieldSet();
}

/** The set of paths below a value of this atom, or undefined when there are none. */
function childrenOf(value: JsonValue, atom: Atom): FieldSet | undefined {
  if (isLeafAtom(atom)) return undefined;
  if (atom.t === 'list') return Array.isArray(value) ? listChildren(value, atom) : undefined;
  if (!isObject(value)) return undefined;
  return mapChildren(value, atom);
}

function mapChildren(obj: JsonObject, atom: Atom): FieldSet | undefined {
  let out: FieldSet | undefined;
  const declaresFields = atom.t === 'struct';
  for (const key in obj) {
    const v = obj[key];
    if (v === undefined) continue;
    const pe = fieldPE(key);
    const cAtom = childAtom(atom, key) ?? UNTYPED;
    if (isLeafAtom(cAtom)) {
      (out ??= new FieldSet()).addMember(pe);
      continue;
    }
    const sub = childrenOf(v, cAtom);
    if (sub) (out ??= new FieldSet()).attachChild(pe, sub);
    const untypedLeaf = cAtom.t === 'untyped' && !isObject(v);
    if (v === null || (isObject(v) && isEmptyObject(v)) || !declaresFields || untypedLeaf) {
      (out ??= new FieldSet()).addMember(pe);
    }
  }
  return out;
}

function listChildren(list: JsonValue[], atom: ListAtom): FieldSet | undefined {
  if (list.length === 0) return undefined;
  const out = new FieldSet();
  const pes: PathElement[] = new Array(list.length);
  const seen = new Set<string>();
  const duplicated = new Set<string>();
  for (let i = 0; i < list.length; i++) {
    const pe = requireItemPE(atom, list[i]!);
    pes[i] = pe;
    if (seen.has(pe.id)) duplicated.add(pe.id);
    seen.add(pe.id);
  }
  const itemAtom = atom.items;
  for (let i = 0; i < list.length; i++) {
    const pe = pes[i]!;
    if (!duplicated.has(pe.id)) {
      const sub = childrenOf(list[i]!, itemAtom);
      if (sub) out.attachChild(pe, sub);
    }
    out.addMember(pe);
  }
  return out;
}
