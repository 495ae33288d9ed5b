import t from 'tap';
import { type Attributes, type Authorizer, type AuthorizerDecision, chain, forbiddenMessage, privilegedGroups } from '../../core/authz/authorizer.js';

const attrs = (over: Partial<Attributes> = {}): Attributes => ({
  user: { username: 'alice', groups: ['dev'] },
  verb: 'get',
  isResourceRequest: true,
  path: '/api/v1/namespaces/ns/configmaps/cm',
  namespace: 'ns',
  apiGroup: '',
  apiVersion: 'v1',
  resource: 'configmaps',
  subresource: '',
  name: 'cm',
  ...over,
});
const answers = (name: string, decision: AuthorizerDecision['decision'], reason = '', async = false): Authorizer => ({
  name,
  authorize: () => (async ? Promise.resolve({ decision, reason }) : { decision, reason }),
});

const rows: [string, Authorizer[], AuthorizerDecision['decision'], string][] = [
  ['an empty chain has no opinion (the request is denied)', [], 'no-opinion', ''],
  ['the first allow decides', [answers('a', 'allow'), answers('b', 'deny')], 'allow', ''],
  ['the first deny decides', [answers('a', 'deny', 'nope'), answers('b', 'allow')], 'deny', 'nope'],
  ['no-opinion asks the next module', [answers('a', 'no-opinion'), answers('b', 'allow')], 'allow', ''],
  ['all no-opinion: no opinion, with every reason given', [answers('a', 'no-opinion', 'r1'), answers('b', 'no-opinion', 'r2')], 'no-opinion', 'r1\nr2'],
  ['asynchronous modules are asked in order', [answers('a', 'no-opinion', '', true), answers('b', 'deny', 'x', true), answers('c', 'allow')], 'deny', 'x'],
  ['an allow after an asynchronous no-opinion decides', [answers('a', 'no-opinion', 'r1', true), answers('b', 'allow')], 'allow', ''],
];

t.test('authorizer chain: modules in order, first allow or deny decides', async (t) => {
  for (const [rule, list, decision, reason] of rows) {
    const d = await chain(list).authorize(attrs());
    t.same({ decision: d.decision, reason: d.reason }, { decision, reason }, rule);
  }
});

t.test('system:masters is allowed before any mode is asked', async (t) => {
  const c = chain([privilegedGroups(['system:masters']), answers('deny', 'deny', 'no')]);
  t.equal((await c.authorize(attrs({ user: { username: 'root', groups: ['system:masters'] } }))).decision, 'allow');
  t.equal((await c.authorize(attrs())).decision, 'deny');
});

t.test('forbidden messages are worded as upstream', async (t) => {
  const rows: [Partial<Attributes>, string][] = [
    [{}, 'User "alice" cannot get resource "configmaps" in API group "" in the namespace "ns"'],
    [{ namespace: '', resource: 'csidrivers', apiGroup: 'storage.svc.io', verb: 'list', name: '' }, 'User "alice" cannot list resource "csidrivers" in API group "storage.svc.io" at the cluster scope'],
    [{ subresource: 'status', verb: 'update' }, 'User "alice" cannot update resource "configmaps/status" in API group "" in the namespace "ns"'],
    [{ isResourceRequest: false, path: '/metrics', verb: 'get' }, 'User "alice" cannot get path "/metrics"'],
  ];
  for (const [over, want] of rows) t.equal(forbiddenMessage(attrs(over)), want);
});

const failing = (name: string, decision: AuthorizerDecision['decision'], error: string, async = false): Authorizer => ({
  name,
  authorize: () => (async ? Promise.resolve({ decision, reason: '', error }) : { decision, reason: '', error }),
});

t.test('authorizer chain: evaluation errors travel with the decision, as upstream unions them', async (t) => {
  const rows: [string, Authorizer[], AuthorizerDecision][] = [
    ['a deciding authorizer keeps only its own error', [failing('a', 'no-opinion', 'e1'), failing('b', 'deny', 'e2')], { decision: 'deny', reason: '', error: 'e2' }],
    ['an allow after a failed webhook allows (no error)', [failing('a', 'no-opinion', 'e1', true), answers('b', 'allow')], { decision: 'allow', reason: '' }],
    ['no opinion from all: every error, aggregated', [failing('a', 'no-opinion', 'e1'), failing('b', 'no-opinion', 'e2', true)], { decision: 'no-opinion', reason: '', error: '[e1, e2]' }],
    ['one error is not bracketed', [failing('a', 'no-opinion', 'e1'), answers('b', 'no-opinion', 'r')], { decision: 'no-opinion', reason: 'r', error: 'e1' }],
  ];
  for (const [rule, list, want] of rows) t.same(await chain(list).authorize(attrs()), want, rule);
});

t.test("authorizer chain: rules are every member's, incomplete when one cannot list", async (t) => {
  const lists = (name: string, resource: string, incomplete = false, err?: string, async = false): Authorizer => {
    const r = { resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: [resource] }], nonResourceRules: [], incomplete, ...(err ? { evaluationError: err } : {}) };
    return { name, authorize: () => ({ decision: 'no-opinion', reason: '' }), rulesFor: () => (async ? Promise.resolve(r) : r) };
  };
  const user = { username: 'alice', groups: [] };
  const all = await chain([lists('a', 'configmaps'), lists('b', 'secrets', false, undefined, true)]).rulesFor!(user, 'ns');
  t.same(all.resourceRules.map((r) => r.resources), [['configmaps'], ['secrets']], 'joined in order');
  t.equal(all.incomplete, false);
  const partial = await chain([lists('a', 'configmaps'), answers('webhook-like', 'no-opinion')]).rulesFor!(user, 'ns');
  t.equal(partial.incomplete, true, 'a member without rulesFor makes the list incomplete');
  const errs = await chain([lists('a', 'x', true, 'e1'), lists('b', 'y', true, 'e2')]).rulesFor!(user, 'ns');
  t.same([errs.incomplete, errs.evaluationError], [true, '[e1, e2]'], 'errors aggregated');
  const masters = await chain([privilegedGroups(['system:masters']), lists('a', 'x')]).rulesFor!({ username: 'root', groups: ['system:masters'] }, 'ns');
  t.same([masters.resourceRules.length, masters.incomplete], [1, false], 'the system:masters bypass lists nothing of its own and does not make the list incomplete');
});
