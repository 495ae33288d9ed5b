/**
 * Pruning for apply: a field, list item or map entry the applier set last time but left out of this
 * configuration is removed, unless some manager (the applier included, through its new set) still
 * owns it. Follows structured-merge-diff's three passes: remove everything last applied, add back
 * what is owned, then add back what the applier never owned. Skipped when nothing was dropped.
 */
import type { Schema } from '../schema/schema.js';
import { FieldSet } from './field-set.js';
import type { JsonObject } from './json-values.js';
import type { ManagerSets, VersionedSet } from './managers.js';
import { ensureNamedFieldsAreMembers, removeItems, toFieldSet } from './typed.js';

export function pruneDropped(merged: JsonObject, managers: ManagerSets, applier: string, lastSet: VersionedSet | undefined, schema: Schema): JsonObject {
  if (!lastSet || lastSet.set.isEmpty()) return merged;
  const current = managers.get(applier)?.set;
  // Re-applying everything applied last time leaves nothing to prune.
  if (current && lastSet.set.isSubsetOf(current)) return merged;
  const named = (s: FieldSet): FieldSet => ensureNamedFieldsAreMembers(s, schema);
  const setOf = (v: JsonObject): FieldSet => named(toFieldSet(v, schema));
  const last = named(lastSet.set);
  const mergedSet = setOf(merged);
  let pruned = removeItems(merged, schema, last) as JsonObject;
  pruned = addBackOwned(merged, pruned, mergedSet, managers, lastSet.apiVersion, named, setOf, schema);
  return addBackDangling(merged, pruned, mergedSet, last, setOf, schema);
}

/** Everything removed that a manager owns goes back (one pass per apiVersion, the pruned version first). */
function addBackOwned(
  merged: JsonObject,
  pruned: JsonObject,
  mergedSet: FieldSet,
  managers: ManagerSets,
  prunedVersion: string,
  named: (s: FieldSet) => FieldSet,
  setOf: (v: JsonObject) => FieldSet,
  schema: Schema,
): JsonObject {
  // The pruned version goes first; an empty entry for it is skipped below if no manager uses it.
  const byVersion = new Map<string, FieldSet>([[prunedVersion, new FieldSet()]]);
  for (const vs of managers.values()) {
    const have = byVersion.get(vs.apiVersion);
    byVersion.set(vs.apiVersion, have ? have.union(vs.set) : vs.set);
  }
  for (const owned of byVersion.values()) {
    if (owned.isEmpty()) continue;
    const keep = setOf(pruned).union(named(owned));
    pruned = removeItems(merged, schema, mergedSet.difference(keep)) as JsonObject;
  }
  return pruned;
}

/** Of what is still removed, only what the applier owned last time stays removed. */
function addBackDangling(merged: JsonObject, pruned: JsonObject, mergedSet: FieldSet, last: FieldSet, setOf: (v: JsonObject) => FieldSet, schema: Schema): JsonObject {
  const removed = mergedSet.difference(setOf(pruned)).intersection(last);
  return removeItems(merged, schema, removed) as JsonObject;
}
