import t from 'tap';
import { type Attributes, selectorsFromQuery } from '../../core/authz/authorizer.js';
import { compileMatchCondition, evaluateConditions } from '../../core/authz/match-conditions.js';
import { celRequest, specFromAttributes } from '../../core/authz/sar.js';

const resource = (over: Partial<Attributes> = {}, query = ''): Attributes => {
  const q = new URLSearchParams(query);
  const a: Attributes = {
    user: { username: 'alice', uid: 'u1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a', 'b'] } },
    verb: 'list',
    isResourceRequest: true,
    path: '/api/v1/namespaces/ns/configmaps',
    namespace: 'ns',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'configmaps',
    subresource: '',
    name: '',
    ...over,
  };
  const sel = selectorsFromQuery(q.get('fieldSelector'), q.get('labelSelector'));
  if (sel) a.selectors = sel;
  return a;
};
const nonResource: Attributes = { ...resource(), isResourceRequest: false, path: '/healthz', verb: 'get', resource: '', namespace: '', apiVersion: '' };

const match = (exprs: string[], a: Attributes) => {
  const compiled = exprs.map((e) => compileMatchCondition(e, { withSelectors: true }));
  const req = celRequest(specFromAttributes(a, true), compiled.some((c) => c.usesFieldSelector), compiled.some((c) => c.usesLabelSelector));
  return evaluateConditions(compiled, req);
};

// [rule, expressions, attributes, result]
const rows: [string, string[], Attributes, 'match' | 'skip' | RegExp][] = [
  ['no false: the webhook is called', ['request.user == "alice"', '"dev" in request.groups'], resource(), 'match'],
  ['any false skips the webhook', ['request.user == "alice"', 'request.resourceAttributes.verb == "get"'], resource(), 'skip'],
  ['has() tells resource from non-resource requests', ['has(request.resourceAttributes)'], nonResource, 'skip'],
  ['non-resource attributes carry path and verb', ['request.nonResourceAttributes.path.startsWith("/health") && request.nonResourceAttributes.verb == "get"'], nonResource, 'match'],
  ['uid and extra are there', ['request.uid == "u1" && request.extra["scopes"].size() == 2'], resource(), 'match'],
  ['unset strings are empty, not missing', ['request.resourceAttributes.name == "" && request.resourceAttributes.group == ""'], resource(), 'match'],
  ['macros work', ['request.groups.exists(g, g.startsWith("system:"))', 'request.groups.all(g, g != "admins")'], resource(), 'match'],
  ['field selector requirements (In / NotIn)', ['request.resourceAttributes.fieldSelector.requirements.exists(r, r.key == "metadata.name" && r.operator == "NotIn" && r.values == ["x"])'], resource({}, 'fieldSelector=metadata.name!%3Dx'), 'match'],
  ['label selector requirements', ['request.resourceAttributes.labelSelector.requirements.all(r, r.operator in ["In", "Exists"])'], resource({}, 'labelSelector=app%3Dweb,tier'), 'match'],
  ['no selector: has() is false', ['!has(request.resourceAttributes.fieldSelector)'], resource(), 'match'],
  [
    'an error with no false: reported with the expression',
    ['request.nonResourceAttributes.verb == "get"'],
    resource(),
    /^cel evaluation error: expression 'request\.nonResourceAttributes\.verb == "get"' resulted in error: /,
  ],
  ['a false wins over an error', ['request.nonResourceAttributes.verb == "get"', 'request.user == "bob"'], resource(), 'skip'],
  ['several errors are aggregated', ['request.nonResourceAttributes.verb == "a"', 'request.extra["nope"].size() == 1'], resource(), /^\[cel evaluation error: .*, cel evaluation error: .*\]$/s],
];

t.test('match conditions: any false skips, all true calls, an error with no false is reported', async (t) => {
  for (const [rule, exprs, a, want] of rows) {
    const r = match(exprs, a);
    if (want === 'match') t.same(r, { match: true }, rule);
    else if (want === 'skip') t.same(r, { match: false }, rule);
    else t.match('error' in r ? r.error : '', want, rule);
  }
});

const compileErrors: [string, string, string][] = [
  ['an undeclared variable', 'user == "x"', "compilation failed: ERROR: <input>:1:1: undeclared reference to 'user' (in container '')\n | user == \"x\"\n | ^"],
  ['an undefined field of the request', 'request.username == "x"', "compilation failed: ERROR: <input>:1:8: undefined field 'username'\n | request.username == \"x\"\n | .......^"],
  ['an undefined field deeper in', 'request.resourceAttributes.kind == "x"', "compilation failed: ERROR: <input>:1:27: undefined field 'kind'\n | request.resourceAttributes.kind == \"x\"\n | ..........................^"],
  ['no matching overload', 'request.groups.startsWith("a")', "compilation failed: ERROR: <input>:1:26: found no matching overload for 'startsWith' applied to 'list(string).(string)'\n | request.groups.startsWith(\"a\")\n | .........................^"],
  ['comparing unlike types', 'request.user == 1', "compilation failed: ERROR: <input>:1:14: found no matching overload for '_==_' applied to '(string, int)'\n | request.user == 1\n | .............^"],
  ['a result that is not bool', 'request.groups', 'must evaluate to bool but got list(string)'],
  ['a syntax error', 'request.user ==', 'compilation failed: ERROR: <input>:1:14: Syntax error: found = but expecting end of input\n | request.user ==\n | .............^'],
];

t.test("match conditions: compile errors are worded as upstream's type check words them", async (t) => {
  for (const [rule, expr, want] of compileErrors) t.throws(() => compileMatchCondition(expr, { withSelectors: true }), { message: want }, rule);
  t.throws(
    () => compileMatchCondition('has(request.resourceAttributes.fieldSelector)', { withSelectors: false }),
    { message: /undefined field 'fieldSelector'/ },
    'without AuthorizeWithSelectors there are no selector fields',
  );
});
