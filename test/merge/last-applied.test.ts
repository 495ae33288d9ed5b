/**
 * Moving from client-side to server-side apply (upstream's last-applied manager and updater in the
 * field manager chain): for the manager `kubectl`, conflicts on fields that the
 * kubectl.kubernetes.io/last-applied-configuration annotation set and that still hold its values are
 * taken over; other conflicts stand; an unusable annotation is ignored; a successful apply rewrites
 * a present annotation from the applied configuration.
 */
import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { ApplyConflictError } from '../../core/merge/errors.js';
import { applyPatch, updateManagedFields } from '../../core/merge/field-manager.js';
import { LAST_APPLIED_ANNOTATION, encodeLastApplied } from '../../core/merge/last-applied.js';
import { widgetSchema as schema } from './support/widget-schema.js';

const T0 = '2025-01-01T00:00:00Z';
const T1 = '2025-01-01T00:01:00Z';
const CSA = 'kubectl-client-side-apply';

type Spec = Record<string, unknown>;

const widget = (spec: Spec, annotations?: Record<string, string>): ApiObject => ({
  apiVersion: 'v1',
  kind: 'Widget',
  metadata: annotations ? { name: 'w', annotations } : { name: 'w' },
  spec,
});

/** The annotation kubectl's client-side apply writes: the manifest with an emptied annotations map. */
const csaAnnotation = (spec: Spec, extra: Record<string, unknown> = {}): string =>
  `${JSON.stringify({ apiVersion: 'v1', kind: 'Widget', metadata: { annotations: {}, name: 'w' }, spec, ...extra })}\n`;

/** A live object as client-side apply leaves it: written by an Update of kubectl-client-side-apply. */
function clientSideApplied(spec: Spec, annotation = csaAnnotation(spec)): ApiObject {
  const created = updateManagedFields(null, widget(spec, { [LAST_APPLIED_ANNOTATION]: annotation }), { manager: CSA, apiVersion: 'v1', now: T0, schema });
  return { ...created, metadata: { ...created.metadata, uid: 'uid-1', resourceVersion: '1' } };
}

const ssa = (live: ApiObject, manager: string, spec: Spec, force = false): ApiObject =>
  applyPatch(live, widget(spec), { manager, force, apiVersion: 'v1', now: T1, schema });

const owners = (o: ApiObject): string[] => (o.metadata.managedFields ?? []).map((e) => `${e.manager}/${e.operation}`).sort();

t.test('kubectl takes over the fields it applied client-side, changed values included, without force', async (t) => {
  const live = clientSideApplied({ replicas: 1, color: 'red' });
  const out = ssa(live, 'kubectl', { replicas: 2, color: 'red' });
  t.same(out.spec, { replicas: 2, color: 'red' }, 'the new value is applied');
  t.same(owners(out), ['kubectl-client-side-apply/Update', 'kubectl/Apply'], 'the client-side manager keeps only what kubectl did not apply');
  const mine = out.metadata.managedFields!.find((e) => e.manager === 'kubectl')!;
  t.same(mine.fieldsV1, { 'f:spec': { 'f:color': {}, 'f:replicas': {} } });
  const theirs = out.metadata.managedFields!.find((e) => e.manager === CSA)!;
  t.notOk((theirs.fieldsV1 as Record<string, Record<string, unknown>>)['f:spec']?.['f:replicas'], 'replicas moved away from the client-side manager');
});

