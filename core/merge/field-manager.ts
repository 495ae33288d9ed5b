/**
 * The API server's field manager around the SSA core, as upstream's fieldmanager chain does it:
 * decoding and encoding metadata.managedFields, manager identities (with apiVersion and subresource),
 * the "before-first-apply" owner for objects without managedFields, time stamps, stripping of type
 * meta and server-set metadata, the cap on update entries, the `[{}]` reset and no-op preservation,
 * and kubectl's move from client-side apply (last-applied.ts).
 *
 * No-op handling: an apply stamps its applier's time only when the object changed (as upstream); an
 * update stamps the writer only when it changed some field. When the object and the entries (times
 * aside) come out as they went in, the live managedFields are returned untouched (order and times),
 * which is upstream's IgnoreManagedFieldsTimestampsTransformer.
 */
import type { ApiObject, JsonObject, ManagedFieldsEntry } from '../api/types.js';
import type { StructSchema } from '../schema/schema.js';
import { type CoreOptions, OwnershipConflicts, apply, update } from './apply.js';
import { capUpdateManagers } from './cap-managers.js';
import { toApplyConflictError } from './conflicts.js';
import { MergeError } from './errors.js';
import type { FieldSet } from './field-set.js';
import { jsonEqual } from '../api/validation.js';
import { cloneJson } from './json-values.js';
import { LAST_APPLIED_MANAGER, conflictsBeyondLastApplied, fieldsStillAsLastApplied, refreshLastApplied } from './last-applied.js';
import { type ManagedState, decodeManagedFields, decodeStoredManagedFields, rememberManagedFields, sameAsStored, emptyManagedState, encodeManagedFields, isResetManagedFields } from './managed-fields.js';
import { UNKNOWN_MANAGER } from './manager-name.js';
import { type ManagerSets, managerKey } from './managers.js';
import { SERVER_SET_METADATA, stripMeta } from './strip-meta.js';
import { reconcileWithSchema } from './set-schema.js';

export interface FieldManagerOptions {
  manager: string;
  apiVersion: string;
  subresource?: string;
  /** RFC 3339 time written into the acting manager's entry. */
  now: string;
  schema: StructSchema;
  /** Fields this endpoint never records as owned (upstream's reset fields, e.g. status on the main resource). */
  resetFields?: FieldSet;
}

export interface ApplyOptions extends FieldManagerOptions {
  force: boolean;
  /** When given, the applied object must carry this kind and `apiVersion` (upstream's version check). */
  kind?: string;
}

/** Manager upstream records for the fields an object already had when it is first applied to. */
export const BEFORE_FIRST_APPLY_MANAGER = 'before-first-apply';

/** Server-side apply of `applied` onto `live` (null: create). Throws ApplyConflictError, MergeError. */
export function applyPatch(live: ApiObject | null, applied: ApiObject, opts: ApplyOptions): ApiObject {
  checkAppliedObject(applied, opts);
  const liveObj = live ? withoutManagedFields(live) : {};
  let state = decodeLive(live);
  if (live && state.sets.size === 0) state = recordUpdate(emptyObjectFor(), liveObj, state, { ...opts, manager: BEFORE_FIRST_APPLY_MANAGER });
  const key = managerKey({ manager: opts.manager, operation: 'Apply', subresource: opts.subresource ?? '' });
  const run = (force: boolean) =>
    apply(liveObj, applied as unknown as JsonObject, { manager: key, apiVersion: opts.apiVersion, managers: state.sets, force }, coreOptions(opts));
  let result;
  try {
    result = run(opts.force);
  } catch (e) {
    if (!(e instanceof OwnershipConflicts)) throw e;
    // kubectl moving from client-side apply: conflicts on fields still as last applied are taken over
    const remaining = live && opts.manager === LAST_APPLIED_MANAGER ? conflictsBeyondLastApplied(e.conflicts, fieldsStillAsLastApplied(live, opts.schema, opts.apiVersion)) : e.conflicts;
    if (remaining.length) throw toApplyConflictError(remaining);
    result = run(true);
  }
  const times = new Map(state.times);
  if (result.changed) times.set(key, opts.now);
  const next = { sets: keepUnchangedSets(state.sets, stripMeta(result.managers, key)), times };
  // The merge shares untouched subtrees with the live and applied objects; callers go on to mutate
  // the result (defaulting, server-set fields), so it gets its own copy.
  const out = withManagedFields(cloneJson(result.changed ? (result.object ?? {}) : liveObj), live, next, !result.changed);
  if (opts.manager === LAST_APPLIED_MANAGER) refreshLastApplied(out, applied);
  return out;
}

