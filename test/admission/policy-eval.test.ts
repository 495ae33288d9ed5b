/**
 * The policy pieces without a server: rule and selector matching (match.ts), and the evaluation of a
 * policy (evaluate.ts): messages, failure policies, match conditions, lazy variables, the cost limits,
 * audit annotations and the authorizer library with synchronous and asynchronous authorizers.
 */
import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import type { Authorizer } from '../../core/authz/authorizer.js';
import { matchRequestOf, matchResources, ruleMatches, rulesCouldMatch } from '../../core/registry/admissionregistration/match.js';
import { configMaps } from '../../core/registry/core/configmaps.js';
import { namespaces } from '../../core/registry/core/namespaces.js';
import type { ValidatingAdmissionPolicy } from '../../core/registry/admissionregistration/validatingadmissionpolicies.js';
import { AuthzSession, authorizerValue } from '../../core/admission/policy/cel.js';
import { compilePolicy, validatePolicy } from '../../core/admission/policy/evaluate.js';

const req = (over: Partial<ReturnType<typeof matchRequestOf>> = {}) => ({ ...matchRequestOf(configMaps, 'CREATE', '', 'ns', 'x'), ...over });

t.test('rules: operations, groups (k8s.io spellings too), versions, resource/subresource wildcards, scope', async (t) => {
  const rule = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] };
  t.ok(ruleMatches(rule, req()));
  t.notOk(ruleMatches(rule, req({ operation: 'UPDATE' })));
  t.ok(ruleMatches({ ...rule, operations: ['*'] }, req({ operation: 'DELETE' })));
  t.notOk(ruleMatches(rule, req({ subresource: 'status' })), 'a plain resource does not cover its subresources');
  t.ok(ruleMatches({ ...rule, resources: ['configmaps/*'] }, req({ subresource: 'status' })));
  t.ok(ruleMatches({ ...rule, resources: ['*/status'] }, req({ subresource: 'status' })));
  t.notOk(ruleMatches({ ...rule, resources: ['*'] }, req({ subresource: 'status' })));
  t.ok(ruleMatches({ ...rule, resources: ['*/*'] }, req({ subresource: 'status' })));
  t.ok(ruleMatches({ ...rule, apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }, req({ group: 'storage.svc.io', resource: 'csidrivers', namespaced: false, namespace: '' })));
  t.notOk(ruleMatches({ ...rule, scope: 'Cluster' }, req()));
  t.ok(ruleMatches({ ...rule, scope: 'Namespaced' }, req()));
  t.ok(rulesCouldMatch([rule], 'CREATE', configMaps, ''));
  t.notOk(rulesCouldMatch([rule], 'CREATE', namespaces, ''));
});

