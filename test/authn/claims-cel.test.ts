/**
 * CEL for claims and user rules: what compiles (and what upstream refuses before starting), what the
 * expressions evaluate to over JSON claims, and the string-list conversion of mapping results.
 */
import t from 'tap';
import { CelCompileError, celInput, compileExpression, isError, stringList } from '../../core/authn/claims-cel.js';

// [rule, expression, variable, expected result type, error part ('' = compiles)]
const compileRows: [string, string, 'claims' | 'user', 'bool' | 'any', string][] = [
  ['a comparison is bool', "claims.hd == 'example.com'", 'claims', 'bool', ''],
  ['a select on claims is dyn, not bool', 'claims.email_verified', 'claims', 'bool', 'must evaluate to bool'],
  ['a string method on a claim is bool', "claims.sub.startsWith('a')", 'claims', 'bool', ''],
  ['macros are bool', "claims.groups.all(g, g != 'root') && claims.groups.exists(g, g == 'dev')", 'claims', 'bool', ''],
  ['has() is bool', 'has(claims.email)', 'claims', 'bool', ''],
  ['in is bool', "'dev' in claims.groups", 'claims', 'bool', ''],
  ['size() compares', 'size(claims.groups) > 0', 'claims', 'bool', ''],
  ['a string concatenation is fine for a mapping', "'oidc:' + claims.sub", 'claims', 'any', ''],
  ['map() for groups', "claims.groups.map(g, 'g:' + g)", 'claims', 'any', ''],
  ['strings extension', "claims.email.split('@')[0].lowerAscii()", 'claims', 'any', ''],
  ['a ternary', "claims.email_verified ? claims.email : ''", 'claims', 'any', ''],
  ['a list literal', '[claims.sub, claims.iss]', 'claims', 'any', ''],
  ['a string is not bool', "'x'", 'claims', 'bool', 'must evaluate to bool'],
  ['an int is not bool', '1 + 2', 'claims', 'bool', 'must evaluate to bool'],
  ['undeclared variable', "foo == 'x'", 'claims', 'bool', "undeclared reference to 'foo' (in container '')"],
  ['unknown function', 'frobnicate(claims.sub)', 'claims', 'any', "undeclared reference to 'frobnicate'"],
  ['no matching overload', "'a' + 1", 'claims', 'any', "found no matching overload for '_+_' applied to '(string, int)'"],
  ['syntax error', 'claims.sub ==', 'claims', 'bool', 'compilation failed: ERROR: <input>:1:'],
  ['user fields', "user.username == 'a' && user.uid != '' && 'g' in user.groups && size(user.extra) >= 0", 'user', 'bool', ''],
  ['unknown user field', 'user.email == ""', 'user', 'bool', "undefined field 'email'"],
  ['user.username alone is a string', 'user.username', 'user', 'bool', 'must evaluate to bool'],
  ['typed user fields catch mistakes', 'user.username + 1 == 2', 'user', 'bool', "found no matching overload for '_+_' applied to '(string, int)'"],
  ['claims is not declared in user rules', "claims.sub == 'x'", 'user', 'bool', "undeclared reference to 'claims'"],
];

t.test('compilation: what compiles, and the errors upstream reports before starting', async (t) => {
  for (const [rule, expr, variable, expect, err] of compileRows) {
    if (!err) {
      t.doesNotThrow(() => compileExpression(expr, variable, expect), rule);
      continue;
    }
    let got = '';
    try {
      compileExpression(expr, variable, expect);
    } catch (e) {
      t.ok(e instanceof CelCompileError, `${rule}: a compile error`);
      got = (e as CelCompileError).detail;
    }
    t.match(got, err, rule);
  }
});

t.test('evaluation over JSON claims', async (t) => {
  const claims = celInput({ sub: 'alice', email: 'Alice@Example.com', exp: 1700000000, ratio: 0.5, groups: ['dev', 'ops'], nested: { team: 'a' }, email_verified: true });
  const run = (e: string) => compileExpression(e, 'claims', 'any').evaluate({ claims });
  t.equal(run("'u:' + claims.sub"), 'u:alice');
  t.equal(run('claims.exp > 1600000000'), true, 'integral claims are CEL ints (comparable with int literals)');
  t.equal(run('claims.ratio < 1.0'), true, 'fractional claims are doubles');
  t.equal(run("claims.email.split('@')[1].lowerAscii()"), 'example.com');
  t.equal(run('claims.nested.team'), 'a', 'nested objects select');
  t.same(stringList(run("claims.groups.map(g, 'g:' + g)") as never), ['g:dev', 'g:ops']);
  t.ok(isError(run('claims.missing')), 'a missing claim is an evaluation error (refused, not crashed)');
  const user = { username: 'system:x', uid: '', groups: ['a'], extra: { 'acme.io/t': ['1'] } };
  t.equal(compileExpression("!user.username.startsWith('system:')", 'user', 'bool').evaluate({ user }), false);
  t.equal(compileExpression("user.extra['acme.io/t'][0] == '1'", 'user', 'bool').evaluate({ user }), true);
});

t.test('mapping results as string lists: string, list of strings, null; empty values dropped', async (t) => {
  const claims = celInput({ one: 'a', none: '', list: ['a', '', 'b'], nums: [1], n: null });
  const list = (e: string) => stringList(compileExpression(e, 'claims', 'any').evaluate({ claims }) as never);
  t.same(list('claims.one'), ['a']);
  t.same(list('claims.none'), [], 'an empty string is no value');
  t.same(list('claims.list'), ['a', 'b'], 'empty strings in a list are dropped');
  t.same(list('claims.n'), [], 'null is no value');
  t.match(list('claims.nums'), { message: 'expression must return a string or a list of strings' });
  t.match(list('42'), { message: 'expression must return a string or a list of strings' });
});

t.test('the email / email_verified select check', async (t) => {
  t.ok(compileExpression('claims.email', 'claims', 'any').selects('claims', 'email'));
  t.notOk(compileExpression('claims.emailx', 'claims', 'any').selects('claims', 'email'));
  t.ok(compileExpression("claims.email_verified ? claims.email : ''", 'claims', 'any').selects('claims', 'email_verified'));
  t.ok(compileExpression('has(claims.email_verified)', 'claims', 'bool').selects('claims', 'email_verified'), 'has() counts as use');
});
