/**
 * metadata.managedFields <-> manager field sets. Decoding checks entries as upstream does and keys
 * each by its manager identity (manager, operation, apiVersion for updaters, subresource); encoding
 * writes FieldsV1 entries sorted as upstream stores them: by operation, then time (whole seconds),
 * manager, apiVersion, subresource.
 */
import type { JsonObject, ManagedFieldsEntry } from '../api/types.js';
import { MergeError } from './errors.js';
import type { FieldSet } from './field-set.js';
import { decodeFieldsV1, encodeFieldsV1 } from './fields-v1.js';
import { nestsDeeperThan } from './json-values.js';
import { type ManagerSets, managerKey, parseManagerKey } from './managers.js';

export interface ManagedState {
  sets: ManagerSets;
  /** RFC 3339 time of each manager's last change; absent for entries written without one. */
  times: Map<string, string | undefined>;
}

export const emptyManagedState = (): ManagedState => ({ sets: new Map(), times: new Map() });

// Sets are immutable, so the FieldsV1 object a set was encoded to (or decoded from, when it came
// from storage, where only this encoder writes) can be written again for it unchanged.
const encodedAs = new WeakMap<FieldSet, JsonObject>();

/** `stored`: the entries come from storage, already in canonical form, so their trees can be reused. */
export function decodeManagedFields(entries: readonly ManagedFieldsEntry[] | undefined | null, stored = false): ManagedState {
  const state = emptyManagedState();
  (entries ?? []).forEach((e, i) => {
    if (e.operation !== 'Apply' && e.operation !== 'Update') throw new MergeError('operation must be `Apply` or `Update`', 500);
    if (!e.apiVersion) throw new MergeError('apiVersion must not be empty', 500);
    if (!e.fieldsType) throw new MergeError(`missing fieldsType in managed fields entry ${i}`, 500);
    if (e.fieldsType !== 'FieldsV1') throw new MergeError(`invalid fieldsType "${e.fieldsType}" in managed fields entry ${i}`, 500);
    const key = managerKey({ manager: e.manager ?? '', operation: e.operation, apiVersion: e.apiVersion, subresource: e.subresource ?? '' });
    state.sets.set(key, { set: decodeSet(e, stored), apiVersion: e.apiVersion, applied: e.operation === 'Apply' });
    state.times.set(key, e.time ?? undefined);
  });
  return state;
}

/**
 * Nesting a FieldsV1 tree may have. Field sets mirror object paths, which our schemas keep to a few
 * levels; the set code walks its tries recursively, so a deeper tree (only a hostile request sends
 * one) is refused like any other undecodable entry (a write then keeps the live entries).
 */
export const MAX_FIELDS_V1_DEPTH = 1000;

/**
 * Sets decoded from storage by their FieldsV1 text. Objects of a kind written by one manager own the
 * same fields, so 5,000 node Leases hold one tree between them; sets are immutable, so sharing one is
 * safe. A write to any of them then decodes no tree (the per-object memo below holds 1,024 objects,
 * fewer than a cluster's nodes, whose heartbeats each missed it and decoded their entries anew).
 */
const storedSets = new Map<string, FieldSet>();
const STORED_SETS_LIMIT = 4096;

function decodeSet(e: ManagedFieldsEntry, stored: boolean): FieldSet {
  const fields = e.fieldsV1 ?? {};
  // checked before anything below prints or walks the tree
  if (nestsDeeperThan(fields, MAX_FIELDS_V1_DEPTH)) throw new MergeError(`error decoding set: exceeded max depth of ${MAX_FIELDS_V1_DEPTH}`, 500);
  try {
    if (!stored) return decodeFieldsV1(fields);
    const text = JSON.stringify(fields);
    let set = storedSets.get(text);
    if (!set) {
      set = decodeFieldsV1(fields);
      if (storedSets.size >= STORED_SETS_LIMIT) storedSets.delete(storedSets.keys().next().value!);
      storedSets.set(text, set);
      encodedAs.set(set, fields);
    }
    return set;
  } catch (err) {
    throw new MergeError(`error decoding versioned set from ${JSON.stringify(e)}: error decoding set: ${(err as Error).message}`, 500);
  }
}

const headersOf = (entries: readonly ManagedFieldsEntry[]): string =>
  entries.map((e) => `${e.manager}|${e.operation}|${e.apiVersion}|${e.time}|${e.subresource}|${e.fieldsType}|${shapeOf(e.fieldsV1)}`).join('\n');

