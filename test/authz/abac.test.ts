import t from 'tap';
import { abacAuthorizer, parsePolicyFile } from '../../core/authz/abac.js';
import type { Attributes } from '../../core/authz/authorizer.js';

const V1 = 'abac.authorization.svc.io/v1beta1';
const policy = (spec: Record<string, unknown>, apiVersion = V1): string => JSON.stringify({ apiVersion, kind: 'Policy', spec });

const res = (user: string, groups: string[], verb: string, resource: string, namespace = 'ns', apiGroup = ''): Attributes => ({
  user: { username: user, groups },
  verb,
  isResourceRequest: true,
  path: '',
  namespace,
  apiGroup,
  apiVersion: 'v1',
  resource,
  subresource: '',
  name: '',
});
const nonRes = (user: string, groups: string[], verb: string, path: string): Attributes => ({
  user: { username: user, groups },
  verb,
  isResourceRequest: false,
  path,
  namespace: '',
  apiGroup: '',
  apiVersion: '',
  resource: '',
  subresource: '',
  name: '',
});

const AUTH = ['system:authenticated'];
const file = [
  '# comments and blank lines are skipped',
  '',
  policy({ user: 'alice', namespace: '*', resource: '*', apiGroup: '*' }),
  policy({ user: 'bob', namespace: 'projectCaribou', resource: 'configmaps', readonly: true }),
  policy({ group: 'dev', namespace: 'dev', resource: 'secrets', apiGroup: '' }),
  policy({ user: '*', nonResourcePath: '/version', readonly: true }),
  policy({ user: 'carol', nonResourcePath: '/logs/*' }),
  policy({ user: 'dave', namespace: '*', resource: 'leases', apiGroup: 'coordination.svc.io' }),
  // legacy unversioned lines (v0): empty namespace and resource also allow non-resource paths, every API group matches
  JSON.stringify({ user: 'erin' }),
  JSON.stringify({ user: 'frank', readonly: true, resource: 'events' }),
  // upstream's group spelling is accepted too
  policy({ user: 'gina', namespace: 'g', resource: '*', apiGroup: '*' }, 'abac.authorization.kubernetes.io/v1beta1'),
].join('\n');

const rows: [string, Attributes, 'allow' | 'no-opinion'][] = [
  ['a user with every resource, namespace and group may do anything to resources', res('alice', AUTH, 'delete', 'secrets', 'x'), 'allow'],
  ['... but not non-resource paths (no nonResourcePath)', nonRes('alice', AUTH, 'get', '/healthz'), 'no-opinion'],
  ['a readonly policy allows get', res('bob', AUTH, 'get', 'configmaps', 'projectCaribou'), 'allow'],
  ['a readonly policy allows list and watch', res('bob', AUTH, 'watch', 'configmaps', 'projectCaribou'), 'allow'],
  ['a readonly policy does not allow create', res('bob', AUTH, 'create', 'configmaps', 'projectCaribou'), 'no-opinion'],
  ['the namespace must match', res('bob', AUTH, 'get', 'configmaps', 'other'), 'no-opinion'],
  ['the resource must match', res('bob', AUTH, 'get', 'secrets', 'projectCaribou'), 'no-opinion'],
  ['an unset apiGroup matches only the core group', res('bob', AUTH, 'get', 'configmaps', 'projectCaribou', 'x.svc.io'), 'no-opinion'],
  ['a group policy matches members', res('zed', ['dev', ...AUTH], 'update', 'secrets', 'dev'), 'allow'],
  ['a group policy does not match others', res('zed', AUTH, 'update', 'secrets', 'dev'), 'no-opinion'],
  ['user "*" means every authenticated user', nonRes('anyone', AUTH, 'get', '/version'), 'allow'],
  ['user "*" does not include anonymous users', nonRes('system:anonymous', ['system:unauthenticated'], 'get', '/version'), 'no-opinion'],
  ['a readonly non-resource policy refuses post', nonRes('anyone', AUTH, 'post', '/version'), 'no-opinion'],
  ['a trailing * in nonResourcePath matches the prefix', nonRes('carol', AUTH, 'get', '/logs/kube.log'), 'allow'],
  ['a trailing * does not match the bare prefix without its slash', nonRes('carol', AUTH, 'get', '/log'), 'no-opinion'],
  ['apiGroup must match a named group', res('dave', AUTH, 'update', 'leases', 'n', 'coordination.svc.io'), 'allow'],
  ['apiGroup must match: core is not coordination', res('dave', AUTH, 'update', 'leases', 'n', ''), 'no-opinion'],
  ['v0: a user-only line allows every resource in every group', res('erin', AUTH, 'delete', 'csidrivers', '', 'storage.svc.io'), 'allow'],
  ['v0: a user-only line allows non-resource paths', nonRes('erin', AUTH, 'get', '/metrics'), 'allow'],
  ['v0: readonly with a resource allows reading it in any namespace', res('frank', AUTH, 'list', 'events', 'any'), 'allow'],
  ['v0: readonly refuses writes', res('frank', AUTH, 'create', 'events', 'any'), 'no-opinion'],
  ['v0: a resource line does not allow non-resource paths', nonRes('frank', AUTH, 'get', '/metrics'), 'no-opinion'],
  ['the upstream group spelling works', res('gina', AUTH, 'create', 'configmaps', 'g'), 'allow'],
  ['nobody else matches', res('mallory', AUTH, 'get', 'configmaps'), 'no-opinion'],
];

