/**
 * JSON Patch (RFC 6902) as the API server applies it: every operation, upstream's quirks and the exact
 * error messages and statuses.
 */
import t from 'tap';
import type { JsonValue } from '../../core/api/types.js';
import { MergeError } from '../../core/merge/errors.js';
import { applyJsonPatch } from '../../core/merge/json-patch.js';

interface Case {
  name: string;
  doc: JsonValue;
  patch: unknown;
  expect?: JsonValue;
  error?: string;
  status?: number;
}

const doc = { metadata: { name: 'x', labels: { a: '1' } }, spec: { list: ['a', 'b', 'c'], n: 1, nil: null } };

const cases: Case[] = [
  { name: 'add sets a new member', doc, patch: [{ op: 'add', path: '/spec/color', value: 'red' }], expect: { ...doc, spec: { ...doc.spec, color: 'red' } } },
  { name: 'add replaces an existing member', doc, patch: [{ op: 'add', path: '/spec/n', value: 2 }], expect: { ...doc, spec: { ...doc.spec, n: 2 } } },
  { name: 'add inserts into a list at an index', doc, patch: [{ op: 'add', path: '/spec/list/1', value: 'x' }], expect: { ...doc, spec: { ...doc.spec, list: ['a', 'x', 'b', 'c'] } } },
  { name: 'add with - appends to a list', doc, patch: [{ op: 'add', path: '/spec/list/-', value: 'z' }], expect: { ...doc, spec: { ...doc.spec, list: ['a', 'b', 'c', 'z'] } } },
  { name: 'add at the list length appends', doc, patch: [{ op: 'add', path: '/spec/list/3', value: 'z' }], expect: { ...doc, spec: { ...doc.spec, list: ['a', 'b', 'c', 'z'] } } },
  { name: 'add with a negative index counts from the end', doc, patch: [{ op: 'add', path: '/spec/list/-1', value: 'z' }], expect: { ...doc, spec: { ...doc.spec, list: ['a', 'b', 'c', 'z'] } } },
  { name: 'add without a value adds null', doc, patch: [{ op: 'add', path: '/spec/v' }], expect: { ...doc, spec: { ...doc.spec, v: null } } },
  { name: 'add decodes ~1 and ~0 in keys', doc: { a: {} }, patch: [{ op: 'add', path: '/a/b~1c~0d', value: 1 }], expect: { a: { 'b/c~d': 1 } } },
  { name: 'remove deletes a member', doc, patch: [{ op: 'remove', path: '/metadata/labels/a' }], expect: { ...doc, metadata: { name: 'x', labels: {} } } },
  { name: 'remove deletes a list item', doc, patch: [{ op: 'remove', path: '/spec/list/0' }], expect: { ...doc, spec: { ...doc.spec, list: ['b', 'c'] } } },
  { name: 'remove deletes a member whose value is null', doc, patch: [{ op: 'remove', path: '/spec/nil' }], expect: { ...doc, spec: { list: ['a', 'b', 'c'], n: 1 } } },
  { name: 'replace changes a value', doc, patch: [{ op: 'replace', path: '/spec/list/2', value: 'C' }], expect: { ...doc, spec: { ...doc.spec, list: ['a', 'b', 'C'] } } },
  { name: 'replace of a missing object member adds it, as the API server does', doc, patch: [{ op: 'replace', path: '/spec/new', value: 1 }], expect: { ...doc, spec: { ...doc.spec, new: 1 } } },
  { name: 'replace of the root with an object replaces the document', doc, patch: [{ op: 'replace', path: '', value: { a: 1 } }], expect: { a: 1 } },
  { name: 'replace of the root with a scalar is ignored, as the API server does', doc, patch: [{ op: 'replace', path: '', value: 3 }], expect: doc },
  { name: 'move takes a value to a new place', doc, patch: [{ op: 'move', from: '/spec/n', path: '/metadata/n' }], expect: { metadata: { name: 'x', labels: { a: '1' }, n: 1 }, spec: { list: ['a', 'b', 'c'], nil: null } } },
  { name: 'move reorders a list', doc, patch: [{ op: 'move', from: '/spec/list/0', path: '/spec/list/-' }], expect: { ...doc, spec: { ...doc.spec, list: ['b', 'c', 'a'] } } },
  { name: 'copy duplicates a value', doc, patch: [{ op: 'copy', from: '/metadata/labels', path: '/spec/labels' }], expect: { ...doc, spec: { ...doc.spec, labels: { a: '1' } } } },
  { name: 'test passing lets the rest apply', doc, patch: [{ op: 'test', path: '/spec/n', value: 1 }, { op: 'add', path: '/spec/ok', value: true }], expect: { ...doc, spec: { ...doc.spec, ok: true } } },
  { name: 'test compares objects structurally', doc, patch: [{ op: 'test', path: '/metadata', value: { labels: { a: '1' }, name: 'x' } }], expect: doc },
  { name: 'test of null matches a missing member', doc, patch: [{ op: 'test', path: '/spec/absent', value: null }], expect: doc },
  { name: 'test of null matches a null member', doc, patch: [{ op: 'test', path: '/spec/nil', value: null }], expect: doc },
  { name: 'operations apply in order', doc: { a: 1 }, patch: [{ op: 'add', path: '/b', value: 2 }, { op: 'move', from: '/b', path: '/c' }, { op: 'remove', path: '/a' }], expect: { c: 2 } },
  { name: 'a null patch changes nothing', doc, patch: null, expect: doc },

  { name: 'a failed test fails the whole patch', doc, patch: [{ op: 'add', path: '/spec/x', value: 1 }, { op: 'test', path: '/spec/n', value: 2 }], error: 'testing value /spec/n failed: test failed', status: 422 },
  { name: 'a test of a non-null value against a missing member fails', doc, patch: [{ op: 'test', path: '/spec/absent', value: 1 }], error: 'testing value /spec/absent failed: test failed' },
  { name: 'a test without value against a present member fails', doc, patch: [{ op: 'test', path: '/spec/n' }], error: 'testing value /spec/n failed: test failed' },
  { name: 'test of a path below a missing member fails', doc, patch: [{ op: 'test', path: '/x/y', value: 1 }], error: 'test operation does not apply: is missing path: /x/y: missing value' },
  { name: 'add below a missing member fails', doc, patch: [{ op: 'add', path: '/spec/missing/x', value: 1 }], error: 'add operation does not apply: doc is missing path: "/spec/missing/x": missing value' },
  { name: 'add past the end of a list fails', doc, patch: [{ op: 'add', path: '/spec/list/5', value: 'x' }], error: "error in add for path: '/spec/list/5': Unable to access invalid index: 5: invalid index referenced" },
  { name: 'add with a non-numeric list index fails', doc, patch: [{ op: 'add', path: '/spec/list/x', value: 1 }], error: `error in add for path: '/spec/list/x': value was not a proper array index: 'x': strconv.Atoi: parsing "x": invalid syntax` },
  { name: 'add to the root path fails', doc, patch: [{ op: 'add', path: '', value: 1 }], error: 'add operation does not apply: doc is missing path: "": missing value' },
  { name: 'add without a path fails', doc, patch: [{ op: 'add', value: 1 }], error: 'add operation failed to decode path: missing value' },
  { name: 'remove of a missing member fails', doc, patch: [{ op: 'remove', path: '/spec/missing' }], error: "error in remove for path: '/spec/missing': Unable to remove nonexistent key: missing: missing value" },
  { name: 'remove below a missing member fails', doc, patch: [{ op: 'remove', path: '/a/b/c' }], error: 'remove operation does not apply: doc is missing path: "/a/b/c": missing value' },
  { name: 'remove of a missing list index fails', doc, patch: [{ op: 'remove', path: '/spec/list/3' }], error: "error in remove for path: '/spec/list/3': Unable to access invalid index: 3: invalid index referenced" },
  { name: 'replace of a missing list index fails', doc, patch: [{ op: 'replace', path: '/spec/list/9', value: 1 }], error: 'replace operation does not apply: doc is missing key: /spec/list/9: missing value' },
  { name: 'replace below a missing member fails', doc, patch: [{ op: 'replace', path: '/x/y', value: 1 }], error: 'replace operation does not apply: doc is missing path: /x/y: missing value' },
  { name: 'replace without a path fails', doc, patch: [{ op: 'replace', value: 1 }], error: 'replace operation failed to decode path: operation missing path field: missing value' },
  { name: 'move from a missing member fails', doc, patch: [{ op: 'move', from: '/spec/missing', path: '/spec/x' }], error: "error in move for path: 'missing': Unable to remove nonexistent key: missing: missing value" },
  { name: 'move to below a missing member fails', doc, patch: [{ op: 'move', from: '/spec/n', path: '/x/y' }], error: 'move operation does not apply: doc is missing destination path: /x/y: missing value' },
  { name: 'move without from fails', doc, patch: [{ op: 'move', path: '/x' }], error: 'move operation failed to decode from: operation, missing from field: missing value' },
  { name: 'copy from below a missing member fails', doc, patch: [{ op: 'copy', from: '/x/y', path: '/z' }], error: 'copy operation does not apply: doc is missing from path: /x/y: missing value' },
  { name: 'copy past the end of a list fails', doc, patch: [{ op: 'copy', from: '/spec/n', path: '/spec/list/7' }], error: 'error while adding value during copy: Unable to access invalid index: 7: invalid index referenced' },
  { name: 'an unknown operation fails', doc, patch: [{ op: 'merge', path: '/a' }], error: 'Unexpected kind: merge' },
  { name: 'an operation without op fails', doc, patch: [{ path: '/a' }], error: 'Unexpected kind: unknown' },
  { name: 'a patch that is not a list is a bad request', doc, patch: { op: 'add' }, error: 'json: cannot unmarshal object into Go value of type jsonpatch.Patch', status: 400 },
  { name: 'an operation that is not an object is a bad request', doc, patch: ['add'], error: 'json: cannot unmarshal string into Go value of type jsonpatch.Operation', status: 400 },
  { name: 'more than 10000 operations is too large', doc, patch: Array.from({ length: 10001 }, () => ({ op: 'test', path: '/spec/n', value: 1 })), error: 'The allowed maximum operations in a JSON patch is 10000, got 10001', status: 413 },
];

for (const c of cases) {
  t.test(`json patch: ${c.name}`, async (t) => {
    const before = JSON.stringify(c.doc);
    if (c.error !== undefined) {
      t.throws(() => applyJsonPatch(c.doc, c.patch), new MergeError(c.error, (c.status ?? 422) as 422));
    } else {
      t.same(applyJsonPatch(c.doc, c.patch), c.expect);
    }
    t.equal(JSON.stringify(c.doc), before, 'the input document is not modified');
  });
}

t.test('json patch: values added are copies, not the patch objects', async (t) => {
  const value = { deep: { x: 1 } };
  const out = applyJsonPatch({}, [{ op: 'add', path: '/a', value }]) as { a: { deep: { x: number } } };
  out.a.deep.x = 2;
  t.equal(value.deep.x, 1);
});