/** Ownership for a create, update or non-apply patch; never fails on conflicts. */
export function updateManagedFields(live: ApiObject | null, next: ApiObject, opts: FieldManagerOptions): ApiObject {
  return trackedUpdate(live, next, opts, true);
}

/** Whether updateManagedFields takes its shortcut for this write (soleOwnerRewrite), for the tests that hold it to the comparison. */
export function takesOwnershipShortcut(live: ApiObject, next: ApiObject, opts: FieldManagerOptions): boolean {
  return soleOwnerRewrite(withoutManagedFields(live), withoutManagedFields(next), managersForUpdate(live, next, !!opts.subresource), opts) !== undefined;
}

/** updateManagedFields always by the typed comparison of the two objects (the tests hold the shortcut to it). */
export function updateManagedFieldsByComparison(live: ApiObject | null, next: ApiObject, opts: FieldManagerOptions): ApiObject {
  return trackedUpdate(live, next, opts, false);
}

function trackedUpdate(live: ApiObject | null, next: ApiObject, opts: FieldManagerOptions, shortcut: boolean): ApiObject {
  const liveObj = live ? withoutManagedFields(live) : {};
  const nextObj = withoutManagedFields(next);
  try {
    const before = managersForUpdate(live, next, !!opts.subresource);
    const same = shortcut && live ? soleOwnerRewrite(liveObj, nextObj, before, opts) : undefined;
    if (same) return withManagedFields(nextObj, live, same.state, same.objectUnchanged);
    const state = capUpdateManagers(recordUpdate(liveObj, nextObj, before, opts));
    return withManagedFields(nextObj, live, { sets: keepUnchangedSets(before.sets, state.sets), times: state.times }, jsonEqual(liveObj, nextObj));
  } catch (e) {
    // As upstream's UpdateNoErrors: an object the schema cannot read loses its managedFields.
    if (e instanceof MergeError) return nextObj as unknown as ApiObject;
    throw e;
  }
}

function coreOptions(opts: FieldManagerOptions): CoreOptions {
  return opts.resetFields ? { schema: opts.schema, resetFields: opts.resetFields } : { schema: opts.schema };
}

/** Upstream's checks of an applied object before merging: no managedFields, and (when given) the endpoint's kind. */
export function checkAppliedObject(applied: ApiObject, opts: { apiVersion: string; kind?: string }): void {
  if (Array.isArray(applied.metadata?.managedFields)) throw new MergeError('metadata.managedFields must be nil', 400);
  if (opts.kind !== undefined && (applied.apiVersion !== opts.apiVersion || applied.kind !== opts.kind)) {
    throw new MergeError(`invalid object type: ${gvkText(applied.apiVersion ?? '', applied.kind ?? '')}`, 400);
  }
}

/** schema.GroupVersionKind's %v: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod` for the core group. */
function gvkText(apiVersion: string, kind: string): string {
  const gv = apiVersion.includes('/') ? apiVersion : `/${apiVersion}`;
  return `${gv}, Kind=${kind}`;
}

function decodeLive(live: ApiObject | null): ManagedState {
  try {
    return decodeStoredManagedFields(live?.metadata);
  } catch (e) {
    throw new MergeError(`failed to decode managed fields: ${(e as Error).message}`, 500);
  }
}

const decodeLiveOrEmpty = (live: ApiObject | null): ManagedState => {
  try {
    return decodeStoredManagedFields(live?.metadata);
  } catch {
    return emptyManagedState();
  }
};

