/**
 * Path elements, the FieldSet trie and the FieldsV1 encoding: upstream's key text and ordering, round
 * trips of upstream-encoded samples, and the set algebra the apply core relies on.
 */
import t from 'tap';
import type { JsonObject } from '../../core/api/types.js';
import { MergeError } from '../../core/merge/errors.js';
import { FieldSet, type Path, decodeFieldsV1, encodeFieldsV1, fieldPE, indexPE, keyPE, parsePE, pathText, peText, valuePE } from '../../core/merge/fieldpath.js';

const P = (...parts: (string | { k: Record<string, string | number> } | { v: string | number } | { i: number })[]): Path =>
  parts.map((p) => {
    if (typeof p === 'string') return fieldPE(p);
    if ('k' in p) return keyPE(Object.entries(p.k).map(([name, value]) => ({ name, value })));
    if ('v' in p) return valuePE(p.v);
    return indexPE(p.i);
  });

t.test('path elements: FieldsV1 keys are written as upstream serialises them', async (t) => {
  t.equal(fieldPE('spec').id, 'f:spec');
  t.equal(keyPE([{ name: 'protocol', value: 'TCP' }, { name: 'containerPort', value: 80 }]).id, 'k:{"containerPort":80,"protocol":"TCP"}', 'key fields sorted by name');
  t.equal(valuePE('ci/cleanup').id, 'v:"ci/cleanup"');
  t.equal(valuePE('a<b&c').id, 'v:"a\\u003cb\\u0026c"', 'HTML characters escaped as encoding/json does');
  t.equal(valuePE(1.5).id, 'v:1.5');
  t.equal(indexPE(3).id, 'i:3');
});

t.test('path elements: conflict paths read like upstream field paths', async (t) => {
  t.equal(pathText(P('spec', 'containers', { k: { name: 'web' } }, 'image')), '.spec.containers[name="web"].image');
  t.equal(pathText(P('spec', 'ports', { k: { containerPort: 80, protocol: 'TCP' } })), '.spec.ports[containerPort=80,protocol="TCP"]');
  t.equal(peText(valuePE('a')), '[="a"]');
  t.equal(peText(indexPE(2)), '[2]');
  t.equal(peText(valuePE(2.5)), '[=2.5]');
});

t.test('path elements: parsing keys back, and the errors for malformed keys', async (t) => {
  t.same(parsePE('k:{"protocol":"UDP","containerPort":53}').id, 'k:{"containerPort":53,"protocol":"UDP"}', 'reparsed keys are canonical');
  t.equal(parsePE('v:"x"').id, 'v:"x"');
  t.equal(parsePE('i:7').id, 'i:7');
  t.throws(() => parsePE('f'), new MergeError('key must be 2 characters long:', 500));
  t.throws(() => parsePE('fx'), new MergeError('missing colon: fx', 500));
  t.throws(() => parsePE('i:x'), new MergeError('strconv.Atoi: parsing "x": invalid syntax', 500));
});

/** FieldsV1 as the API server stores it (from structured-merge-diff's serialiser, via the ssa-oracle). */
const upstreamSamples: Record<string, JsonObject> = {
  'nested map lists with two keys and self markers': {
    'f:spec': {
      'f:containers': {
        'k:{"name":"app"}': {
          '.': {},
          'f:command': {},
          'f:image': {},
          'f:name': {},
          'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} } },
          'f:resources': {},
        },
      },
    },
  },
  'set items and granular maps': {
    'f:metadata': { 'f:finalizers': { 'v:"ci/cleanup"': {} }, 'f:labels': { '.': {}, 'f:app': {}, 'f:team': {} } },
    'f:spec': { '.': {}, 'f:selector': {}, 'f:settings': { '.': {}, 'f:a': { '.': {}, 'f:b': {} }, 'f:tags': {} } },
  },
  'deployment written by kubectl': {
    'f:metadata': { 'f:annotations': { '.': {}, 'f:deployment.svc.io/revision': {} }, 'f:labels': { '.': {}, 'f:app': {} } },
    'f:spec': {
      'f:progressDeadlineSeconds': {},
      'f:replicas': {},
      'f:template': {
        'f:spec': {
          'f:containers': { 'k:{"name":"nginx"}': { '.': {}, 'f:image': {}, 'f:name': {}, 'f:ports': { '.': {}, 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} } } } },
        },
      },
    },
  },
};