t.test('ABAC: a request is allowed when a policy matches subject, verb and resource or path', async (t) => {
  const z = abacAuthorizer(parsePolicyFile(file, 'policy.jsonl'));
  for (const [rule, a, want] of rows) {
    const d = await z.authorize(a);
    t.equal(d.decision, want, rule);
    if (want === 'no-opinion') t.equal(d.reason, 'No policy matched.', `${rule}: upstream's reason`);
  }
});

t.test('ABAC: v1beta1 user or group "*" means every authenticated user', async (t) => {
  const z = abacAuthorizer(parsePolicyFile(policy({ group: '*', namespace: '*', resource: 'configmaps', readonly: true }), 'p'));
  t.equal((await z.authorize(res('x', AUTH, 'get', 'configmaps'))).decision, 'allow');
  t.equal((await z.authorize(res('x', ['system:unauthenticated'], 'get', 'configmaps'))).decision, 'no-opinion');
});

t.test('ABAC: rules review lists the policies that apply to the user in the namespace', async (t) => {
  const z = abacAuthorizer(parsePolicyFile(file, 'p'));
  t.same(await z.rulesFor!({ username: 'bob', groups: AUTH }, 'projectCaribou'), {
    resourceRules: [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['configmaps'] }],
    // as upstream: a policy lists only when its namespace is "*" or the one asked (the /version policy has none)
    nonResourceRules: [],
    incomplete: false,
  });
  const erin = await z.rulesFor!({ username: 'erin', groups: AUTH }, 'any');
  t.same(erin.resourceRules[0], { verbs: ['*'], apiGroups: ['*'], resources: ['*'] });
  t.same(erin.nonResourceRules[0], { verbs: ['*'], nonResourceURLs: ['*'] });
  t.same((await z.rulesFor!({ username: 'bob', groups: AUTH }, 'other')).resourceRules, [], 'another namespace lists nothing');
});

const badLines: [string, string, RegExp][] = [
  ['a line that is not JSON', '{"user": "alice",', /^error reading policy file p, line 2: \{"user": "alice",: unexpected end of JSON input$/],
  ['a stray character', '{"user": alice}', /line 2: .*: invalid character 'a' looking for beginning of value$/],
  ['a JSON array', '[1, 2]', /line 2: \[1, 2\]: json: cannot unmarshal array into Go value of type abac\.Policy$/],
  ['a wrong field type (v1beta1)', policy({ user: 'a', readonly: 'yes' }), /line 2: .*: json: cannot unmarshal string into Go struct field Policy\.spec\.readonly of type bool$/],
  ['a wrong field type (v0)', JSON.stringify({ user: 7 }), /line 2: .*: json: cannot unmarshal number into Go struct field Policy\.user of type string$/],
  ['an unknown apiVersion', policy({ user: 'a' }, 'abac.authorization.svc.io/v9'), /line 2: .*: no kind "Policy" is registered for version "abac\.authorization\.svc\.io\/v9"$/],
  ['an unknown kind', JSON.stringify({ apiVersion: V1, kind: 'Role', spec: {} }), /no kind "Role" is registered for version/],
  ['an apiVersion without kind', JSON.stringify({ apiVersion: V1, spec: {} }), /line 2: .*: Object 'Kind' is missing in/],
];

t.test('ABAC: a malformed policy file is an error naming the file, the line number and the line', async (t) => {
  for (const [rule, line, want] of badLines) {
    t.throws(() => parsePolicyFile(`${policy({ user: 'ok', namespace: '*', resource: '*' })}\n${line}\n`, 'p'), want, rule);
  }
});