t.test('matchResources: selectors, exclusions, names, Equivalent versions', async (t) => {
  const obj = { metadata: { name: 'x', labels: { app: 'a' } } } as unknown as ApiObject;
  const labels: Record<string, Record<string, string>> = { ns: { team: 'a' }, other: {} };
  const inputs = (r = req()) => ({ req: r, object: obj, oldObject: undefined, namespaceLabels: (n: string) => labels[n], equivalentVersions: () => ['v1', 'v2'] });
  const rules = [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }];
  t.ok(matchResources({ resourceRules: rules, namespaceSelector: { matchLabels: { team: 'a' } } }, inputs(), true));
  t.notOk(matchResources({ resourceRules: rules, namespaceSelector: { matchLabels: { team: 'a' } } }, inputs(req({ namespace: 'other' })), true));
  t.ok(matchResources({ resourceRules: rules, namespaceSelector: { matchLabels: { team: 'a' } } }, inputs(req({ namespace: '', namespaced: false })), true), 'cluster-scoped objects pass the namespace selector');
  t.notOk(matchResources({ resourceRules: rules, objectSelector: { matchLabels: { app: 'b' } } }, inputs(), true));
  t.notOk(matchResources({ resourceRules: rules, excludeResourceRules: [{ ...rules[0]!, resourceNames: ['x'] }] }, inputs(), true));
  t.ok(matchResources({ resourceRules: rules, excludeResourceRules: [{ ...rules[0]!, resourceNames: ['y'] }] }, inputs(), true));
  t.notOk(matchResources({}, inputs(), true), 'a policy needs rules');
  t.ok(matchResources({}, inputs(), false), 'a binding without rules narrows nothing');
  const v2 = [{ operations: ['*'], apiGroups: [''], apiVersions: ['v2'], resources: ['configmaps'] }];
  t.same(matchResources({ resourceRules: v2, matchPolicy: 'Equivalent' }, inputs(), true), { group: '', version: 'v2', resource: 'configmaps' });
  t.notOk(matchResources({ resourceRules: v2, matchPolicy: 'Exact' }, inputs(), true));
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const policy = (spec: any): ValidatingAdmissionPolicy => ({ apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'p' }, spec }) as ValidatingAdmissionPolicy;
const user = { username: 'alice', groups: ['dev'] };
const inputs = (object: unknown, authorizer?: Authorizer) => ({
  object,
  oldObject: null,
  request: { operation: 'CREATE', userInfo: { username: 'alice' }, kind: { group: '', version: 'v1', kind: 'ConfigMap' } },
  params: null,
  namespaceObject: null,
  authorizer: authorizerValue(user, { group: '', resource: 'configmaps', subresource: '', namespace: 'ns', name: 'x' }),
  session: new AuthzSession(authorizer),
});

t.test('messages: messageExpression, message, the expression; errors per failure policy', async (t) => {
  const p = compilePolicy(
    policy({
      validations: [
        { expression: 'object.n < 1', messageExpression: "'n is ' + string(object.n)" },
        { expression: 'object.n < 2', message: ' plain ' },
        { expression: ' object.n < 3 ' },
        { expression: 'object.n < 4', messageExpression: "'two\\nlines'" },
        { expression: 'object.missing == 1' },
      ],
    }),
  );
  const r = await validatePolicy(p, inputs({ n: 5 }), 'Fail');
  t.same(
    r.decisions.map((d) => [d.action, d.evaluation, d.message, d.reason]),
    [
      ['deny', 'deny', 'n is 5', 'Invalid'],
      ['deny', 'deny', 'plain', 'Invalid'],
      ['deny', 'deny', 'failed expression: object.n < 3', 'Invalid'],
      ['deny', 'deny', 'failed expression: object.n < 4', 'Invalid'],
      ['deny', 'error', r.decisions[4]!.message, ''],
    ],
  );
  t.match(r.decisions[4]!.message, /^expression 'object.missing == 1' resulted in error: /);
  const ignored = await validatePolicy(p, inputs({ n: 5 }), 'Ignore');
  t.equal(ignored.decisions[4]!.action, 'admit');
});

t.test('match conditions: a false one skips, errors follow the failure policy', async (t) => {
  const p = compilePolicy(policy({ matchConditions: [{ name: 'big', expression: 'object.n > 3' }], validations: [{ expression: 'false' }] }));
  t.ok((await validatePolicy(p, inputs({ n: 1 }), 'Fail')).skipped);
  t.equal((await validatePolicy(p, inputs({ n: 5 }), 'Fail')).decisions[0]!.action, 'deny');
  const err = await validatePolicy(p, inputs({}), 'Fail');
  t.match(err.decisions[0]!.message, /^expression 'object.n > 3' resulted in error: /);
  t.same((await validatePolicy(p, inputs({}), 'Ignore')).decisions[0]!.action, 'admit');
});

t.test('variables are lazy: one that errors only matters when read', async (t) => {
  const p = compilePolicy(
    policy({
      variables: [
        { name: 'bad', expression: 'object.missing' },
        { name: 'n', expression: 'object.n' },
      ],
      validations: [{ expression: 'variables.n == 1' }, { expression: 'variables.bad == 1' }],
    }),
  );
  const r = await validatePolicy(p, inputs({ n: 1 }), 'Fail');
  t.equal(r.decisions[0]!.action, 'admit');
  t.equal(r.decisions[1]!.evaluation, 'error');
});