/**
 * A cheap fingerprint of a FieldsV1 tree (key count, and a hash over each key's length, middle and
 * last characters): tells an edited or different tree from the one decoded before.
 */
function shapeOf(fields: JsonObject | undefined): string {
  let keys = 0;
  let h = 0x811c9dc5;
  const walk = (o: JsonObject): void => {
    for (const k in o) {
      keys++;
      h = Math.imul(h ^ k.length, 0x01000193);
      h = Math.imul(h ^ k.charCodeAt(k.length >> 1), 0x01000193);
      h = Math.imul(h ^ k.charCodeAt(k.length - 1), 0x01000193);
      const v = o[k];
      if (v && typeof v === 'object' && !Array.isArray(v)) walk(v);
    }
  };
  if (fields) walk(fields);
  return `${keys}:${h >>> 0}`;
}

/**
 * The latest decoded entries per object (by uid): what this process last wrote for an object, or
 * decoded from it, so the next write to it does not decode again. A hit needs the entries' headers
 * and a fingerprint of their trees to match, so an object changed elsewhere decodes afresh.
 */
const byObject = new Map<string, { headers: string; state: ManagedState }>();
const BY_OBJECT_LIMIT = 1024;

function remember(uid: string, headers: string, state: ManagedState): void {
  byObject.delete(uid);
  if (byObject.size >= BY_OBJECT_LIMIT) byObject.delete(byObject.keys().next().value!);
  byObject.set(uid, { headers, state });
}

export function decodeStoredManagedFields(meta: { uid?: string; managedFields?: ManagedFieldsEntry[] } | undefined): ManagedState {
  const entries = meta?.managedFields;
  if (!entries?.length || !meta?.uid) return decodeManagedFields(entries, true);
  const headers = headersOf(entries);
  const hit = byObject.get(meta.uid);
  if (hit && hit.headers === headers) return hit.state;
  const state = decodeManagedFields(entries, true);
  remember(meta.uid, headers, state);
  return state;
}

/** Records the entries just written for an object, decoded, for its next write. */
export function rememberManagedFields(uid: string | undefined, entries: readonly ManagedFieldsEntry[], state: ManagedState): void {
  if (uid && entries.length) remember(uid, headersOf(entries), state);
}

/** Whether entries sent with a write are, as far as a cheap look tells, the stored ones sent back. */
export function sameAsStored(sent: readonly ManagedFieldsEntry[], stored: readonly ManagedFieldsEntry[]): boolean {
  if (sent === stored) return true;
  return sent.length === stored.length && headersOf(sent) === headersOf(stored);
}

export function encodeManagedFields(state: ManagedState): ManagedFieldsEntry[] {
  const out: ManagedFieldsEntry[] = [];
  for (const [key, vs] of state.sets) {
    const id = parseManagerKey(key);
    const entry: ManagedFieldsEntry = { manager: id.manager, operation: vs.applied ? 'Apply' : 'Update', apiVersion: vs.apiVersion };
    const time = state.times.get(key);
    if (time) entry.time = time;
    entry.fieldsType = 'FieldsV1';
    entry.fieldsV1 = encodeSet(vs.set);
    if (id.subresource) entry.subresource = id.subresource;
    out.push(entry);
  }
  return sortManagedFields(out);
}

function encodeSet(set: FieldSet): JsonObject {
  let fields = encodedAs.get(set);
  if (!fields) {
    fields = encodeFieldsV1(set);
    encodedAs.set(set, fields);
  }
  return fields;
}

/** An entry's time in whole seconds (the precision upstream stores and sorts by); 0 when unset. */
export const timeSeconds = (t: string | undefined): number => {
  const ms = t ? Date.parse(t) : NaN;
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
};

export const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export function sortManagedFields(entries: ManagedFieldsEntry[]): ManagedFieldsEntry[] {
  return entries.sort(
    (p, q) =>
      cmp(p.operation ?? '', q.operation ?? '') ||
      timeSeconds(p.time) - timeSeconds(q.time) ||
      cmp(p.manager ?? '', q.manager ?? '') ||
      cmp(p.apiVersion ?? '', q.apiVersion ?? '') ||
      cmp(p.subresource ?? '', q.subresource ?? ''),
  );
}

/** `[{}]`: the one value of managedFields that clears ownership on a non-apply write. */
export function isResetManagedFields(entries: unknown): boolean {
  if (!Array.isArray(entries) || entries.length !== 1) return false;
  const e = entries[0] as Record<string, unknown> | null;
  return typeof e === 'object' && e !== null && Object.values(e).every((v) => v === undefined || v === null || v === '');
}
