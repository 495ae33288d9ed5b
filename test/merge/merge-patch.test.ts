/**
 * JSON merge patch (RFC 7386) as the API server applies it, including upstream's null pruning and the
 * 400s for patches that are not objects.
 */
import t from 'tap';
import type { JsonValue } from '../../core/api/types.js';
import { MergeError } from '../../core/merge/errors.js';
import { applyMergePatch } from '../../core/merge/merge-patch.js';

interface Case {
  name: string;
  doc: JsonValue;
  patch: JsonValue;
  expect?: JsonValue;
  error?: string;
}

const cases: Case[] = [
  { name: 'a member is added', doc: { a: 1 }, patch: { b: 2 }, expect: { a: 1, b: 2 } },
  { name: 'a member is replaced', doc: { a: 1 }, patch: { a: 'x' }, expect: { a: 'x' } },
  { name: 'null deletes a member', doc: { a: 1, b: 2 }, patch: { a: null }, expect: { b: 2 } },
  { name: 'null for a missing member changes nothing', doc: { a: 1 }, patch: { z: null }, expect: { a: 1 } },
  { name: 'objects merge recursively', doc: { m: { a: 1, b: { c: 1 } } }, patch: { m: { b: { d: 2 }, e: 3 } }, expect: { m: { a: 1, b: { c: 1, d: 2 }, e: 3 } } },
  { name: 'lists are replaced whole', doc: { l: [1, 2, 3] }, patch: { l: [4] }, expect: { l: [4] } },
  { name: 'an object replaces a scalar and loses its nulls', doc: { a: 1 }, patch: { a: { b: null, c: 1 } }, expect: { a: { c: 1 } } },
  { name: 'a new object loses its nulls, also inside lists', doc: {}, patch: { a: { b: null, l: [{ x: null, y: 1 }, null] } }, expect: { a: { l: [{ y: 1 }, null] } } },
  { name: 'a list replacing an object keeps its nulls, as upstream does', doc: { a: { x: 1 } }, patch: { a: [{ x: null }] }, expect: { a: [{ x: null }] } },
  { name: 'a scalar replaces an object', doc: { a: { b: 1 } }, patch: { a: 'flat' }, expect: { a: 'flat' } },
  { name: 'an empty patch changes nothing', doc: { a: 1 }, patch: {}, expect: { a: 1 } },
  { name: 'a list patch replaces the document', doc: { a: 1 }, patch: [{ a: null }, 2], expect: [{}, 2] },
  { name: 'a null patch is a bad request', doc: { a: 1 }, patch: null, error: 'Invalid JSON Patch' },
  { name: 'a scalar patch is a bad request', doc: { a: 1 }, patch: 'x', error: 'Invalid JSON Patch' },
  { name: 'a null document is a bad request', doc: null, patch: {}, error: 'Invalid JSON Document' },
];

for (const c of cases) {
  t.test(`merge patch: ${c.name}`, async (t) => {
    const before = JSON.stringify(c.doc);
    if (c.error !== undefined) t.throws(() => applyMergePatch(c.doc, c.patch), new MergeError(c.error, 400));
    else t.same(applyMergePatch(c.doc, c.patch), c.expect);
    t.equal(JSON.stringify(c.doc), before, 'the input document is not modified');
  });
}

t.test('merge patch: setting managedFields to [{}] passes through for the reset rule', async (t) => {
  const out = applyMergePatch({ metadata: { managedFields: [{ manager: 'a' }] } }, { metadata: { managedFields: [{}] } });
  t.same(out, { metadata: { managedFields: [{}] } });
});
