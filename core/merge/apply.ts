/**
 * The server-side apply core, structured-merge-diff's merge.Updater: `apply` merges an applied
 * configuration into the live object and re-assigns ownership; `update` records ownership for any
 * other write. Both are short sequences of named steps over typed values and field sets; the API
 * server's extras (managedFields encoding, timestamps, meta stripping, caps) live in field-manager.ts.
 */
import type { Schema } from '../schema/schema.js';
import { MergeError, SchemaMismatchError } from './errors.js';
import type { FieldSet } from './field-set.js';
import { jsonEqual } from '../api/validation.js';
import type { JsonObject, JsonValue } from './json-values.js';
import { InvalidListItem } from './list-keys.js';
import { type ManagerSets, type VersionedSet, emptySet, withSet } from './managers.js';
import type { Path } from './path-element.js';
import { pruneDropped } from './prune.js';
import { type Comparison, compareValues, mergeValues, reconcileWithSchema, toFieldSet, validateValue } from './typed.js';

export interface CoreOptions {
  schema: Schema;
  /** Fields never recorded as owned at this endpoint (upstream's reset fields, e.g. status on the main resource). */
  resetFields?: FieldSet;
}

export interface OwnershipConflict {
  /** Manager identifier (see managers.ts). */
  manager: string;
  path: Path;
}

/** Thrown by `apply` without force when the applied values change fields other managers own. */
export class OwnershipConflicts extends Error {
  constructor(readonly conflicts: readonly OwnershipConflict[]) {
    super(`${conflicts.length} ownership conflict(s)`);
  }
}

export interface ApplyResult {
  object: JsonObject;
  /** False when the merged object equals the live one (the applied values were already there). */
  changed: boolean;
  managers: ManagerSets;
}

/** Who writes: the manager's identifier, the apiVersion it writes with and everyone's current sets. */
export interface Writer {
  manager: string;
  apiVersion: string;
  managers: ManagerSets;
}

/**
 * Apply: merge the configuration into the live object, record what it sets as the applier's, prune
 * what the applier stopped applying and nobody else owns, then settle ownership of changed fields
 * (conflicts unless forced, forced fields taken from their owners).
 */
export function apply(live: JsonObject, config: JsonObject, w: Writer & { force: boolean }, opts: CoreOptions): ApplyResult {
  requireValid(config, opts.schema, 'patch', false);
  return explainInvalidItems({ live }, opts.schema, () => {
    let owners = reconcileManagers(w.managers, opts.schema);
    const merged = mergeValues(live, config, opts.schema) as JsonObject;
    const lastSet = owners.get(w.manager);
    owners = new Map(owners).set(w.manager, { set: ownedByConfig(config, opts), apiVersion: w.apiVersion, applied: true });
    const pruned = pruneDropped(merged, owners, w.manager, lastSet, opts.schema);
    owners = resolveOwnership(live, pruned, owners, w.manager, w.force, opts).managers;
    return { object: pruned, changed: !jsonEqual(live, pruned), managers: owners };
  });
}

/** Update: the writer takes the fields it changed from whoever owned them; removed fields leave everyone. */
export function update(live: JsonObject, next: JsonObject, w: Writer, opts: CoreOptions): ManagerSets {
  return explainInvalidItems({ new: next, live }, opts.schema, () => {
    const owners = reconcileManagers(w.managers, opts.schema);
    const { managers: after, comparison } = resolveOwnership(live, next, owners, w.manager, true, opts);
    const previous = after.get(w.manager)?.set ?? emptySet();
    const written = filterReset(comparison.modified.union(comparison.added), opts);
    const set = previous.difference(comparison.removed).union(written);
    const out = new Map(after);
    if (set.isEmpty()) out.delete(w.manager);
    else out.set(w.manager, { set, apiVersion: w.apiVersion, applied: false });
    return out;
  });
}

function requireValid(value: JsonValue, schema: Schema, subject: 'patch' | 'live' | 'new', allowDuplicates: boolean): void {
  const errs = validateValue(value, schema, allowDuplicates);
  if (errs.length) throw new SchemaMismatchError(subject, errs);
}

/**
 * Stored and written objects are not validated up front (their types were checked when decoded); a
 * list item without identity stops the walk, and only then are they validated to say what is wrong.
 */
function explainInvalidItems<T>(objects: Partial<Record<'live' | 'new', JsonObject>>, schema: Schema, run: () => T): T {
  try {
    return run();
  } catch (e) {
    if (!(e instanceof InvalidListItem)) throw e;
    for (const [subject, value] of Object.entries(objects) as ['live' | 'new', JsonObject][]) requireValid(value, schema, subject, true);
    throw new MergeError(`invalid list item: ${e.message}`, 500);
  }
}

/** Step: adjust recorded sets to fields whose merge type changed between granular and atomic. */
function reconcileManagers(managers: ManagerSets, schema: Schema): ManagerSets {
  let out: ManagerSets | undefined;
  for (const [key, vs] of managers) {
    const reconciled = reconcileWithSchema(vs.set, schema);
    if (reconciled) (out ??= new Map(managers)).set(key, withSet(vs, reconciled));
  }
  return out ?? managers;
}

/** Step: the fields the applied configuration sets, which its applier now owns. */
function ownedByConfig(config: JsonObject, opts: CoreOptions): FieldSet {
  return filterReset(toFieldSet(config, opts.schema), opts);
}

const filterReset = (set: FieldSet, opts: CoreOptions): FieldSet => (opts.resetFields ? set.recursiveDifference(opts.resetFields) : set);

function filterComparison(c: Comparison, opts: CoreOptions): Comparison {
  if (!opts.resetFields) return c;
  return { removed: filterReset(c.removed, opts), modified: filterReset(c.modified, opts), added: filterReset(c.added, opts) };
}

/**
 * Step: ownership after a write from `oldObj` to `newObj` by `manager`. Fields another manager owns
 * and this write changed are conflicts; unless forced they fail the write, otherwise they leave that
 * manager. Fields the write removed leave every other manager. Managers left with nothing disappear.
 */
function resolveOwnership(
  oldObj: JsonObject,
  newObj: JsonObject,
  managers: ManagerSets,
  manager: string,
  force: boolean,
  opts: CoreOptions,
): { managers: ManagerSets; comparison: Comparison } {
  const comparison = filterComparison(compareValues(oldObj, newObj, opts.schema), opts);
  const changed = comparison.modified.union(comparison.added);
  const conflicts = new Map<string, FieldSet>();
  for (const [key, vs] of managers) {
    if (key === manager) continue;
    const clash = vs.set.intersection(changed);
    if (!clash.isEmpty()) conflicts.set(key, clash);
  }
  if (!force && conflicts.size) throw new OwnershipConflicts(listConflicts(conflicts));
  const out: ManagerSets = new Map();
  for (const [key, vs] of managers) {
    let set = vs.set;
    if (key !== manager) {
      const clash = conflicts.get(key);
      if (clash) set = set.difference(clash);
      set = set.difference(comparison.removed);
    }
    if (!set.isEmpty()) out.set(key, set === vs.set ? vs : withSet(vs, set));
  }
  return { managers: out, comparison };
}

function listConflicts(conflicts: Map<string, FieldSet>): OwnershipConflict[] {
  const out: OwnershipConflict[] = [];
  for (const key of [...conflicts.keys()].sort()) conflicts.get(key)!.iterate((path) => out.push({ manager: key, path }));
  return out;
}

export type { VersionedSet };
