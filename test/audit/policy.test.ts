import t from 'tap';
import { parsePolicy, PolicyError } from '../../core/audit/policy.js';
import { requestInfoFor } from '../../core/request/request-info.js';
import type { UserInfo } from '../../core/api/types.js';

const alice: UserInfo = { username: 'alice', groups: ['dev', 'system:authenticated'] };
const bob: UserInfo = { username: 'bob', groups: ['system:authenticated'] };

const POLICY = `
apiVersion: audit.svc.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    users: [system:kube-proxy]
  - level: RequestResponse
    userGroups: [dev]
    resources:
      - group: ""
        resources: [secrets]
        resourceNames: [top-secret]
  - level: None
    nonResourceURLs: [/healthz*, /version]
  - level: Request
    verbs: [create, update]
    resources:
      - group: ""
        resources: [configmaps]
  - level: Metadata
    resources:
      - group: ""
        resources: [pods/log, "*/status"]
      - group: apps.svc.io
        resources: ["deployments/*"]
    omitStages: [ResponseStarted]
  - level: Request
    namespaces: [svc-system]
    omitManagedFields: true
  - level: Metadata
    resources:
      - group: storage.svc.io
        resources: ["*"]
  - level: Metadata
    nonResourceURLs: ["*"]
`;

/** [what, user, method, path, expected level] */
const cases: [string, UserInfo | undefined, string, string, string][] = [
  ['users: a listed user matches', { username: 'system:kube-proxy', groups: [] }, 'GET', '/api/v1/namespaces/default/configmaps/a', 'None'],
  ['userGroups with resourceNames: the named object of a member', alice, 'GET', '/api/v1/namespaces/default/secrets/top-secret', 'RequestResponse'],
  ['resourceNames: another name does not match', alice, 'GET', '/api/v1/namespaces/default/secrets/other', 'None'],
  ['userGroups: a non-member does not match', bob, 'GET', '/api/v1/namespaces/default/secrets/top-secret', 'None'],
  ['nonResourceURLs: a trailing * matches a prefix', bob, 'GET', '/healthz/ping', 'None'],
  ['nonResourceURLs: an exact entry matches only itself (then * matches)', bob, 'GET', '/version/x', 'Metadata'],
  ['nonResourceURLs: an exact entry', bob, 'GET', '/version', 'None'],
  ['nonResourceURLs rules do not match resource requests', bob, 'GET', '/apis/other.svc.io/v1/things', 'None'],
  ['verbs: create on configmaps', bob, 'POST', '/api/v1/namespaces/default/configmaps', 'Request'],
  ['verbs: get on configmaps falls through to no rule', bob, 'GET', '/api/v1/namespaces/default/configmaps/a', 'None'],
  ['resources: resource/subresource matches exactly', bob, 'GET', '/api/v1/namespaces/default/pods/p/log', 'Metadata'],
  ['resources: */subresource matches any resource', bob, 'PUT', '/api/v1/namespaces/default/configmaps/x/status', 'Metadata'],
  ['resources: a plain resource does not match resource/subresource', bob, 'GET', '/api/v1/namespaces/default/pods/p', 'None'],
  ['resources: resource/* matches every subresource of that resource', bob, 'GET', '/apis/apps.svc.io/v1/namespaces/default/deployments/d/scale', 'Metadata'],
  ['namespaces: a request in the namespace', bob, 'GET', '/api/v1/namespaces/svc-system/configmaps/a', 'Request'],
  ['resources: * matches every resource of the group', bob, 'LIST', '/apis/storage.svc.io/v1/csidrivers', 'Metadata'],
  ['resources: a group must match exactly', bob, 'GET', '/apis/storage.k8s.io/v1/csidrivers', 'None'],
  ['a failed authentication has no user: user rules do not match', undefined, 'GET', '/apis/storage.svc.io/v1/csidrivers', 'Metadata'],
];

t.test('rules are matched in order on users, userGroups, verbs, resources, namespaces and nonResourceURLs', async (t) => {
  const p = parsePolicy(POLICY);
  for (const [what, user, method, path, level] of cases) {
    const url = new URL(path, 'https://x');
    const info = requestInfoFor(method === 'LIST' ? 'GET' : method, url.pathname, url.searchParams);
    t.equal(p.evaluate({ user, info, path: url.pathname }).level, level, what);
  }
});