/**
 * Whose ownership an update starts from: the live entries; none after a `[{}]` reset; or the entries
 * the request carries when they are valid and not empty (never through a subresource).
 */
function managersForUpdate(live: ApiObject | null, next: ApiObject, isSubresource: boolean): ManagedState {
  if (isSubresource) return decodeLiveOrEmpty(live);
  const sent = next.metadata?.managedFields;
  if (isResetManagedFields(sent)) return emptyManagedState();
  const stored = live?.metadata?.managedFields;
  if (!sent?.length || (stored && sameAsStored(sent, stored))) return decodeLiveOrEmpty(live);
  try {
    const state = decodeManagedFields(sent);
    if (state.sets.size > 0) return state;
  } catch {
    // Invalid entries in the request fall back to the live ones.
  }
  return decodeLiveOrEmpty(live);
}

const CURRENT_OPERATION = managerKey({ manager: 'current-operation', operation: 'Update' });

/**
 * Records a write from `before` to `after` by an updater: the fields it changed (type meta and
 * server-set metadata aside) join what it owned, taken from whoever owned them; its time is stamped
 * only when it changed something.
 */
function recordUpdate(before: JsonObject, after: JsonObject, state: ManagedState, opts: FieldManagerOptions): ManagedState {
  const key = managerKey({ manager: opts.manager || UNKNOWN_MANAGER, operation: 'Update', apiVersion: opts.apiVersion, subresource: opts.subresource ?? '' });
  const written = update(before, after, { manager: CURRENT_OPERATION, apiVersion: opts.apiVersion, managers: state.sets }, coreOptions(opts));
  const sets = new Map(stripMeta(written, CURRENT_OPERATION));
  const times = new Map(state.times);
  const changed = sets.get(CURRENT_OPERATION);
  if (changed) {
    sets.delete(CURRENT_OPERATION);
    const previous = sets.get(key);
    sets.set(key, { set: previous ? changed.set.union(previous.set) : changed.set, apiVersion: opts.apiVersion, applied: false });
    times.set(key, opts.now);
  }
  return { sets, times };
}

/** Where a level of the walk below is: the object's top, its metadata, or anywhere else. */
const enum Level {
  Top,
  Metadata,
  Inner,
}

/** Fields the server sets, which no manager owns (strip-meta.ts): their values do not move ownership. */
const serverSet = (level: Level, k: string): boolean => (level === Level.Top ? k === 'apiVersion' || k === 'kind' : level === Level.Metadata && SERVER_SET_METADATA.has(k));

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/**
 * The common rewrite of an object by its one owner (a kubelet renewing its Lease, a controller
 * rewriting its ConfigMap): the writer is the only manager, and the write changes only values of
 * fields it already owns (no field added or removed, nothing in a non-empty list). recordUpdate
 * would take the changed fields from their owner and give them back, leaving every set as it was and
 * stamping the writer's time: that outcome, found by a walk of the two objects instead of their typed
 * comparison and set algebra (about a tenth of the CPU of a lease PUT). Undefined whenever any of
 * that does not hold: the caller then runs recordUpdate.
 */
