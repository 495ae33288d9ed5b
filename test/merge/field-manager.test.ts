/**
 * The field manager around the SSA core: managedFields encoding, times, stripping, the reset rule, the
 * update cap, subresources, conflicts as the 409 reports them, and request validation helpers.
 */
import t from 'tap';
import type { ApiObject, ManagedFieldsEntry } from '../../core/api/types.js';
import { ANCIENT_CHANGES_MANAGER, MAX_UPDATE_MANAGERS } from '../../core/merge/cap-managers.js';
import { conflictCauses } from '../../core/merge/conflicts.js';
import { ApplyConflictError, MergeError, SchemaMismatchError } from '../../core/merge/errors.js';
import { BEFORE_FIRST_APPLY_MANAGER, applyPatch, takesOwnershipShortcut, updateManagedFields, updateManagedFieldsByComparison } from '../../core/merge/field-manager.js';
import { FieldSet, fieldPE } from '../../core/merge/fieldpath.js';
import { managerFromUserAgent, managerOrUserAgent } from '../../core/merge/manager-name.js';
import type { StatusError } from '../../core/api/status.js';
import { writeOptionsFromQuery } from '../../core/request/write-options.js';
import { widgetSchema as schema } from './support/widget-schema.js';

const T0 = '2025-01-01T00:00:00Z';
const T1 = '2025-01-01T00:01:00Z';
const T2 = '2025-01-01T00:02:00Z';

const widget = (spec: Record<string, unknown>, metadata: Record<string, unknown> = {}): ApiObject => ({
  apiVersion: 'v1',
  kind: 'Widget',
  metadata: { name: 'w', ...metadata },
  spec,
});

const applyAs = (live: ApiObject | null, manager: string, obj: ApiObject, now = T0, force = false): ApiObject =>
  applyPatch(live, obj, { manager, force, apiVersion: 'v1', now, schema });

const updateAs = (live: ApiObject | null, manager: string, next: ApiObject, now = T0, extra: { subresource?: string; apiVersion?: string } = {}): ApiObject =>
  updateManagedFields(live, next, { manager, apiVersion: extra.apiVersion ?? 'v1', now, schema, ...(extra.subresource ? { subresource: extra.subresource } : {}) });

/** The stored form: the server adds uid and resourceVersion after a write. */
const stored = (o: ApiObject, rv: string): ApiObject => ({ ...o, metadata: { ...o.metadata, uid: 'uid-1', resourceVersion: rv } });

const entries = (o: ApiObject): ManagedFieldsEntry[] => o.metadata.managedFields ?? [];
const summary = (o: ApiObject): string[] => entries(o).map((e) => `${e.manager}/${e.operation}${e.subresource ? `/${e.subresource}` : ''}@${e.time ?? '-'}`);

