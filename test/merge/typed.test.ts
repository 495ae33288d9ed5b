/**
 * Typed operations not expressible through the oracle: field sets, merge, compare and removal edge
 * cases (nulls, duplicates, untyped kind changes) and schema reconciliation (rule 9).
 */
import t from 'tap';
import type { JsonObject } from '../../core/api/types.js';
import { SchemaMismatchError, violationFieldErrors } from '../../core/merge/errors.js';
import { FieldSet, encodeFieldsV1, fieldPE, pathText } from '../../core/merge/fieldpath.js';
import { compareValues, mergeValues, reconcileWithSchema, removeItems, toFieldSet, validateValue } from '../../core/merge/typed.js';
import { s } from '../../core/schema/schema.js';
import { widgetSchema as W, widgetSchemaAtomicStrategy as W_ATOMIC } from './support/widget-schema.js';

const spec = (o: JsonObject): JsonObject => ({ spec: o });
const paths = (set: FieldSet): string[] => set.paths().map(pathText);

t.test('field set: declared struct fields are members only when null or empty; map entries and list items always', async (t) => {
  const set = toFieldSet(spec({ strategy: {}, template: null, settings: { a: 'x' }, tags: ['t'], containers: [{ name: 'c' }] }), W);
  t.same(paths(set), ['.spec.strategy', '.spec.template', '.spec.containers[name="c"]', '.spec.containers[name="c"].name', '.spec.settings.a', '.spec.tags[="t"]']);
});

t.test('field set: an empty granular list records nothing, an empty atomic list records the field', async (t) => {
  t.same(paths(toFieldSet(spec({ containers: [], args: [] }), W)), ['.spec.args']);
});

t.test('field set: duplicated list items (allowed in stored objects) are owned as one atomic item', async (t) => {
  const set = toFieldSet(spec({ containers: [{ name: 'a', image: '1' }, { name: 'a', image: '2' }, { name: 'b' }] }), W);
  t.same(encodeFieldsV1(set), { 'f:spec': { 'f:containers': { 'k:{"name":"a"}': {}, 'k:{"name":"b"}': { '.': {}, 'f:name': {} } } } });
  t.same(validateValue(spec({ containers: [{ name: 'a' }, { name: 'a' }] }), W, true), [], 'duplicates pass validation for stored objects');
});

t.test('merge: applying null to a granular struct keeps the live fields (upstream keeps the non-empty side)', async (t) => {
  t.same(mergeValues(spec({ strategy: { type: 'x' } }), spec({ strategy: null }), W), spec({ strategy: { type: 'x' } }));
  t.same(mergeValues(spec({ template: { image: 'x' } }), spec({ template: null }), W), spec({ template: null }), 'an atomic struct takes the null');
});

t.test('merge: empty objects and lists stay as given, keeping null apart from {}', async (t) => {
  t.same(mergeValues(spec({ strategy: null }), spec({ strategy: {} }), W), spec({ strategy: {} }));
  t.same(mergeValues(spec({ tags: [] }), spec({ tags: null }), W), spec({ tags: null }));
});

t.test('merge: live items sharing a key collapse into the applied item', async (t) => {
  const live = spec({ containers: [{ name: 'a', image: '1' }, { name: 'a', image: '2' }, { name: 'b' }] });
  t.same(mergeValues(live, spec({ containers: [{ name: 'a', image: '3' }] }), W), spec({ containers: [{ name: 'a', image: '3' }, { name: 'b' }] }));
});

t.test('merge: untyped values merge objects key by key, anything else is replaced', async (t) => {
  t.same(mergeValues(spec({ extra: { a: { b: 1 }, l: [1] } }), spec({ extra: { a: { c: 2 }, l: [2] } }), W), spec({ extra: { a: { b: 1, c: 2 }, l: [2] } }));
  t.same(mergeValues(spec({ extra: { a: 1 } }), spec({ extra: [1] }), W), spec({ extra: [1] }));
});

