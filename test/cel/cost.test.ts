/** The CEL layer's cost limits, estimates and runtime meter. */
import t from 'tap';
import { compile } from '../../core/cel/compile.js';
import { cardinalityOf, costErrorMessage, CostMeter, estimateCost, PER_CALL_LIMIT, RUNTIME_COST_BUDGET, type Shape, staticSize } from '../../core/cel/cost.js';
import { celEnvironment } from '../../core/cel/environment.js';
import { customResourceSchema, type OpenApiV3Schema } from '../../core/schema/openapi-v3.js';
import type { Schema } from '../../core/schema/schema.js';

const env = celEnvironment({ name: 'cost', variables: { self: 'dyn' }, libraries: ['strings', 'k8s'] });
const node = (s: OpenApiV3Schema): Schema => customResourceSchema({ type: 'object', properties: { v: s } }, { name: 'x' });
/** The schema node of `v` itself. */
const field = (s: OpenApiV3Schema): Schema => (node(s) as Extract<Schema, { kind: 'struct' }>).fields.v!;
const quadratic = compile(env, 'self.v.all(x, self.v.all(y, x == y))').expr;

t.test('static estimates follow the schema bounds; runtime estimates the values', async (t) => {
  const bounded = new Map<string, Shape>([['self', { node: node({ type: 'array', maxItems: 10, items: { type: 'string', maxLength: 10 } }) }]]);
  const unbounded = new Map<string, Shape>([['self', { node: node({ type: 'array', items: { type: 'string' } }) }]]);
  t.ok(estimateCost(quadratic, bounded) < 1000);
  t.ok(estimateCost(quadratic, unbounded) > PER_CALL_LIMIT * 100);
  const small = new Map<string, Shape>([['self', { values: [{ v: ['a', 'b'] }] }]]);
  const large = new Map<string, Shape>([['self', { values: [{ v: Array.from({ length: 2000 }, (_, i) => `${i}`) }] }]]);
  t.ok(estimateCost(quadratic, small) < 100);
  t.ok(estimateCost(quadratic, large) > PER_CALL_LIMIT);
});

// [rule, schema, size]
const sizes: [string, OpenApiV3Schema, number][] = [
  ['maxLength bounds a string', { type: 'string', maxLength: 7 }, 7],
  ['maxItems bounds a list', { type: 'array', maxItems: 3, items: { type: 'string' } }, 3],
  ['an unbounded list: as many as fit in a request', { type: 'array', items: { type: 'integer' } }, Math.floor((3 * 1024 * 1024) / 2)],
  ['an integer is one', { type: 'integer' }, 1],
];

t.test('sizes and cardinality', async (t) => {
  for (const [rule, s, want] of sizes) {
    t.equal(staticSize(field(s)), want, rule);
  }
  const list = field({ type: 'array', maxItems: 4, items: { type: 'string' } });
  t.equal(cardinalityOf([]), 1);
  t.equal(cardinalityOf([list, list]), 16, 'nested lists multiply');
});

t.test('the meter: a call over the per-call limit, then a request over the budget', async (t) => {
  const m = new CostMeter(RUNTIME_COST_BUDGET);
  t.equal(m.charge(PER_CALL_LIMIT + 1), 'per-call-limit');
  t.equal(m.left, RUNTIME_COST_BUDGET, 'a refused call is not charged');
  for (let i = 0; i < RUNTIME_COST_BUDGET / PER_CALL_LIMIT; i++) t.equal(m.charge(PER_CALL_LIMIT), 'ok');
  t.equal(m.charge(1), 'budget');
});

t.test("upstream's wording of an estimate over a limit", async (t) => {
  t.match(costErrorMessage('estimated rule cost', 15, 10), /^estimated rule cost exceeds budget by factor of 1\.5x \(try simplifying/);
  t.match(costErrorMessage('x', 11, 10), /factor of 1\.100000x/);
  t.match(costErrorMessage('x', 2000, 10), /factor of more than 100x/);
});