for (const [name, fields] of Object.entries(upstreamSamples)) {
  t.test(`FieldsV1 round trip keeps upstream's bytes: ${name}`, async (t) => {
    const encoded = encodeFieldsV1(decodeFieldsV1(fields));
    t.equal(JSON.stringify(encoded), JSON.stringify(fields));
  });
}

t.test('FieldsV1: a lone "." reads as a plain member and is written as {}', async (t) => {
  t.same(encodeFieldsV1(decodeFieldsV1({ 'f:a': { '.': {} } })), { 'f:a': {} });
});

t.test('FieldsV1: a node is a member when marked "." or when it has no children', async (t) => {
  const set = decodeFieldsV1({ 'f:a': {}, 'f:b': { '.': {}, 'f:c': {} }, 'f:d': { 'f:e': {} } });
  t.ok(set.has(P('a')));
  t.ok(set.has(P('b')));
  t.ok(set.has(P('b', 'c')));
  t.notOk(set.has(P('d')), 'a node with children and no "." is not a member');
  t.ok(set.has(P('d', 'e')));
});

t.test('FieldsV1: encoding orders field < key < value < index and puts "." first', async (t) => {
  const set = FieldSet.of(P('z'), P('a'), P('l', { k: { name: 'b' } }), P('l', { k: { name: 'a' } }), P('l'), P('s', { v: 'x' }), P('s', { v: 1 }), P('x', { i: 1 }));
  t.equal(
    JSON.stringify(encodeFieldsV1(set)),
    JSON.stringify({ 'f:a': {}, 'f:l': { '.': {}, 'k:{"name":"a"}': {}, 'k:{"name":"b"}': {} }, 'f:s': { 'v:1': {}, 'v:"x"': {} }, 'f:x': { 'i:1': {} }, 'f:z': {} }),
  );
});

t.test('FieldsV1: keys of unknown element types are skipped, bad keys fail', async (t) => {
  t.ok(decodeFieldsV1({ 'f:a': { 'x:future': {} } }).has(P('a')), 'a node whose only child is unknown is a member');
  t.throws(() => decodeFieldsV1({ 'f:a': { 'k:not json': {} } }), MergeError);
  t.throws(() => decodeFieldsV1({ 'f:a': 3 as unknown as JsonObject }), MergeError);
});

t.test('FieldSet: union, intersection and the two differences', async (t) => {
  const a = FieldSet.of(P('spec', 'replicas'), P('spec', 'color'), P('metadata'), P('metadata', 'labels', 'x'));
  const b = FieldSet.of(P('spec', 'replicas'), P('spec', 'paused'), P('metadata'));
  t.same(a.union(b).paths().map(pathText), ['.metadata', '.metadata.labels.x', '.spec.color', '.spec.paused', '.spec.replicas']);
  t.same(a.intersection(b).paths().map(pathText), ['.metadata', '.spec.replicas']);
  t.same(a.difference(b).paths().map(pathText), ['.metadata.labels.x', '.spec.color'], 'difference keeps children below a removed member');
  t.same(a.recursiveDifference(b).paths().map(pathText), ['.spec.color'], 'recursive difference drops them');
  t.ok(a.intersection(b).isSubsetOf(a));
  t.notOk(a.isSubsetOf(b));
  t.ok(a.union(b).equals(b.union(a)));
});

t.test('FieldSet: iteration lists a level\'s members before descending', async (t) => {
  const s = FieldSet.of(P('spec', 'template', 'image'), P('spec', 'args'), P('kind'));
  t.same(s.paths().map(pathText), ['.kind', '.spec.args', '.spec.template.image']);
  t.equal(s.size(), 3);
});

t.test('FieldSet: algebra keeps the same set object when nothing changes', async (t) => {
  const a = FieldSet.of(P('a', 'b'));
  t.equal(a.union(FieldSet.of(P('a', 'b'))), a);
  t.equal(a.difference(FieldSet.of(P('c'))), a);
  t.equal(a.recursiveDifference(new FieldSet()), a);
});