t.test('compare: removed, modified and added paths', async (t) => {
  const c = compareValues(spec({ replicas: 1, color: 'red', tags: ['a'] }), spec({ replicas: 2, tags: ['a', 'b'], paused: true }), W);
  t.same(paths(c.removed), ['.spec.color']);
  t.same(paths(c.modified), ['.spec.replicas']);
  t.same(paths(c.added), ['.spec.paused', '.spec.tags[="b"]']);
});

t.test('compare: an untyped object replaced by a list reports the old children removed and the field modified', async (t) => {
  const c = compareValues(spec({ extra: { a: { b: 1 } } }), spec({ extra: [1] }), W);
  t.same(paths(c.removed), ['.spec.extra.a', '.spec.extra.a.b']);
  t.same(paths(c.modified), ['.spec.extra']);
  t.same(paths(c.added), []);
});

t.test('compare: a key that becomes duplicated is added as one item, one that stops being duplicated is removed', async (t) => {
  const one = spec({ containers: [{ name: 'a', image: '1' }] });
  const two = spec({ containers: [{ name: 'a', image: '1' }, { name: 'a', image: '2' }] });
  const toDup = compareValues(one, two, W);
  t.same(paths(toDup.added), ['.spec.containers[name="a"]']);
  t.same(paths(toDup.removed), ['.spec.containers[name="a"]', '.spec.containers[name="a"].image', '.spec.containers[name="a"].name']);
  const fromDup = compareValues(two, one, W);
  t.same(paths(fromDup.removed), ['.spec.containers[name="a"]']);
  t.same(paths(fromDup.added), ['.spec.containers[name="a"]', '.spec.containers[name="a"].image', '.spec.containers[name="a"].name']);
});

t.test('remove: members go with their subtree; a container left empty becomes null, as upstream', async (t) => {
  const value = spec({ replicas: 1, containers: [{ name: 'a', image: 'x' }, { name: 'b' }], settings: { k: 'v' } });
  const set = toFieldSet(spec({ containers: [{ name: 'a' }], settings: { k: 'v' } }), W);
  t.same(removeItems(value, W, set), spec({ replicas: 1, containers: [{ name: 'b' }], settings: null }));
});

t.test('remove: removing below an atomic value removes the whole value (null)', async (t) => {
  const set = FieldSet.of([fieldPE('spec'), fieldPE('template'), fieldPE('image')]);
  t.same(removeItems(spec({ template: { image: 'x', pullPolicy: 'y' } }), W, set), spec({ template: null }));
});

t.test('rule 9: granular to atomic turns ownership of any child into ownership of the value', async (t) => {
  const owned = toFieldSet(spec({ strategy: { type: 'x' } }), W);
  t.same(paths(reconcileWithSchema(owned, W_ATOMIC)!), ['.spec.strategy']);
  t.equal(reconcileWithSchema(owned, W), undefined, 'no change under the schema it was recorded with');
});

t.test('rule 9: atomic to granular keeps the top-level field owned and nothing below', async (t) => {
  const owned = toFieldSet(spec({ strategy: { type: 'x' } }), W_ATOMIC);
  t.same(paths(owned), ['.spec.strategy']);
  t.equal(reconcileWithSchema(owned, W), undefined);
});

t.test('validation: a list schema with listType map but no keys is read as a set', async (t) => {
  const schema = s.struct('R', { l: s.list(s.string(), { listType: 'map' }) });
  t.same(validateValue({ l: ['a', 'a'] }, schema, false).map((e) => e.message), ['duplicate entries for key [="a"]']);
});

t.test('validation: violations convert to field errors for a 422', async (t) => {
  const err = new SchemaMismatchError('patch', validateValue(spec({ replicas: 'x' }), W, false));
  t.same(
    violationFieldErrors(err).map((e) => [e.type, e.field, e.detail]),
    [['FieldValueTypeInvalid', 'spec.replicas', 'expected numeric (int or float), got string']],
  );
});