t.test('apply on create: the object is the applied config and its applier owns what it set, type meta and server metadata aside', async (t) => {
  const out = applyAs(null, 'alice', widget({ replicas: 1 }, { labels: { app: 'a' } }));
  t.same(out, {
    apiVersion: 'v1',
    kind: 'Widget',
    metadata: {
      name: 'w',
      labels: { app: 'a' },
      managedFields: [
        { manager: 'alice', operation: 'Apply', apiVersion: 'v1', time: T0, fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:app': {} } }, 'f:spec': { 'f:replicas': {} } } },
      ],
    },
    spec: { replicas: 1 },
  });
});

t.test('rule 2: a conflicting apply fails with upstream\'s 409 message and one cause per field', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const err = t.throws(() => applyAs(live, 'bob', widget({ replicas: 2 }))) as ApplyConflictError;
  t.ok(err instanceof ApplyConflictError);
  t.equal(err.status, 409);
  t.equal(err.message, 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas');
  t.same(err.conflicts, [{ manager: 'alice', operation: 'Apply', field: '.spec.replicas' }]);
  t.same(conflictCauses(err), [{ reason: 'FieldManagerConflict', message: 'conflict with "alice"', field: '.spec.replicas' }]);
});

t.test('rule 2: conflicts with several managers are grouped per manager, updaters named with their version', async (t) => {
  let live = stored(applyAs(null, 'alice', widget({ replicas: 1, color: 'red' })), '1');
  live = stored(updateAs(live, 'ctrl', widget({ replicas: 1, color: 'red', paused: true }), T1, { apiVersion: 'v2' }), '2');
  const err = t.throws(() => applyAs(live, 'bob', widget({ replicas: 2, color: 'blue', paused: false }))) as ApplyConflictError;
  t.equal(err.message, 'Apply failed with 3 conflicts: conflicts with "alice":\n- .spec.color\n- .spec.replicas\nconflicts with "ctrl" using v2:\n- .spec.paused');
  t.same(conflictCauses(err).map((c) => c.message), ['conflict with "alice"', 'conflict with "alice"', 'conflict with "ctrl" using v2']);
});

t.test('rule 3: force changes the value and moves ownership', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1, color: 'red' })), '1');
  const out = applyAs(live, 'bob', widget({ replicas: 2 }), T1, true);
  t.same(out.spec, { replicas: 2, color: 'red' });
  t.same(entries(out).map((e) => [e.manager, e.fieldsV1]), [
    ['alice', { 'f:spec': { 'f:color': {} } }],
    ['bob', { 'f:spec': { 'f:replicas': {} } }],
  ]);
});

t.test('rule 1: an applied object carrying managedFields is rejected', async (t) => {
  t.throws(() => applyAs(null, 'alice', widget({}, { managedFields: [] })), new MergeError('metadata.managedFields must be nil', 400));
});

t.test('rule 1: with a kind given, the applied apiVersion and kind must match the endpoint', async (t) => {
  const obj = { ...widget({}), apiVersion: 'v2' };
  t.throws(() => applyPatch(null, obj, { manager: 'a', force: false, apiVersion: 'v1', kind: 'Widget', now: T0, schema }), new MergeError('invalid object type: /v2, Kind=Widget', 400));
});

t.test('rule 7: a value of the wrong type is a schema mismatch the caller answers with 422', async (t) => {
  const err = t.throws(() => applyAs(null, 'alice', widget({ replicas: 'two' }))) as SchemaMismatchError;
  t.ok(err instanceof SchemaMismatchError);
  t.equal(err.status, 422);
  t.equal(err.message, '.spec.replicas: expected numeric (int or float), got string');
  t.same(err.violations, [{ path: '.spec.replicas', message: 'expected numeric (int or float), got string' }]);
});

t.test('rule 7: several violations are listed together', async (t) => {
  const err = t.throws(() => applyAs(null, 'alice', widget({ replicas: 'two', paused: 'no', color: 3 }))) as SchemaMismatchError;
  t.equal(
    err.message,
    'errors:\n  .spec.replicas: expected numeric (int or float), got string\n  .spec.paused: expected boolean, got &{no}\n  .spec.color: expected string, got &value.valueUnstructured{Value:3}',
  );
});

t.test('rule 6: create records the writer as an Update manager with the time', async (t) => {
  const out = updateAs(null, 'kubectl-create', widget({ replicas: 1 }, { labels: { a: '1' } }));
  t.same(entries(out), [
    { manager: 'kubectl-create', operation: 'Update', apiVersion: 'v1', time: T0, fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } }, 'f:spec': { '.': {}, 'f:replicas': {} } } },
  ]);
});

t.test('rule 6: an update taking an applied field never fails and takes ownership', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1, color: 'red' })), '1');
  const out = updateAs(live, 'ctrl', widget({ replicas: 9, color: 'red' }), T1);
  t.same(summary(out), [`alice/Apply@${T0}`, `ctrl/Update@${T1}`]);
  t.same(entries(out)[0]!.fieldsV1, { 'f:spec': { 'f:color': {} } });
});

