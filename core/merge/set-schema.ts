/**
 * Field-set adjustments that need the schema: marking declared struct fields that have owned
 * children as members themselves (so pruning can tell a field from its contents), and reconciling a
 * manager's set after a field changed between granular and atomic (ownership of any part of a
 * now-atomic value becomes ownership of the whole value; the reverse needs nothing).
 */
import type { Schema } from '../schema/schema.js';
import { FieldSet } from './field-set.js';
import type { PathElement } from './path-element.js';
import { type Atom, atomOf, childAtom } from './schema-view.js';

/** The schema of the node under `pe`, or undefined when the path leaves the schema. */
function atomBelow(atom: Atom | undefined, pe: PathElement): Atom | undefined {
  if (!atom) return undefined;
  if (pe.kind === 'field') return childAtom(atom, pe.name);
  if (pe.kind === 'key' && atom.t === 'list') return atom.items;
  return undefined;
}

export function ensureNamedFieldsAreMembers(set: FieldSet, schema: Schema): FieldSet {
  return ensureLevel(set, atomOf(schema));
}

function ensureLevel(set: FieldSet, atom: Atom | undefined): FieldSet {
  const out = new FieldSet();
  for (const n of set.nodeValues()) {
    if (n.member) out.addMember(n.pe);
    if (!n.child) continue;
    if (n.pe.kind === 'field' && atom?.t === 'struct' && atom.field(n.pe.name)) out.addMember(n.pe);
    out.attachChild(n.pe, ensureLevel(n.child, atomBelow(atom, n.pe)));
  }
  return out;
}

// The result depends only on the set and the schema, and sets are immutable: remembered per set.
const reconciled = new WeakMap<FieldSet, { schema: Schema; result: FieldSet | undefined }>();

/** The set adjusted to the current schema, or undefined when it needs no change. */
export function reconcileWithSchema(set: FieldSet, schema: Schema): FieldSet | undefined {
  const hit = reconciled.get(set);
  if (hit && hit.schema === schema) return hit.result;
  const atomicPaths = new FieldSet();
  walk(set, atomOf(schema), false, [], atomicPaths);
  const result = atomicPaths.isEmpty() ? undefined : set.recursiveDifference(atomicPaths).union(atomicPaths);
  reconciled.set(set, { schema, result });
  return result;
}

function walk(set: FieldSet | undefined, atom: Atom, isAtomicNode: boolean, path: PathElement[], atomicPaths: FieldSet): void {
  switch (atom.t) {
    case 'scalar':
    case 'untyped':
      return;
    case 'list':
      if (!isAtomicNode && atom.rel === 'atomic') return atomicPaths.insert(path);
      break;
    default:
      if (!isAtomicNode && atom.atomic) {
        if (set && !set.isEmpty()) atomicPaths.insert(path);
        return;
      }
  }
  if (!set) return;
  for (const n of set.nodeValues()) {
    const below = atomBelowForReconcile(atom, n.pe);
    if (!below) continue;
    path.push(n.pe);
    walk(n.child, below, n.member && !n.child, path, atomicPaths);
    path.pop();
  }
}

/** Like atomBelow, but a map list descends into items by any path element, as upstream does. */
function atomBelowForReconcile(atom: Atom, pe: PathElement): Atom | undefined {
  if (atom.t === 'list') return atom.items;
  if (pe.kind !== 'field') return atom.t === 'map' ? atom.values : undefined;
  return atomBelow(atom, pe);
}
