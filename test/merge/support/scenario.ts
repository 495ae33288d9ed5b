/**
 * Replays apply/update steps through the SSA core the way the ssa-oracle replays them through
 * structured-merge-diff: live object starting as {}, managers keyed as the API server keys them, a
 * failed step leaving state unchanged. Results have the oracle's output shape so the two compare.
 */
import type { JsonObject, JsonValue } from '../../../core/api/types.js';
import { OwnershipConflicts, apply, update } from '../../../core/merge/apply.js';
import { MergeError } from '../../../core/merge/errors.js';
import { encodeFieldsV1, pathText } from '../../../core/merge/fieldpath.js';
import { type ManagerSets, managerKey, parseManagerKey } from '../../../core/merge/managers.js';
import type { Schema } from '../../../core/schema/schema.js';

export interface Step {
  op: 'apply' | 'update';
  manager: string;
  apiVersion?: string;
  object: JsonObject;
  force?: boolean;
  /** The schema from this step on (a field's merge type changed); not expressible in the oracle. */
  schema?: Schema;
  /** Conflicts this step must fail with (the step then changes nothing). */
  expectConflicts?: ConflictOut[];
  /** Error text this step must fail with (schema violations). */
  expectError?: string;
}

export interface ConflictOut {
  manager: string;
  operation: string;
  apiVersion?: string;
  field: string;
}

export interface ManagedOut {
  manager: string;
  operation: string;
  apiVersion: string;
  fieldsV1: JsonObject;
}

export interface StepOut {
  ok: boolean;
  error?: string;
  conflicts: ConflictOut[];
  object: JsonValue;
  managedFields: ManagedOut[];
}

type StepOptions = Omit<Step, 'op' | 'manager' | 'object'>;
export const applyStep = (manager: string, object: JsonObject, o: StepOptions = {}): Step => ({ op: 'apply', manager, object, ...o });
export const updateStep = (manager: string, object: JsonObject, o: StepOptions = {}): Step => ({ op: 'update', manager, object, ...o });

export function runSteps(initialSchema: Schema, steps: readonly Step[]): StepOut[] {
  let schema = initialSchema;
  let live: JsonObject = {};
  let managers: ManagerSets = new Map();
  const out: StepOut[] = [];
  for (const st of steps) {
    if (st.schema) schema = st.schema;
    const version = st.apiVersion ?? 'v1';
    const res: StepOut = { ok: true, conflicts: [], object: null, managedFields: [] };
    try {
      if (st.op === 'apply') {
        const key = managerKey({ manager: st.manager, operation: 'Apply' });
        const r = apply(live, st.object, { manager: key, apiVersion: version, managers, force: st.force ?? false }, { schema });
        live = r.object;
        managers = r.managers;
      } else {
        const key = managerKey({ manager: st.manager, operation: 'Update', apiVersion: version });
        managers = update(live, st.object, { manager: key, apiVersion: version, managers }, { schema });
        live = st.object;
      }
    } catch (e) {
      res.ok = false;
      if (e instanceof OwnershipConflicts) {
        res.conflicts = conflictsOut(e);
        res.error = conflictMessage(res.conflicts);
      } else if (e instanceof MergeError) res.error = `object does not match the schema: ${e.message}`;
      else throw e;
    }
    res.object = live;
    res.managedFields = managedOut(managers);
    out.push(res);
  }
  return out;
}

function conflictsOut(e: OwnershipConflicts): ConflictOut[] {
  const list = e.conflicts.map((c) => {
    const id = parseManagerKey(c.manager);
    const o: ConflictOut = { manager: id.manager, operation: id.operation, field: pathText(c.path) };
    if (id.apiVersion) o.apiVersion = id.apiVersion;
    return o;
  });
  const rank = (c: ConflictOut): string => `${c.manager}\u0000${c.operation}\u0000${c.apiVersion ?? ''}`;
  return list.map((c, i) => ({ c, i })).sort((a, b) => (rank(a.c) < rank(b.c) ? -1 : rank(a.c) > rank(b.c) ? 1 : a.i - b.i)).map((x) => x.c);
}

function describe(c: ConflictOut): string {
  return c.operation === 'Update' ? `"${c.manager}" using ${c.apiVersion}` : `"${c.manager}"`;
}

/** The oracle's wording of a conflict error (the same as the API server's for these managers). */
function conflictMessage(cs: ConflictOut[]): string {
  if (cs.length === 1) return `Apply failed with 1 conflict: conflict with ${describe(cs[0]!)}: ${cs[0]!.field}`;
  const lines: string[] = [];
  let last = '';
  for (const c of cs) {
    const d = describe(c);
    if (d !== last) lines.push(`conflicts with ${d}:`);
    last = d;
    lines.push(`- ${c.field}`);
  }
  return `Apply failed with ${cs.length} conflicts: ${lines.join('\n')}`;
}

function managedOut(managers: ManagerSets): ManagedOut[] {
  const out: ManagedOut[] = [];
  for (const [key, vs] of managers) {
    const id = parseManagerKey(key);
    out.push({ manager: id.manager, operation: id.operation, apiVersion: vs.apiVersion, fieldsV1: encodeFieldsV1(vs.set) });
  }
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return out.sort((a, b) => cmp(a.operation, b.operation) || cmp(a.manager, b.manager) || cmp(a.apiVersion, b.apiVersion));
}