t.test('time: only a writer that changed something gets a new time', async (t) => {
  let live = stored(updateAs(null, 'a', widget({ replicas: 1 })), '1');
  live = stored(updateAs(live, 'b', widget({ replicas: 1, color: 'x' }), T1), '2');
  const out = updateAs(live, 'a', widget({ replicas: 1, color: 'x' }), T2);
  t.same(summary(out), [`a/Update@${T0}`, `b/Update@${T1}`], 'a rewrote the same values: no new time');
});

t.test('no-op: an update that changes nothing returns the stored entries untouched', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const out = updateAs(live, 'someone', structuredClone(live), T2);
  t.same(entries(out), entries(live));
});

t.test('no-op: re-applying the same configuration changes neither object nor entries', async (t) => {
  let live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  live = stored(updateAs(live, 'ctrl', { ...structuredClone(live), spec: { replicas: 1, color: 'c' } }, T1), '2');
  const out = applyAs(live, 'alice', widget({ replicas: 1 }), T2);
  t.same(out.spec, live.spec);
  t.same(entries(out), entries(live));
});

t.test('no-op: an applier that starts sharing a field without changing the object gets an entry without a time (as upstream)', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const out = applyAs(live, 'bob', widget({ replicas: 1 }), T1);
  t.same(summary(out), ['bob/Apply@-', `alice/Apply@${T0}`], 'no time sorts as the oldest');
});

t.test('entries are sorted by operation, then time, then manager', async (t) => {
  let live = stored(updateAs(null, 'zed', widget({ replicas: 1 }), T0), '1');
  live = stored(applyAs(live, 'bob', widget({ color: 'b' }), T2), '2');
  live = stored(applyAs(live, 'amy', widget({ paused: true }), T1), '3');
  live = stored(updateAs(live, 'abe', { ...structuredClone(live), spec: { ...(live.spec as object), args: ['x'] } }, T1), '4');
  t.same(summary(live), [`amy/Apply@${T1}`, `bob/Apply@${T2}`, `zed/Update@${T0}`, `abe/Update@${T1}`]);
});

t.test('strip meta: type meta and server-set metadata are never owned; labels are', async (t) => {
  const live = stored(updateAs(null, 'a', widget({ replicas: 1 })), '1');
  const next = { ...structuredClone(live), metadata: { ...structuredClone(live.metadata), generation: 2, resourceVersion: '9', uid: 'other', namespace: 'ns' } };
  const out = updateAs(live, 'b', next, T1);
  t.same(summary(out), [`a/Update@${T0}`], 'a write of server-set metadata only records nothing');
  const labelled = updateAs(live, 'b', { ...structuredClone(live), metadata: { ...structuredClone(live.metadata), labels: { x: 'y' } } }, T1);
  t.same(entries(labelled)[1]!.fieldsV1, { 'f:metadata': { 'f:labels': { '.': {}, 'f:x': {} } } });
});

t.test('rule 10: managedFields [{}] clears ownership first, then the writer owns what it changed', async (t) => {
  let live = stored(applyAs(null, 'alice', widget({ replicas: 1, color: 'red' })), '1');
  live = stored(updateAs(live, 'ctrl', { ...structuredClone(live), spec: { replicas: 1, color: 'red', paused: true } }, T1), '2');
  const next = structuredClone(live);
  next.metadata.managedFields = [{}];
  (next.spec as Record<string, unknown>).color = 'blue';
  const out = updateAs(live, 'resetter', next, T2);
  t.same(entries(out), [{ manager: 'resetter', operation: 'Update', apiVersion: 'v1', time: T2, fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:color': {} } } }]);
});

t.test('rule 10: managedFields [{}] with no other change leaves no entries', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const next = structuredClone(live);
  next.metadata.managedFields = [{}];
  const out = updateAs(live, 'resetter', next, T2);
  t.equal(out.metadata.managedFields, undefined);
});

t.test('rule 10: an empty managedFields list does not reset', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const next = structuredClone(live);
  next.metadata.managedFields = [];
  t.same(entries(updateAs(live, 'other', next, T2)), entries(live));
});

t.test('managedFields sent with an update replace the stored ones when valid', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const next = structuredClone(live);
  next.metadata.managedFields = [{ manager: 'claimed', operation: 'Apply', apiVersion: 'v1', time: T0, fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }];
  t.same(summary(updateAs(live, 'writer', next, T1)), [`claimed/Apply@${T0}`]);
  next.metadata.managedFields[0]!.fieldsV1 = { 'f:spec': { 'x:unknown': {}, 'f:replicas': { '.': {} } } };
  t.same(entries(updateAs(live, 'writer', next, T1))[0]!.fieldsV1, { 'f:spec': { 'f:replicas': {} } }, 'sent entries are written back in canonical form');
  next.metadata.managedFields = [{ manager: 'bad', operation: 'Bogus', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {} }];
  t.same(summary(updateAs(live, 'writer', next, T1)), [`alice/Apply@${T0}`], 'invalid entries fall back to the stored ones');
});