t.test('another manager name gets the conflict: the takeover is kubectl\'s only', async (t) => {
  const live = clientSideApplied({ replicas: 1 });
  const err = t.throws(() => ssa(live, 'my-tool', { replicas: 2 })) as ApplyConflictError;
  t.ok(err instanceof ApplyConflictError);
  t.equal(err.message, 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .spec.replicas');
});

t.test('a field whose live value no longer matches the annotation still conflicts, and only it is reported', async (t) => {
  // the annotation says color red; someone changed it to blue with the same manager since
  const live = clientSideApplied({ replicas: 1, color: 'blue' }, csaAnnotation({ replicas: 1, color: 'red' }));
  const err = t.throws(() => ssa(live, 'kubectl', { replicas: 2, color: 'green' })) as ApplyConflictError;
  t.ok(err instanceof ApplyConflictError);
  t.equal(err.message, 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .spec.color');
  t.same(ssa(live, 'kubectl', { replicas: 2, color: 'green' }, true).spec, { replicas: 2, color: 'green' }, 'force still takes it');
});

t.test('a field the annotation never set (added by an update) still conflicts', async (t) => {
  const live = clientSideApplied({ replicas: 1, color: 'red' }, csaAnnotation({ replicas: 1 }));
  const err = t.throws(() => ssa(live, 'kubectl', { replicas: 2, color: 'blue' })) as ApplyConflictError;
  t.equal(err.message, 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .spec.color');
});

const unusable: [string, string][] = [
  ['not JSON', '{"apiVersion": "v1", "kind": '],
  ['JSON but not an object', '["v1","Widget"]'],
  ['no kind', `${JSON.stringify({ apiVersion: 'v1', spec: { replicas: 1 } })}\n`],
  ['another apiVersion', `${JSON.stringify({ apiVersion: 'v2', kind: 'Widget', spec: { replicas: 1 } })}\n`],
  ['a field the schema does not declare', `${JSON.stringify({ apiVersion: 'v1', kind: 'Widget', spec: { replicas: 1, bogus: true } })}\n`],
  ['a value of the wrong type', `${JSON.stringify({ apiVersion: 'v1', kind: 'Widget', spec: { replicas: 'one' } })}\n`],
  ['empty', ''],
];
for (const [what, annotation] of unusable) {
  t.test(`an annotation with ${what} is ignored: the conflict stands, nothing throws otherwise`, async (t) => {
    const live = clientSideApplied({ replicas: 1 }, annotation);
    const err = t.throws(() => ssa(live, 'kubectl', { replicas: 2 })) as ApplyConflictError;
    t.ok(err instanceof ApplyConflictError, 'a 409 conflict, not a crash');
    t.equal(err.message, 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .spec.replicas');
  });
}

t.test('an annotation of another object of the same kind only covers fields whose values happen to match', async (t) => {
  const other = `${JSON.stringify({ apiVersion: 'v1', kind: 'Widget', metadata: { name: 'other' }, spec: { replicas: 7, color: 'red' } })}\n`;
  const live = clientSideApplied({ replicas: 1, color: 'red' }, other);
  const err = t.throws(() => ssa(live, 'kubectl', { replicas: 2, color: 'blue' })) as ApplyConflictError;
  t.equal(err.message, 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .spec.replicas', 'replicas (7 vs 1) is not covered; color is');
});

t.test('a successful kubectl apply keeps the annotation current from the applied configuration', async (t) => {
  const live = clientSideApplied({ replicas: 1, color: 'red' });
  const out = ssa(live, 'kubectl', { replicas: 3 });
  t.equal(out.metadata.annotations?.[LAST_APPLIED_ANNOTATION], '{"apiVersion":"v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":3}}\n');
});

t.test('the annotation is rewritten even when the apply changes nothing else', async (t) => {
  const live = clientSideApplied({ replicas: 1 });
  const out = ssa(live, 'kubectl', { replicas: 1 });
  t.same(out.spec, { replicas: 1 });
  t.equal(out.metadata.annotations?.[LAST_APPLIED_ANNOTATION], '{"apiVersion":"v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":1}}\n');
});

t.test('no annotation, none added; another manager leaves a present annotation alone', async (t) => {
  const plain = applyPatch(null, widget({ replicas: 1 }), { manager: 'kubectl', force: false, apiVersion: 'v1', now: T0, schema });
  t.notOk(plain.metadata.annotations, 'none added on create');
  const again = ssa({ ...plain, metadata: { ...plain.metadata, uid: 'u', resourceVersion: '1' } }, 'kubectl', { replicas: 2 });
  t.notOk(again.metadata.annotations, 'none added on change');
  const live = clientSideApplied({ replicas: 1 });
  const out = ssa(live, 'my-tool', { color: 'red' });
  t.equal(out.metadata.annotations?.[LAST_APPLIED_ANNOTATION], csaAnnotation({ replicas: 1 }), 'unchanged');
});

t.test('an annotation that would exceed the annotations size limit is dropped instead', async (t) => {
  const live = clientSideApplied({ replicas: 1 });
  const big = 'x'.repeat(256 * 1024);
  const out = ssa(live, 'kubectl', { replicas: 1, color: big });
  t.notOk(out.metadata.annotations && LAST_APPLIED_ANNOTATION in out.metadata.annotations, 'dropped');
  t.equal((out.spec as Spec).color, big, 'the apply itself goes through');
});

t.test('the encoding is Go\'s: keys sorted, HTML escaped, trailing newline; the annotation itself left out, other annotations kept', async (t) => {
  const applied = widget({ color: '<b>&' }, { [LAST_APPLIED_ANNOTATION]: 'old', 'example.com/z': '1' });
  t.equal(encodeLastApplied(applied), '{"apiVersion":"v1","kind":"Widget","metadata":{"annotations":{"example.com/z":"1"},"name":"w"},"spec":{"color":"\\u003cb\\u003e\\u0026"}}\n');
  const only = widget({}, { [LAST_APPLIED_ANNOTATION]: 'old' });
  t.equal(encodeLastApplied(only), '{"apiVersion":"v1","kind":"Widget","metadata":{"annotations":{},"name":"w"},"spec":{}}\n', 'an emptied map stays');
  t.same(only.metadata.annotations, { [LAST_APPLIED_ANNOTATION]: 'old' }, 'the input is not modified');
});
