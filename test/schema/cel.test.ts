import t from 'tap';
import { fieldErrorString } from '../../core/api/field-errors.js';
import { cardinalityOf, compileRule, evaluateRules, PER_CALL_LIMIT, staticCost, STATIC_ESTIMATED_COST_LIMIT } from '../../core/schema/cel.js';
import { customResourceSchema, type OpenApiV3Schema } from '../../core/schema/openapi-v3.js';
import type { Schema } from '../../core/schema/schema.js';

const specSchema = (spec: OpenApiV3Schema): Schema => customResourceSchema({ type: 'object', properties: { spec } }, { name: 'x' });
const run = (spec: OpenApiV3Schema, obj: unknown, old?: unknown): string[] =>
  evaluateRules({ spec: obj }, old === undefined ? undefined : { spec: old }, specSchema(spec)).map(fieldErrorString);

t.test('a failing rule is reported at its node with its message, messageExpression or the default', async (t) => {
  const spec = (rule: Record<string, unknown>): OpenApiV3Schema => ({ type: 'object', properties: { replicas: { type: 'integer' } }, 'x-kubernetes-validations': [{ rule: 'self.replicas < 10', ...rule }] });
  t.same(run(spec({}), { replicas: 20 }), ['spec: Invalid value: "object": failed rule: self.replicas < 10']);
  t.same(run(spec({ message: 'too many' }), { replicas: 20 }), ['spec: Invalid value: "object": too many']);
  t.same(run(spec({ messageExpression: '"replicas is " + string(self.replicas)' }), { replicas: 20 }), ['spec: Invalid value: "object": replicas is 20']);
  t.same(run(spec({ message: 'm', reason: 'FieldValueForbidden', fieldPath: '.replicas' }), { replicas: 20 }), ['spec.replicas: Forbidden: m']);
  t.same(run(spec({ reason: 'FieldValueRequired' }), { replicas: 20 }), ['spec: Required value: failed rule: self.replicas < 10']);
  t.same(run(spec({}), { replicas: 2 }), []);
});

t.test('transition rules run only on updates, against the correlated old value; optionalOldSelf runs them on create too', async (t) => {
  const spec: OpenApiV3Schema = { type: 'object', properties: { name: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'immutable' }] } } };
  t.same(run(spec, { name: 'a' }), [], 'create: skipped');
  t.same(run(spec, { name: 'b' }, { name: 'a' }), ['spec.name: Invalid value: "string": immutable']);
  t.same(run(spec, { name: 'a' }, { name: 'a' }), []);
  const opt: OpenApiV3Schema = { type: 'object', properties: { name: { type: 'string', 'x-kubernetes-validations': [{ rule: '!oldSelf.hasValue() || self == oldSelf.value()', optionalOldSelf: true, message: 'once' }] } } };
  t.same(run(opt, { name: 'a' }), []);
  t.same(run(opt, { name: 'b' }, { name: 'a' }), ['spec.name: Invalid value: "string": once']);
  const list: OpenApiV3Schema = {
    type: 'object',
    properties: {
      items: {
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['k'],
        items: { type: 'object', required: ['k'], properties: { k: { type: 'string' }, v: { type: 'integer', 'x-kubernetes-validations': [{ rule: 'self >= oldSelf', message: 'no decrease' }] } } },
      },
    },
  };
  t.same(run(list, { items: [{ k: 'b', v: 1 }, { k: 'a', v: 1 }] }, { items: [{ k: 'a', v: 2 }] }), ['spec.items[1].v: Invalid value: "integer": no decrease'], 'map-list items correlate by key');
});

t.test('rules see integers, strings, lists and maps; library functions work', async (t) => {
  const spec: OpenApiV3Schema = {
    type: 'object',
    properties: { tags: { type: 'array', items: { type: 'string' } }, labels: { type: 'object', additionalProperties: { type: 'string' } }, ratio: { type: 'number' } },
    'x-kubernetes-validations': [
      { rule: 'self.tags.all(t, t.matches("^[a-z]+$"))', message: 'tags' },
      { rule: "!has(self.labels) || self.labels.exists(k, k.startsWith('app'))", message: 'labels' },
      { rule: 'self.tags.isSorted()', message: 'sorted' },
      { rule: '!has(self.ratio) || self.ratio < 1.5', message: 'ratio' },
    ],
  };
  t.same(run(spec, { tags: ['a', 'b'], labels: { application: 'x' }, ratio: 1 }), []);
  t.same(run(spec, { tags: ['b', 'A'], labels: { x: 'y' }, ratio: 2 }), ['spec: Invalid value: "object": tags', 'spec: Invalid value: "object": labels', 'spec: Invalid value: "object": sorted', 'spec: Invalid value: "object": ratio']);
});

t.test('bad rules do not compile, with upstream-style detail', async (t) => {
  t.throws(() => compileRule({ rule: 'self.x <' }), { name: 'CelCompileError', message: /Syntax error/ });
  t.throws(() => compileRule({ rule: 'foo.bar == 1' }), /undeclared reference to 'foo'/);
  t.throws(() => compileRule({ rule: 'self.nope()' }), /undeclared reference to 'nope'/);
  t.throws(() => compileRule({ rule: '1 + 2' }), /must evaluate to a bool/);
  t.ok(compileRule({ rule: 'self.a == oldSelf.a' }).usesOldSelf);
});

t.test('cost: rules over bounded values are cheap; nested loops over unbounded lists exceed the limit', async (t) => {
  const bounded = specSchema({ type: 'object', properties: { xs: { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 10 } } } }) as Extract<Schema, { kind: 'struct' }>;
  const spec = bounded.fields.spec!;
  t.ok(staticCost(compileRule({ rule: 'self.xs.all(x, self.xs.all(y, x == y))' }), spec) < 1000);
  const unbounded = (specSchema({ type: 'object', properties: { xs: { type: 'array', items: { type: 'string' } } } }) as Extract<Schema, { kind: 'struct' }>).fields.spec!;
  t.ok(staticCost(compileRule({ rule: 'self.xs.all(x, self.xs.all(y, x == y))' }), unbounded) > STATIC_ESTIMATED_COST_LIMIT * 100);
  t.equal(cardinalityOf([]), 1);
  // at run time the actual sizes count: a huge list makes a quadratic rule stop before it runs
  const big = Array.from({ length: 2000 }, (_, i) => `v${i}`);
  const errs = run({ type: 'object', properties: { xs: { type: 'array', items: { type: 'string' } } }, 'x-kubernetes-validations': [{ rule: 'self.xs.all(x, self.xs.all(y, x == y || x != y))' }] }, { xs: big });
  t.match(errs, [/call cost exceeds limit for rule/]);
  t.ok(PER_CALL_LIMIT > 0);
});