t.test('subresource: writers are keyed with the subresource and cannot set managedFields', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const next = structuredClone(live);
  next.metadata.managedFields = [{}];
  (next.spec as Record<string, unknown>).paused = true;
  const out = updateAs(live, 'ctrl', next, T1, { subresource: 'status' });
  t.same(summary(out), [`alice/Apply@${T0}`, `ctrl/Update/status@${T1}`]);
  const err = t.throws(() => applyPatch(out, widget({ replicas: 3 }), { manager: 'x', force: false, apiVersion: 'v1', now: T2, schema })) as ApplyConflictError;
  t.match(err.message, /conflict with "alice": \.spec\.replicas/);
  const viaStatus = stored(applyPatch(stored(out, '2'), widget({ paused: false }), { manager: 'ctrl', force: true, apiVersion: 'v1', subresource: 'status', now: T2, schema }), '3');
  t.same(summary(viaStatus), [`alice/Apply@${T0}`, `ctrl/Apply/status@${T2}`], 'the status applier took paused from the status updater, which is gone');
});

t.test(`cap: beyond ${MAX_UPDATE_MANAGERS} updaters the oldest fold into "${ANCIENT_CHANGES_MANAGER}"`, async (t) => {
  let live: ApiObject | null = null;
  for (let i = 0; i <= MAX_UPDATE_MANAGERS; i++) {
    const next = live ? structuredClone(live) : widget({});
    (next.spec as Record<string, unknown>).settings = { ...((next.spec as { settings?: object }).settings ?? {}), [`k${i}`]: 'v' };
    live = stored(updateAs(live, `m${String(i).padStart(2, '0')}`, next, `2025-01-01T00:00:${String(i).padStart(2, '0')}Z`), String(i + 1));
  }
  const names = entries(live!).map((e) => e.manager);
  t.equal(names.length, MAX_UPDATE_MANAGERS);
  t.same(names.slice(0, 2), [ANCIENT_CHANGES_MANAGER, 'm02']);
  const ancient = entries(live!)[0]!;
  t.equal(ancient.time, '2025-01-01T00:00:01Z', 'the newest folded time');
  t.same(ancient.fieldsV1, { 'f:spec': { '.': {}, 'f:settings': { '.': {}, 'f:k0': {}, 'f:k1': {} } } }, 'the first writer created spec and settings');
});

t.test('first apply to an object without managedFields records its existing fields as "before-first-apply"', async (t) => {
  const live = stored(widget({ replicas: 1, color: 'red' }), '1');
  const out = applyAs(live, 'alice', widget({ paused: true }), T1);
  t.same(summary(out), [`alice/Apply@${T1}`, `${BEFORE_FIRST_APPLY_MANAGER}/Update@${T1}`]);
  t.same(entries(out)[1]!.fieldsV1, { 'f:spec': { '.': {}, 'f:color': {}, 'f:replicas': {} } });
  t.throws(() => applyAs(stored(out, '2'), 'bob', widget({ color: 'blue' }), T2), ApplyConflictError);
});

