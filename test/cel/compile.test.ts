/**
 * The CEL layer: environments from declared variables, the one compile entry point and its one error
 * class, the compile cache, and the JSON-to-CEL conversion.
 */
import t from 'tap';
import { compile, compileCount, COMPILE_CACHE_SIZE, evaluate, isEvaluationError } from '../../core/cel/compile.js';
import { type CelObjectDecl, celEnvironment, schemaType } from '../../core/cel/environment.js';
import { CelCompileError } from '../../core/cel/errors.js';
import { celValue } from '../../core/cel/value.js';
import { customResourceSchema } from '../../core/schema/openapi-v3.js';

const objects: Record<string, CelObjectDecl> = {
  'test.Pod': { fields: { name: 'string', replicas: 'int', labels: { map: 'string' }, ports: { list: 'int' } } },
};
const typed = celEnvironment({ name: 'typed', variables: { pod: { object: 'test.Pod' }, n: 'int', any: 'dyn', m: { map: 'dyn' } }, objects, libraries: ['strings'] });

// [rule, expression, result type name or error part]
const typing: [string, string, string][] = [
  ['a comparison is bool', 'pod.replicas > 1', 'bool'],
  ['an object field has its declared type', 'pod.name', 'string'],
  ['a list field', 'pod.ports', 'list(int)'],
  ['a map field indexes to its values', "pod.labels['app']", 'string'],
  ['a dyn variable selects to dyn', 'any.x.y', 'dyn'],
  ['a map variable selects to its values', 'm.x', 'dyn'],
  ['has() is bool', 'has(pod.name)', 'bool'],
  ['macros over typed lists', 'pod.ports.all(p, p > 0)', 'bool'],
  ['map() is a list (of dyn: the library declares list concatenation over dyn)', 'pod.ports.map(p, p * 2)', 'list(dyn)'],
  ['the strings extension (split is declared as list(dyn))', "pod.name.split('-')", 'list(dyn)'],
  ['a string method', "pod.name.lowerAscii()", 'string'],
  ['an int variable', 'n + 1', 'int'],
  ['an undefined field', 'pod.image', "compilation failed: ERROR: <input>:1:4: undefined field 'image'\n | pod.image\n | ...^"],
  ['an undeclared variable', 'x == 1', "compilation failed: ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x == 1\n | ^"],
  ['an unknown function (at its parenthesis)', 'frob(n)', "compilation failed: ERROR: <input>:1:5: undeclared reference to 'frob' (in container '')\n | frob(n)\n | ....^"],
  ['no matching overload', 'pod.name + 1', "compilation failed: ERROR: <input>:1:10: found no matching overload for '_+_' applied to '(string, int)'"],
  ['comparing unlike types', 'pod.replicas == "1"', "found no matching overload for '_==_' applied to '(int, string)'"],
  ['a syntax error', 'n ==', 'compilation failed: ERROR: <input>:1:3: Syntax error: found = but expecting end of input\n | n ==\n | ..^'],
  ['a library the environment lacks', '[1].isSorted()', "undeclared reference to 'isSorted'"],
];

t.test('variables are typed from their declarations; failures are one error class with cel-go wording', async (t) => {
  for (const [rule, expression, want] of typing) {
    let got: string;
    try {
      got = compile(typed, expression).resultTypeName;
    } catch (e) {
      t.ok(e instanceof CelCompileError, `${rule}: a CelCompileError`);
      t.equal((e as CelCompileError).name, 'CelCompileError');
      t.equal((e as CelCompileError).detail, (e as Error).message, 'detail is the message');
      got = (e as Error).message;
    }
    if (want.includes(' ')) t.ok(got.includes(want), `${rule}: ${got}`);
    else t.equal(got, want, rule);
  }
});

t.test('compiled expressions report the variables they read', async (t) => {
  t.same([...compile(typed, 'n > 0 && pod.ports.exists(p, p == n)').references].sort(), ['n', 'pod']);
  t.same([...compile(typed, '[1, 2].exists(n, n > 1)').references], [], 'a comprehension variable shadows a declared one');
});

t.test('the cache compiles an expression once per environment, failures included', async (t) => {
  const env = celEnvironment({ name: 'cache', variables: { x: 'int' }, libraries: [] });
  const other = celEnvironment({ name: 'cache too', variables: { x: 'int' }, libraries: [] });
  const before = compileCount();
  const a = compile(env, 'x > 1');
  t.equal(compile(env, 'x > 1'), a, 'the same compiled expression');
  t.equal(compileCount() - before, 1);
  t.not(compile(other, 'x > 1'), a, 'another environment compiles its own');
  t.equal(compileCount() - before, 2);
  const failure = (): unknown => compile(env, 'x >');
  t.throws(failure, CelCompileError);
  t.throws(failure, CelCompileError);
  t.equal(compileCount() - before, 3, 'a failure is not compiled again');
  for (let i = 0; i < COMPILE_CACHE_SIZE; i++) compile(env, `x == ${i}`);
  const count = compileCount();
  compile(env, 'x > 1');
  t.equal(compileCount() - count, 1, 'bounded: the least recently used expression was evicted');
});

t.test('evaluation: results and errors as values, JSON converted as upstream converts it', async (t) => {
  const env = celEnvironment({ name: 'eval', variables: { obj: 'dyn' }, libraries: ['strings'] });
  const run = (e: string, obj: unknown) => evaluate(compile(env, e), { obj: celValue(obj) });
  t.equal(run('obj.n + 1 == 3', { n: 2 }), true, 'integral numbers are ints');
  t.equal(run('obj.r < 1.0', { r: 0.5 }), true, 'fractions are doubles');
  t.equal(run("obj.s.upperAscii() + obj.l[1]", { s: 'a', l: ['x', 'y'] }), 'Ay');
  t.equal(run("obj.m.k == 'v'", { m: { k: 'v' } }), true, 'objects are maps');
  t.ok(isEvaluationError(run('obj.missing', {})), 'a missing key is an error value, not a throw');
  t.equal(run('obj == null', null), true);
  const number = customResourceSchema({ type: 'object', properties: { d: { type: 'number' }, i: { type: 'integer' } } }, { name: 'x' });
  const v = celValue({ d: 2, i: 2 }, number) as Map<string, unknown>;
  t.equal(v.get('d'), 2, 'a number node stays a double even when integral');
  t.equal(v.get('i'), 2n);
});

t.test('object types from a structural schema', async (t) => {
  const schema = customResourceSchema(
    {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: { replicas: { type: 'integer' }, ratio: { type: 'number' }, tags: { type: 'array', items: { type: 'string' } }, labels: { type: 'object', additionalProperties: { type: 'string' } }, port: { 'x-kubernetes-int-or-string': true } },
        },
      },
    },
    { name: 'x' },
  );
  const objs: Record<string, CelObjectDecl> = {};
  const self = schemaType(schema, 'x', objs);
  t.same(self, { object: 'x' });
  t.same(objs['x.spec']?.fields, { replicas: 'int', ratio: 'double', tags: { list: 'string' }, labels: { map: 'string' }, port: 'dyn' });
  const env = celEnvironment({ name: 'schema', variables: { self }, objects: objs, libraries: ['strings'] });
  t.equal(compile(env, 'self.spec.tags').resultTypeName, 'list(string)');
  t.equal(compile(env, 'self.spec.replicas > 1 && self.spec.labels.all(k, k != "")').resultTypeName, 'bool');
  t.throws(() => compile(env, 'self.spec.image == ""'), /undefined field 'image'/);
});