t.test('cost: over the per-call limit is that expression\'s error', async (t) => {
  const p = compilePolicy(policy({ validations: [{ expression: 'object.items.all(x, object.items.all(y, x + y >= 0))' }, { expression: 'true' }] }));
  const items = Array.from({ length: 3000 }, (_, i) => i);
  const r = await validatePolicy(p, inputs({ items }), 'Fail');
  t.equal(r.decisions[0]!.message, "expression 'object.items.all(x, object.items.all(y, x + y >= 0))' resulted in error: operation cancelled: actual cost limit exceeded");
  t.equal(r.decisions[1]!.action, 'admit');
  const small = await validatePolicy(p, inputs({ items: [1, 2, 3] }), 'Fail');
  t.equal(small.decisions[0]!.action, 'admit');
});

t.test('audit annotations: strings published, null and empty excluded, other types an error', async (t) => {
  const p = compilePolicy(
    policy({
      auditAnnotations: [
        { key: 'a', valueExpression: "' v '" },
        { key: 'b', valueExpression: 'null' },
        { key: 'c', valueExpression: "''" },
      ],
    }),
  );
  const r = await validatePolicy(p, inputs({}), 'Fail');
  t.same(r.auditAnnotations.map((a) => [a.key, a.action, a.value]), [['a', 'publish', 'v'], ['b', 'exclude', ''], ['c', 'exclude', '']]);
});

t.test('the authorizer library, with an authorizer answering at once or later', async (t) => {
  const asked: string[] = [];
  const decide = (a: { user: { username: string }; verb: string; resource: string; apiGroup: string; name: string; path: string }) => {
    asked.push(`${a.user.username} ${a.verb} ${a.apiGroup}/${a.resource}/${a.name}${a.path}`);
    return { decision: (a.verb === 'get' || a.path === '/healthz' ? 'allow' : 'no-opinion') as 'allow' | 'no-opinion', reason: 'because' };
  };
  const sync: Authorizer = { name: 'test', authorize: (a) => decide(a) };
  const later: Authorizer = { name: 'test', authorize: async (a) => decide(a) };
  const p = compilePolicy(
    policy({
      validations: [
        { expression: "authorizer.group('').resource('secrets').namespace('ns').check('get').allowed()" },
        { expression: "authorizer.group('').resource('secrets').check('delete').allowed()", messageExpression: "'x'" },
        { expression: "authorizer.requestResource.check('create').reason() == 'because'" },
        { expression: "authorizer.path('/healthz').check('get').allowed()" },
        { expression: "authorizer.serviceAccount('ns', 'sa').group('apps.k8s.io').resource('deployments').name('d').check('get').allowed()" },
      ],
    }),
  );
  for (const [name, a] of [['sync', sync], ['async', later]] as const) {
    asked.length = 0;
    const r = await validatePolicy(p, inputs({}, a), 'Fail');
    t.same(r.decisions.map((d) => d.action), ['admit', 'deny', 'admit', 'admit', 'admit'], name);
    t.ok(asked.includes('system:serviceaccount:ns:sa get apps.svc.io/deployments/d'), `${name}: service account and group spelling`);
  }
});

t.test('messages joining several computed strings stay within the per-call limit', async (t) => {
  const p = compilePolicy(
    policy({
      variables: [{ name: 'keys', expression: 'size(object.data)' }, { name: 'who', expression: "'user ' + request.userInfo.username" }],
      validations: [{ expression: 'false', messageExpression: "variables.who + ' has ' + string(variables.keys) + ' keys, ' + string(variables.keys) + '.'" }],
    }),
  );
  const r = await validatePolicy(p, inputs({ data: { a: '1' } }), 'Fail');
  t.equal(r.decisions[0]!.message, 'user alice has 1 keys, 1.');
});