t.test('reset fields: fields this endpoint resets are not recorded as owned', async (t) => {
  const resetFields = FieldSet.of([fieldPE('spec'), fieldPE('color')]);
  const out = applyPatch(null, widget({ replicas: 1, color: 'red' }), { manager: 'a', force: false, apiVersion: 'v1', now: T0, schema, resetFields });
  t.same(entries(out)[0]!.fieldsV1, { 'f:spec': { 'f:replicas': {} } });
});

t.test('stored managedFields that do not decode fail an apply with 500', async (t) => {
  const live = stored(widget({ replicas: 1 }, { managedFields: [{ manager: 'x', operation: 'Apply', apiVersion: 'v1', fieldsType: 'Other', fieldsV1: {} }] }), '1');
  t.throws(() => applyAs(live, 'a', widget({ replicas: 2 })), new MergeError('failed to decode managed fields: invalid fieldsType "Other" in managed fields entry 0', 500));
});

t.test('an update of an object the schema cannot read drops managedFields, as upstream does', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const bad = structuredClone(live);
  (bad.spec as Record<string, unknown>).containers = [{ image: 'no-name' }];
  t.equal(updateAs(live, 'x', bad, T1).metadata.managedFields, undefined);
});

t.test('inputs are not modified and results do not share metadata with them', async (t) => {
  const live = stored(applyAs(null, 'alice', widget({ replicas: 1 })), '1');
  const snapshot = JSON.stringify(live);
  const applied = widget({ replicas: 1, color: 'red' });
  const appliedSnapshot = JSON.stringify(applied);
  const out = applyAs(live, 'alice', applied, T1);
  t.equal(JSON.stringify(live), snapshot);
  t.equal(JSON.stringify(applied), appliedSnapshot);
  t.not(out.metadata, live.metadata);
  (out.spec as Record<string, unknown>).replicas = 99;
  t.equal((live.spec as { replicas: number }).replicas, 1, 'the applied result shares no nested object with the live one');
  const next = structuredClone(live);
  const nextSnapshot = JSON.stringify(next);
  updateAs(live, 'b', next, T1);
  t.equal(JSON.stringify(next), nextSnapshot);
});

t.test('manager from User-Agent: the product before the first "/"', async (t) => {
  t.equal(managerFromUserAgent('kubectl/v1.32.0 (linux/amd64) svc/abcdef'), 'kubectl');
  t.equal(managerFromUserAgent('curl/8.5.0'), 'curl');
  t.equal(managerFromUserAgent('plain'), 'plain');
  t.equal(managerFromUserAgent('bell\u0007/1'), 'bell', 'non-printable characters are dropped');
  t.equal(managerFromUserAgent('x'.repeat(200)), 'x'.repeat(128), 'at most 128 bytes');
  t.equal(managerFromUserAgent(undefined), 'unknown');
  t.equal(managerFromUserAgent('/1.0'), 'unknown');
  t.equal(managerOrUserAgent('explicit', 'curl/1'), 'explicit');
  t.equal(managerOrUserAgent(undefined, 'curl/1'), 'curl');
});

/** The option errors a PATCH's query draws, as [reason, field, message] of the 400's causes. */
function patchOptionErrors(query: Record<string, string>, apply: boolean): string[][] {
  try {
    writeOptionsFromQuery(new URLSearchParams(query), 'PatchOptions', apply);
    return [];
  } catch (e) {
    return ((e as StatusError).status.details?.causes ?? []).map((c) => [c.reason ?? '', c.field ?? '', c.message ?? '']);
  }
}

