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