function soleOwnerRewrite(before: JsonObject, after: JsonObject, state: ManagedState, opts: FieldManagerOptions): { state: ManagedState; objectUnchanged: boolean } | undefined {
  if (state.sets.size !== 1 || opts.resetFields) return undefined;
  const key = managerKey({ manager: opts.manager || UNKNOWN_MANAGER, operation: 'Update', apiVersion: opts.apiVersion, subresource: opts.subresource ?? '' });
  const vs = state.sets.get(key);
  if (!vs || vs.applied || vs.apiVersion !== opts.apiVersion || reconcileWithSchema(vs.set, opts.schema) !== undefined) return undefined;
  let changed = 0;
  /** Compares one object level against the writer's set there; false: not the shortcut's case. */
  const walk = (a: JsonObject, b: JsonObject, owned: FieldSet | undefined, level: Level): boolean => {
    let n = 0;
    for (const k in a) {
      const id = `f:${k}`;
      if (serverSet(level, k)) {
        // changed or not, present or not: it moves nothing, unless a set names it (entries a client sent)
        if (owned && (owned.hasMemberId(id) || owned.childAtId(id))) return false;
        continue;
      }
      n++;
      if (!hasOwn(b, k)) return false;
      const x = a[k];
      const y = b[k];
      if (x === y) continue;
      if (x === null || y === null || typeof x !== typeof y) return false;
      if (typeof x !== 'object') {
        // a changed value: the writer must own exactly this field (not an atomic parent of it)
        if (!owned?.hasMemberId(id)) return false;
        changed++;
        continue;
      }
      if (Array.isArray(x) || Array.isArray(y)) {
        // lists have their own ownership rules (keys, sets, atomic): only an empty one on both sides passes
        if (!Array.isArray(x) || !Array.isArray(y) || x.length !== 0 || y.length !== 0) return false;
        continue;
      }
      if (!walk(x as JsonObject, y as JsonObject, owned?.childAtId(id), level === Level.Top && k === 'metadata' ? Level.Metadata : Level.Inner)) return false;
    }
    for (const k in b) {
      if (serverSet(level, k)) {
        if (owned && (owned.hasMemberId(`f:${k}`) || owned.childAtId(`f:${k}`))) return false;
        continue;
      }
      if (--n < 0 || !hasOwn(a, k)) return false;
    }
    return n === 0;
  };
  if (!walk(before, after, vs.set, Level.Top)) return undefined;
  if (changed === 0) return { state, objectUnchanged: jsonEqual(before, after) };
  const times = new Map(state.times);
  times.set(key, opts.now);
  return { state: { sets: state.sets, times }, objectUnchanged: false };
}

/** Keeps the earlier set object of a manager whose fields did not change, so its encoding is reused. */
function keepUnchangedSets(before: ManagerSets, after: ManagerSets): ManagerSets {
  let out: ManagerSets | undefined;
  for (const [key, vs] of after) {
    const old = before.get(key);
    if (!old || old.set === vs.set || old.apiVersion !== vs.apiVersion || old.applied !== vs.applied || !old.set.equals(vs.set)) continue;
    (out ??= new Map(after)).set(key, old);
  }
  return out ?? after;
}

/** Upstream starts an object's first apply from an empty object of the kind. */
const emptyObjectFor = (): JsonObject => ({});

function withoutManagedFields(obj: ApiObject): JsonObject {
  const o = obj as unknown as JsonObject;
  const meta = obj.metadata as unknown as JsonObject | undefined;
  if (!meta || !('managedFields' in meta)) return o;
  const { managedFields: _dropped, ...rest } = meta;
  return { ...o, metadata: rest };
}

/** The object to return: `obj` with the encoded entries, or with the live ones when nothing changed. */
function withManagedFields(obj: JsonObject, live: ApiObject | null, state: ManagedState, objectUnchanged: boolean): ApiObject {
  let entries = encodeManagedFields(state);
  const liveEntries = live?.metadata?.managedFields;
  if (objectUnchanged && liveEntries && sameEntriesIgnoringTime(entries, liveEntries)) entries = liveEntries.map((e) => ({ ...e }));
  else rememberManagedFields(live?.metadata?.uid, entries, state);
  const meta = { ...((obj.metadata as JsonObject | undefined) ?? {}) };
  if (entries.length) meta.managedFields = entries as unknown as JsonObject[];
  else delete meta.managedFields;
  return { ...obj, metadata: meta } as unknown as ApiObject;
}

function sameEntriesIgnoringTime(a: ManagedFieldsEntry[], b: ManagedFieldsEntry[]): boolean {
  if (a.length !== b.length) return false;
  const key = (e: ManagedFieldsEntry): string => JSON.stringify([e.manager, e.operation, e.apiVersion, e.subresource ?? '', e.fieldsType]);
  const byKey = new Map(b.map((e) => [key(e), e]));
  return a.every((e) => {
    const o = byKey.get(key(e));
    return o !== undefined && jsonEqual(e.fieldsV1 as JsonObject, (o.fieldsV1 ?? {}) as JsonObject);
  });
}