t.test('patch options: fieldManager is required for apply, force only for apply, 128 printable characters', async (t) => {
  t.same(patchOptionErrors({ fieldManager: 'a' }, true), []);
  t.same(patchOptionErrors({}, true), [['FieldValueRequired', 'fieldManager', 'Required value: is required for apply patch']]);
  t.same(patchOptionErrors({ force: 'true' }, false), [['FieldValueForbidden', 'force', 'Forbidden: may not be specified for non-apply patch']]);
  t.same(patchOptionErrors({ fieldManager: 'y'.repeat(129) }, true).map((c) => c.slice(0, 2)), [['FieldValueTooLong', 'fieldManager']]);
  t.match(patchOptionErrors({ fieldManager: 'ab\u0007' }, true).map((c) => c[2]), [/invalid character U\+0007 \(at position 2\)$/]);
});

t.test('an update by the sole owner that only changes values it owns takes the shortcut, with the outcome of the typed comparison', async (t) => {
  const opts = (manager: string, now = T1, apiVersion = 'v1') => ({ manager, apiVersion, now, schema });
  const base = widget(
    { replicas: 1, color: 'blue', selector: { app: 'a' }, settings: { a: 'x' }, tags: ['t'], args: [], strategy: { type: 'Recreate' }, template: { image: 'i1' }, extra: { k: 'v' } },
    { labels: { app: 'a' } },
  );
  const created = stored(updateAs(null, 'kubelet', base), '1');
  const withSpec = (spec: Record<string, unknown>, metadata: Record<string, unknown> = { labels: { app: 'a' } }): ApiObject => ({ ...widget({ ...base.spec as object, ...spec }, metadata) });
  const withoutColor = (): ApiObject => {
    const o = withSpec({});
    delete (o.spec as Record<string, unknown>).color;
    return o;
  };
  const bob = stored(updateAs(created, 'bob', withSpec({ color: 'red' }), T0), '2');
  const rows: { name: string; live: ApiObject; next: ApiObject; manager?: string; apiVersion?: string; shortcut: boolean }[] = [
    { name: 'an owned scalar changed', live: created, next: withSpec({ replicas: 2 }), shortcut: true },
    { name: 'a value of a granular map changed', live: created, next: withSpec({ settings: { a: 'y' } }), shortcut: true },
    { name: 'a label changed', live: created, next: withSpec({}, { labels: { app: 'b' } }), shortcut: true },
    { name: 'nothing changed', live: created, next: withSpec({}), shortcut: true },
    { name: 'server-set metadata absent from the body', live: created, next: { ...withSpec({ replicas: 3 }), metadata: { name: 'w', labels: { app: 'a' } } }, shortcut: true },
    { name: 'a value of an atomic map changed', live: created, next: withSpec({ selector: { app: 'b' } }), shortcut: false },
    { name: 'a field of an atomic struct changed', live: created, next: withSpec({ template: { image: 'i2' } }), shortcut: false },
    { name: 'a value in an untyped map changed (owned field by field, as structured-merge-diff deduces maps)', live: created, next: withSpec({ extra: { k: 'w' } }), shortcut: true },
    { name: 'a field added', live: created, next: withSpec({ paused: true }), shortcut: false },
    { name: 'a field removed', live: created, next: withoutColor(), shortcut: false },
    { name: 'a list changed', live: created, next: withSpec({ tags: ['t', 'u'] }), shortcut: false },
    { name: 'a value set to null', live: created, next: withSpec({ color: null }), shortcut: false },
    { name: 'another manager owns fields', live: bob, next: withSpec({ color: 'red', replicas: 5 }), shortcut: false },
    { name: 'the writer is another manager', live: created, next: withSpec({ replicas: 2 }), manager: 'alice', shortcut: false },
    { name: 'the writer writes another apiVersion', live: created, next: withSpec({ replicas: 2 }), apiVersion: 'v2', shortcut: false },
  ];
  for (const r of rows) {
    const o = opts(r.manager ?? 'kubelet', T1, r.apiVersion);
    t.equal(takesOwnershipShortcut(r.live, r.next, o), r.shortcut, `${r.name}: shortcut ${r.shortcut}`);
    t.same(updateManagedFields(r.live, r.next, o), updateManagedFieldsByComparison(r.live, r.next, o), `${r.name}: same outcome as the comparison`);
  }
});