t.test('omitStages: the policy-wide stages join each rule’s own', async (t) => {
  const p = parsePolicy(POLICY);
  const info = requestInfoFor('GET', '/api/v1/namespaces/default/pods/p/log', new URLSearchParams());
  t.same([...p.evaluate({ user: bob, info, path: '' }).omitStages].sort(), ['RequestReceived', 'ResponseStarted']);
  const none = requestInfoFor('GET', '/unknown', new URLSearchParams());
  const resource = requestInfoFor('GET', '/apis/other.svc.io/v1/things', new URLSearchParams());
  t.same([...p.evaluate({ user: bob, info: resource, path: resource.path }).omitStages], ['RequestReceived'], 'no rule matched: the policy-wide stages');
  t.equal(p.evaluate({ user: bob, info: none, path: '/unknown' }).level, 'Metadata');
});

t.test('omitManagedFields: a rule’s own setting wins over the policy’s', async (t) => {
  const p = parsePolicy(`apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
  - level: Request
    verbs: [create]
    omitManagedFields: false
  - level: Request
`);
  const create = requestInfoFor('POST', '/api/v1/namespaces/default/configmaps', new URLSearchParams());
  const get = requestInfoFor('GET', '/api/v1/namespaces/default/configmaps/a', new URLSearchParams());
  t.equal(p.evaluate({ user: bob, info: create, path: '' }).omitManagedFields, false, 'the rule says false');
  t.equal(p.evaluate({ user: bob, info: get, path: '' }).omitManagedFields, true, 'the rule is silent: the policy says true');
});

t.test('the upstream spelling audit.k8s.io/v1 is read, as JSON too', async (t) => {
  const p = parsePolicy(JSON.stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'Metadata' }] }));
  t.equal(p.evaluate({ user: bob, info: requestInfoFor('GET', '/version', new URLSearchParams()), path: '/version' }).level, 'Metadata');
});

/** [what, policy text, the error must contain] */
const bad: [string, string, string][] = [
  ['a missing level is required', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- users: [a]\n', 'rules[0].level: Required value'],
  ['an unknown level is unsupported', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: Everything\n', 'rules[0].level: Unsupported value: "Everything"'],
  ['an unknown stage to omit', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Sometimes]\n', 'rules[0].omitStages[0]: Invalid value: "Sometimes"'],
  ['a policy-wide unknown stage', 'apiVersion: audit.svc.io/v1\nkind: Policy\nomitStages: [Later]\nrules:\n- level: None\n', 'omitStages[0]: Invalid value: "Later"'],
  ['a non-resource URL without a leading /', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [healthz]\n', "rules[0].nonResourceURLs[0]: Invalid value: \"healthz\": non-resource URL rules must begin with a '/' character"],
  ['a * before the end of a non-resource URL', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: ["/a*/b"]\n', "wildcards '*' must be the final character"],
  ['resources and nonResourceURLs together', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: ["/a"]\n  namespaces: [x]\n', 'rules[0].nonResourceURLs: Invalid value: ["/a"]: rules cannot apply to both regular resources and non-resource URLs'],
  ['a group that is not a DNS subdomain', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{group: "apps.svc.io/v1"}]\n', 'rules[0].resources[0].group: Invalid value: "apps.svc.io/v1"'],
  ['resourceNames without resources', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{group: "", resourceNames: [a]}]\n', 'rules[0].resources[0].resourceNames: Invalid value: ["a"]: using resourceNames requires at least one resource'],
  ['a list field that is a string', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  users: alice\n', 'rules[0].users: expected a list of strings, got string'],
  ['omitManagedFields that is not a boolean', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: None\n  omitManagedFields: "yes"\n', 'rules[0].omitManagedFields: expected boolean, got string'],
  ['no rules', 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules: []\n', 'loaded illegal policy with 0 rules'],
  ['a wrong kind', 'apiVersion: audit.svc.io/v1\nkind: Polcy\nrules:\n- level: None\n', 'kind: Unsupported value: "Polcy"'],
  ['an unknown apiVersion', 'apiVersion: audit.svc.io/v2\nkind: Policy\nrules:\n- level: None\n', 'apiVersion: Unsupported value: "audit.svc.io/v2"'],
  ['text that is not YAML', 'apiVersion: [unclosed\n', 'failed decoding'],
];

t.test('a malformed policy is refused with an error naming the field', async (t) => {
  for (const [what, text, want] of bad) {
    try {
      parsePolicy(text);
      t.fail(`${what}: accepted`);
    } catch (e) {
      t.ok(e instanceof PolicyError, `${what}: a PolicyError`);
      t.match((e as Error).message, want, what);
    }
  }
});

t.test('unknown fields are warned about and ignored, as upstream falls back to lenient decoding', async (t) => {
  const warnings: string[] = [];
  const p = parsePolicy('apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  usres: [a]\n', (m) => warnings.push(m));
  t.match(warnings[0], 'rules[0].usres');
  t.equal(p.evaluate({ user: bob, info: requestInfoFor('GET', '/version', new URLSearchParams()), path: '/version' }).level, 'Metadata', 'the misspelt field matched nothing');
});
