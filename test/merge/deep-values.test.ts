/**
 * Values nested as deep as a JSON body may be (10000 levels) go through every raw-value walk of the
 * patch code on this thread's stack (the main thread's, as with --workers=0): copies, equality, null
 * pruning, merge and strategic merge patches, JSON patch add/test/copy, Go's printers. The printers
 * and copies give what their recursive forms gave on shallow values.
 */
import t from 'tap';
import { jsonEqual } from '../../core/api/validation.js';
import { goJson, goSharpV, goV } from '../../core/merge/go-format.js';
import { applyJsonPatch } from '../../core/merge/json-patch.js';
import { cloneJson, nestsDeeperThan, type JsonValue } from '../../core/merge/json-values.js';
import { applyMergePatch } from '../../core/merge/merge-patch.js';
import { applyStrategicMergePatch } from '../../core/merge/strategic-merge-patch.js';
import { podSchema } from './support/pod-schema.js';

const DEPTH = 10000;

/** A value nested `n` levels, alternating objects and arrays, with nulls along the way. */
function deep(n: number, leaf: JsonValue = 1): JsonValue {
  let v: JsonValue = leaf;
  for (let i = 0; i < n; i++) v = i % 2 ? { a: v, n: null } : [v, null];
  return v;
}

t.test('copy and equality of a 10000-level value', async (t) => {
  const v = deep(DEPTH);
  const c = cloneJson(v);
  t.not(c, v);
  t.ok(jsonEqual(c, v));
  t.notOk(jsonEqual(c, deep(DEPTH, 2)), 'a different leaf deep down');
  t.ok(nestsDeeperThan(v, DEPTH - 1));
  t.notOk(nestsDeeperThan(v, DEPTH));
});

t.test("Go's printers print a 10000-level value", async (t) => {
  const v = deep(DEPTH);
  let open = '';
  let close = '';
  for (let i = DEPTH - 1; i >= 0; i--) {
    open += i % 2 ? '{"a":' : '[';
    close = (i % 2 ? ',"n":null}' : ',null]') + close;
  }
  t.equal(goJson(v), `${open}1${close}`, 'JSON with keys sorted');
  t.ok(goV(v).startsWith('map[a:[map[a:['));
  t.ok(goSharpV(v).startsWith('map[string]interface {}{"a":[]interface {}{map[string]interface {}{"a":'));
});

t.test('printers agree with the recursive definitions on shallow values', async (t) => {
  const v: JsonValue = { b: [1, 'x', null, true, { z: 1.5, a: [] }], a: {}, '<': 'a&b' };
  t.equal(goV(v), 'map[<:a&b a:map[] b:[1 x <nil> true map[a:[] z:1.5]]]');
  t.equal(goSharpV(v), 'map[string]interface {}{"<":"a&b", "a":map[string]interface {}{}, "b":[]interface {}{1, "x", interface {}(nil), true, map[string]interface {}{"a":[]interface {}{}, "z":1.5}}}');
  t.equal(goJson(v), '{"\\u003c":"a\\u0026b","a":{},"b":[1,"x",null,true,{"a":[],"z":1.5}]}');
});

t.test('merge patch of a 10000-level value: nulls pruned all the way down', async (t) => {
  const out = applyMergePatch({ a: 1 }, { x: deep(DEPTH) } as JsonValue) as { x: JsonValue };
  t.notOk(nestsDeeperThan(out.x, DEPTH));
  let node = out.x;
  for (let i = 0; i < 3; i++) node = Array.isArray(node) ? node[0]! : (node as { a: JsonValue }).a;
  t.ok(nestsDeeperThan(node, DEPTH - 4), 'still deep');
  t.notOk(goJson(out).includes('"n"'), 'no null members left');
});

t.test('strategic merge patch of a 10000-level value', async (t) => {
  const out = applyStrategicMergePatch({ spec: {} }, { spec: { x: deep(DEPTH) } }, podSchema) as { spec: { x: JsonValue } };
  t.ok(nestsDeeperThan(out.spec.x, DEPTH - 1));
});

t.test('JSON patch adds, tests and copies a 10000-level value', async (t) => {
  const v = deep(DEPTH);
  const out = applyJsonPatch({}, [
    { op: 'add', path: '/x', value: v },
    { op: 'test', path: '/x', value: v },
    { op: 'copy', from: '/x', path: '/y' },
  ]) as { x: JsonValue; y: JsonValue };
  t.ok(jsonEqual(out.x, out.y));
  t.not(out.x, out.y, 'the copy is its own');
});
