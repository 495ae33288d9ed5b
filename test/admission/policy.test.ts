/**
 * ValidatingAdmissionPolicy against a real server: a policy and binding refusing configmaps with a
 * key, Warn and Audit actions (audit log), parameters (a ConfigMap by name and by selector,
 * parameterNotFoundAction Deny and Allow), namespaceSelector, matchConditions, messageExpression,
 * variables, failurePolicy on a runtime error, a policy on a custom resource, the type-checking
 * status, kubectl apply of an upstream manifest, and the check metrics.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN, ALICE_TOKEN, startServer, tempDir, type TestServer } from '../helpers/server.js';
import { type Event, readEvents, writePolicy } from '../helpers/audit.js';
import { createCrd, crd } from '../helpers/crd.js';
import { KUBECTL, kubectlAsToken } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait.js';
import { existsSync } from 'node:fs';

const VAP = '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies';
const VAPB = '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicybindings';

const AUDIT = `apiVersion: audit.svc.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/livez*", "/readyz*"]
  - level: Metadata
`;

let s: TestServer;
let log: string;
let dir: string;

t.before(async () => {
  dir = tempDir('svc-vap-');
  log = join(dir, 'audit.log');
  s = await startServer([`--audit-policy-file=${writePolicy(dir, AUDIT)}`, `--audit-log-path=${log}`]);
  for (const ns of ['p1', 'p2', 'labelled', 'plain']) await s.admin.post('/api/v1/namespaces', { metadata: { name: ns, labels: ns === 'labelled' ? { team: 'a' } : {} } });
});
t.teardown(() => s.stop());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const policy = (name: string, spec: any) => ({ apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name }, spec });
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const binding = (name: string, spec: any) => ({ apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec });
const configmapRules = (ops = ['CREATE', 'UPDATE']) => ({ resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ops, resources: ['configmaps'] }] });
const cm = (ns: string, name: string, data: Record<string, string> = {}, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels }, data });

/** Creates a policy and binding and waits until a probe write is refused (or warned) as `until` says. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function install(p: any, b: any, until: () => Promise<boolean>): Promise<void> {
  const rp = await s.admin.post(VAP, p);
  if (rp.status !== 201) throw new Error(`policy: ${rp.status} ${rp.text}`);
  const rb = await s.admin.post(VAPB, b);
  if (rb.status !== 201) throw new Error(`binding: ${rb.status} ${rb.text}`);
  if (!(await waitFor(until, 5000))) throw new Error('the policy did not take effect');
}

async function remove(...names: string[]): Promise<void> {
  for (const n of names) {
    await s.admin.delete(`${VAPB}/${n}`);
    await s.admin.delete(`${VAP}/${n}`);
  }
}

let probe = 0;
const tryCreate = (ns: string, data: Record<string, string>, labels: Record<string, string> = {}) => s.admin.post(`/api/v1/namespaces/${ns}/configmaps`, cm(ns, `probe-${++probe}`, data, labels));

t.test('a policy and binding refuse configmaps with a forbidden key, with upstream\'s message and status', async (t) => {
  await install(
    policy('no-secret-key', { matchConstraints: configmapRules(), validations: [{ expression: "!has(object.data) || !('secret' in object.data)" }] }),
    binding('no-secret-key', { policyName: 'no-secret-key', validationActions: ['Deny'] }),
    async () => (await tryCreate('p1', { secret: 'x' })).status === 422,
  );
  const r = await s.admin.post('/api/v1/namespaces/p1/configmaps', cm('p1', 'bad', { secret: 'x' }));
  t.equal(r.status, 422);
  t.equal(r.json.reason, 'Invalid');
  t.equal(
    r.json.message,
    `configmaps "bad" is forbidden: ValidatingAdmissionPolicy 'no-secret-key' with binding 'no-secret-key' denied request: failed expression: !has(object.data) || !('secret' in object.data)`,
  );
  t.same(r.json.details.causes, [{ message: `ValidatingAdmissionPolicy 'no-secret-key' with binding 'no-secret-key' denied request: failed expression: !has(object.data) || !('secret' in object.data)` }]);
  t.equal((await tryCreate('p1', { fine: 'x' })).status, 201, 'other configmaps pass');
  // update: the same rule
  const ok = await s.admin.post('/api/v1/namespaces/p1/configmaps', cm('p1', 'upd', { a: '1' }));
  t.equal(ok.status, 201);
  const up = await s.admin.put('/api/v1/namespaces/p1/configmaps/upd', { ...ok.json, data: { secret: 'y' } });
  t.equal(up.status, 422);
  // delete is not covered by the rule
  t.equal((await s.admin.delete('/api/v1/namespaces/p1/configmaps/upd')).status, 200);
  const m = await s.admin.get('/metrics');
  t.match(m.text, /apiserver_validating_admission_policy_check_total\{[^}]*enforcement_action="deny"[^}]*policy="no-secret-key"[^}]*\} \d+/);
  await remove('no-secret-key');
});

t.test('reason and message: Forbidden is 403, the message is used', async (t) => {
  await install(
    policy('forbid', { matchConstraints: configmapRules(), validations: [{ expression: "!('x' in object.data)", message: 'no x please', reason: 'Forbidden' }] }),
    binding('forbid', { policyName: 'forbid', validationActions: ['Deny'] }),
    async () => (await tryCreate('p1', { x: '1' })).status === 403,
  );
  const r = await tryCreate('p1', { x: '1' });
  t.equal(r.json.reason, 'Forbidden');
  t.match(r.json.message, /denied request: no x please$/);
  await remove('forbid');
});

t.test('Warn adds a Warning header; Audit an audit annotation in upstream\'s format', async (t) => {
  await install(
    policy('warned', {
      matchConstraints: configmapRules(),
      validations: [{ expression: "!('w' in object.data)", messageExpression: "'key w in ' + object.metadata.name" }],
      auditAnnotations: [{ key: 'size', valueExpression: 'string(size(object.data))' }],
    }),
    binding('warned', { policyName: 'warned', validationActions: ['Warn', 'Audit'] }),
    async () => !!(await tryCreate('p1', { w: '1' })).headers.warning,
  );
  const r = await s.admin.post('/api/v1/namespaces/p1/configmaps', cm('p1', 'warn-me', { w: '1' }));
  t.equal(r.status, 201, 'not refused');
  t.match(String(r.headers.warning), /299 - "Validation failed for ValidatingAdmissionPolicy 'warned' with binding 'warned': key w in warn-me"/);
  const id = String(r.headers['audit-id']);
  let ev: Event | undefined;
  await waitFor(() => {
    if (!existsSync(log)) return false;
    ev = readEvents(log).find((e) => e.auditID === id && e.stage === 'ResponseComplete');
    return !!ev;
  });
  t.ok(ev, 'audited');
  t.same(JSON.parse(ev!.annotations['validation.policy.admission.svc.io/validation_failure']), [
    { message: 'key w in warn-me', policy: 'warned', binding: 'warned', expressionIndex: 0, validationActions: ['Warn', 'Audit'] },
  ]);
  t.equal(ev!.annotations['warned/size'], '1');
  await remove('warned');
});

t.test('params: a ConfigMap by name, by selector; parameterNotFoundAction Deny and Allow', async (t) => {
  await s.admin.post('/api/v1/namespaces/p2/configmaps', cm('p2', 'limits', { max: '2' }, { role: 'limits' }));
  await install(
    policy('max-keys', {
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      matchConstraints: configmapRules(['CREATE']),
      validations: [{ expression: 'size(object.data) <= int(params.data.max)', messageExpression: "'at most ' + params.data.max + ' keys'" }],
    }),
    binding('max-keys', { policyName: 'max-keys', validationActions: ['Deny'], paramRef: { name: 'limits', namespace: 'p2', parameterNotFoundAction: 'Deny' } }),
    async () => (await tryCreate('p1', { a: '1', b: '2', c: '3' })).status === 422,
  );
  const r = await tryCreate('p1', { a: '1', b: '2', c: '3' });
  t.match(r.json.message, /denied request: at most 2 keys$/);
  t.equal((await tryCreate('p1', { a: '1' })).status, 201);
  // the parameter gone: Deny refuses everything the policy covers
  await s.admin.delete('/api/v1/namespaces/p2/configmaps/limits');
  t.ok(await waitFor(async () => /no params found/.test((await tryCreate('p1', { a: '1' })).json?.message ?? '')));
  const gone = await tryCreate('p1', { a: '1' });
  t.equal(gone.status, 422);
  t.match(gone.json.message, "ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction");
  // Allow: nothing to evaluate, admitted
  const b = (await s.admin.get(`${VAPB}/max-keys`)).json;
  b.spec.paramRef.parameterNotFoundAction = 'Allow';
  t.equal((await s.admin.put(`${VAPB}/max-keys`, b)).status, 200);
  t.ok(await waitFor(async () => (await tryCreate('p1', { a: '1', b: '2', c: '3' })).status === 201));
  // by selector, in the request's namespace: every selected object is evaluated
  b.spec.paramRef = { selector: { matchLabels: { role: 'limits' } }, parameterNotFoundAction: 'Allow' };
  t.equal((await s.admin.put(`${VAPB}/max-keys`, (b.metadata.resourceVersion = undefined, b))).status, 200);
  await s.admin.post('/api/v1/namespaces/p1/configmaps', cm('p1', 'limit-a', { max: '3', a: 'a', b: 'b' }, { role: 'limits' }));
  await s.admin.post('/api/v1/namespaces/p1/configmaps', cm('p1', 'limit-b', { max: '1' }, { role: 'limits' }));
  t.ok(await waitFor(async () => (await tryCreate('p1', { a: '1', b: '2' })).status === 422), 'the stricter parameter refuses');
  t.equal((await tryCreate('p2', { a: '1', b: '2', c: '3', d: '4' })).status, 201, 'no parameters in p2: allowed');
  await remove('max-keys');
});

t.test('namespaceSelector, matchConditions and variables', async (t) => {
  await install(
    policy('team-a', {
      matchConstraints: { ...configmapRules(['CREATE']), namespaceSelector: { matchLabels: { team: 'a' } } },
      matchConditions: [{ name: 'not-exempt', expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)" }],
      variables: [
        { name: 'keys', expression: 'has(object.data) ? object.data.size() : 0' },
        { name: 'tooMany', expression: 'variables.keys > 1' },
      ],
      validations: [{ expression: '!variables.tooMany', messageExpression: "'too many keys: ' + string(variables.keys)" }],
    }),
    binding('team-a', { policyName: 'team-a', validationActions: ['Deny'] }),
    async () => (await tryCreate('labelled', { a: '1', b: '2' })).status === 422,
  );
  const r = await tryCreate('labelled', { a: '1', b: '2' });
  t.match(r.json.message, /denied request: too many keys: 2$/);
  t.equal((await tryCreate('plain', { a: '1', b: '2' })).status, 201, 'namespace without the label');
  t.equal((await tryCreate('labelled', { a: '1', b: '2' }, { exempt: 'yes' })).status, 201, 'match condition false');
  t.equal((await tryCreate('labelled', { a: '1' })).status, 201);
  await remove('team-a');
});

t.test('failurePolicy: Fail refuses a runtime error, Ignore admits', async (t) => {
  const p = policy('runtime-error', { failurePolicy: 'Fail', matchConstraints: configmapRules(['CREATE']), validations: [{ expression: "object.data.missing == 'x'" }] });
  await install(p, binding('runtime-error', { policyName: 'runtime-error', validationActions: ['Deny'] }), async () => (await tryCreate('p1', { a: '1' })).status === 422);
  const r = await tryCreate('p1', { a: '1' });
  t.equal(r.json.message, `configmaps "probe-${probe}" is forbidden: ValidatingAdmissionPolicy 'runtime-error' with binding 'runtime-error' denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing`);
  const cur = (await s.admin.get(`${VAP}/runtime-error`)).json;
  cur.spec.failurePolicy = 'Ignore';
  t.equal((await s.admin.put(`${VAP}/runtime-error`, cur)).status, 200);
  t.ok(await waitFor(async () => (await tryCreate('p1', { a: '1' })).status === 201), 'Ignore admits');
  await remove('runtime-error');
});

t.test('a policy on a custom resource, and the type-checking status', async (t) => {
  await createCrd(s.admin, crd());
  const path = '/apis/example.com/v1/namespaces/p1/widgets';
  await install(
    policy('widget-size', {
      matchConstraints: { resourceRules: [{ apiGroups: ['example.com'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['widgets'] }] },
      validations: [{ expression: 'object.spec.size <= 5', message: 'too big' }, { expression: 'object.spec.nosuch == 1 || true' }],
    }),
    binding('widget-size', { policyName: 'widget-size', validationActions: ['Deny'] }),
    async () => (await s.admin.post(path, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { generateName: 'w-' }, spec: { size: 9 } })).status === 422,
  );
  const r = await s.admin.post(path, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'big' }, spec: { size: 9 } });
  t.equal(r.status, 422);
  t.equal(r.json.message, `widgets.example.com "big" is forbidden: ValidatingAdmissionPolicy 'widget-size' with binding 'widget-size' denied request: too big`);
  t.equal((await s.admin.post(path, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'small' }, spec: { size: 2 } })).status, 201);
  // type checking: the second expression names a field the schema lacks
  let st: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  t.ok(
    await waitFor(async () => {
      st = (await s.admin.get(`${VAP}/widget-size`)).json.status;
      return st?.observedGeneration === 1 && !!st?.typeChecking?.expressionWarnings;
    }),
  );
  t.same(st.typeChecking.expressionWarnings.map((w: { fieldRef: string }) => w.fieldRef), ['spec.validations[1].expression']);
  t.equal(st.typeChecking.expressionWarnings[0].warning, "example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'nosuch'\n | object.spec.nosuch == 1 || true\n | ...........^\n");
  const mf = (await s.admin.get(`${VAP}/widget-size`)).json.metadata.managedFields as { manager: string; operation: string; subresource?: string }[];
  t.ok(mf.some((m) => m.manager === 'validatingadmissionpolicy-status-controller' && m.operation === 'Apply' && m.subresource === 'status'), 'applied by the status controller');
  // a new generation is checked again
  const cur = (await s.admin.get(`${VAP}/widget-size`)).json;
  cur.spec.validations = [{ expression: 'object.spec.size <= 5', message: 'too big' }];
  t.equal((await s.admin.put(`${VAP}/widget-size`, cur)).status, 200);
  t.ok(await waitFor(async () => {
    const st2 = (await s.admin.get(`${VAP}/widget-size`)).json.status;
    return st2?.observedGeneration === 2 && !st2.typeChecking?.expressionWarnings;
  }), 'generation 2 has no warnings');
  await remove('widget-size');
});

t.test('kubectl apply of an upstream manifest (admissionregistration.k8s.io/v1)', { skip: !existsSync(KUBECTL) && 'no kubectl' }, async (t) => {
  const home = join(dir, 'kubectl-home');
  mkdirSync(home, { recursive: true });
  const kubectl = kubectlAsToken(home, s, 'admin', ADMIN_TOKEN);
  const manifest = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   [""]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["configmaps"]
  validations:
    - expression: "!has(object.data) || size(object.data) < 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding.example.com
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        team: a
`;
  const file = join(dir, 'vap.yaml');
  writeFileSync(file, manifest);
  const r = await kubectl(['apply', '-f', file]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /validatingadmissionpolicy.admissionregistration.k8s.io\/demo-policy.example.com created/);
  const again = await kubectl(['apply', '-f', file]);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /unchanged/);
  const get = await kubectl(['get', 'validatingadmissionpolicies']);
  t.match(get.stdout, /demo-policy.example.com\s+1\s+<unset>/);
  t.ok(await waitFor(async () => (await tryCreate('labelled', { a: '1', b: '2', c: '3', d: '4', e: '5' })).status === 422));
  t.equal((await kubectl(['delete', '-f', file])).code, 0);
});

t.test('naming parameters needs "get" on them (upstream\'s strategy check)', async (t) => {
  const RBAC = '/apis/rbac.authorization.svc.io/v1';
  await s.admin.post(`${RBAC}/clusterroles`, {
    metadata: { name: 'policy-author' },
    rules: [{ apiGroups: ['admissionregistration.svc.io'], resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'], verbs: ['*'] }],
  });
  await s.admin.post(`${RBAC}/clusterrolebindings`, { metadata: { name: 'alice-policy-author' }, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'policy-author' }, subjects: [{ kind: 'User', name: 'alice' }] });
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const p = policy('alice-params', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, matchConstraints: configmapRules(), validations: [{ expression: 'true' }] });
  let r: Awaited<ReturnType<typeof alice.post>> | undefined;
  t.ok(await waitFor(async () => (r = await alice.post(VAP, p)).status === 422), 'refused');
  t.equal(
    r!.json.message,
    'ValidatingAdmissionPolicy.admissionregistration.svc.io "alice-params" is invalid: spec.paramKind: Forbidden: user &{alice uid-alice [dev qa system:authenticated] map[]} must have "get" permission on all objects of the referenced paramKind (kind=ConfigMap, apiVersion=v1)',
  );
  t.equal((await alice.post(VAP, policy('alice-plain', { matchConstraints: configmapRules(), validations: [{ expression: 'true' }] }))).status, 201, 'no paramKind: no check');
  await s.admin.post(`${RBAC}/clusterroles`, { metadata: { name: 'cm-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] });
  await s.admin.post(`${RBAC}/clusterrolebindings`, { metadata: { name: 'alice-cm-reader' }, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'cm-reader' }, subjects: [{ kind: 'User', name: 'alice' }] });
  t.ok(await waitFor(async () => (await alice.post(VAP, p)).status === 201), 'allowed once alice may read configmaps');
  await s.admin.delete(`${VAP}/alice-params`);
  await s.admin.delete(`${VAP}/alice-plain`);
});

t.test('policies never act on the policy kinds themselves', async (t) => {
  const everything = { resourceRules: [{ apiGroups: ['', 'admissionregistration.k8s.io'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['*'] }] };
  await install(
    policy('deny-everything', { matchConstraints: everything, validations: [{ expression: 'false' }] }),
    binding('deny-everything', { policyName: 'deny-everything', validationActions: ['Deny'] }),
    async () => (await tryCreate('p1', {})).status === 422,
  );
  t.equal((await s.admin.post(VAP, policy('another', { matchConstraints: configmapRules(), validations: [{ expression: 'true' }] }))).status, 201);
  t.equal((await s.admin.delete(`${VAP}/another`)).status, 200);
  t.equal((await s.admin.delete(`${VAPB}/deny-everything`)).status, 200, 'the binding can go');
  t.ok(await waitFor(async () => (await tryCreate('p1', {})).status === 201));
  await s.admin.delete(`${VAP}/deny-everything`);
});

t.test('request, namespaceObject and the authorizer as the request\'s user sees them', async (t) => {
  await s.admin.post('/api/v1/namespaces', { metadata: { name: 'req-ns', labels: { env: 'prod' } } });
  await install(
    policy('who', {
      matchConstraints: configmapRules(['CREATE']),
      validations: [
        {
          expression: "request.userInfo.username != 'alice' || authorizer.group('').resource('secrets').namespace(request.namespace).check('list').allowed()",
          messageExpression: "request.userInfo.username + ' may not list secrets in ' + namespaceObject.metadata.name + ' (' + namespaceObject.metadata.labels.env + '), ' + request.operation + ' ' + request.kind.kind + ' ' + request.resource.resource",
          reason: 'Forbidden',
        },
      ],
    }),
    binding('who', { policyName: 'who', validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { env: 'prod' } } } }),
    async () => true,
  );
  const alice = s.admin.with({ token: ALICE_TOKEN });
  // alice may create configmaps in req-ns (a role), but not list secrets
  const RBAC = '/apis/rbac.authorization.svc.io/v1';
  await s.admin.post(`${RBAC}/namespaces/req-ns/roles`, { metadata: { name: 'cm' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }] });
  await s.admin.post(`${RBAC}/namespaces/req-ns/rolebindings`, { metadata: { name: 'alice-cm' }, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'cm' }, subjects: [{ kind: 'User', name: 'alice' }] });
  let r: Awaited<ReturnType<typeof alice.post>> | undefined;
  t.ok(await waitFor(async () => (r = await alice.post('/api/v1/namespaces/req-ns/configmaps', cm('req-ns', `a${++probe}`))).status === 403));
  t.match(r!.json.message, /denied request: alice may not list secrets in req-ns \(prod\), CREATE ConfigMap configmaps$/);
  t.equal((await s.admin.post('/api/v1/namespaces/req-ns/configmaps', cm('req-ns', 'by-admin'))).status, 201, 'other users pass');
  await s.admin.post(`${RBAC}/namespaces/req-ns/roles`, { metadata: { name: 'secrets' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }] });
  await s.admin.post(`${RBAC}/namespaces/req-ns/rolebindings`, { metadata: { name: 'alice-secrets' }, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'secrets' }, subjects: [{ kind: 'User', name: 'alice' }] });
  t.ok(await waitFor(async () => (await alice.post('/api/v1/namespaces/req-ns/configmaps', cm('req-ns', `a${++probe}`))).status === 201), 'allowed once alice may list secrets');
  await remove('who');
});

t.test('DELETE: object is null, oldObject the stored object', async (t) => {
  await s.admin.post('/api/v1/namespaces/p2/configmaps', cm('p2', 'keep-me', {}, { protected: 'true' }));
  await s.admin.post('/api/v1/namespaces/p2/configmaps', cm('p2', 'drop-me', {}, {}));
  await install(
    policy('no-delete-protected', {
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['DELETE'], resources: ['configmaps'] }] },
      validations: [{ expression: "object == null && !(has(oldObject.metadata.labels) && 'protected' in oldObject.metadata.labels)", messageExpression: "oldObject.metadata.name + ' is protected'", reason: 'Forbidden' }],
    }),
    binding('no-delete-protected', { policyName: 'no-delete-protected', validationActions: ['Deny'] }),
    async () => (await s.admin.delete('/api/v1/namespaces/p2/configmaps/keep-me')).status === 403,
  );
  const r = await s.admin.delete('/api/v1/namespaces/p2/configmaps/keep-me');
  t.equal(r.json.message, `configmaps "keep-me" is forbidden: ValidatingAdmissionPolicy 'no-delete-protected' with binding 'no-delete-protected' denied request: keep-me is protected`);
  t.equal((await s.admin.delete('/api/v1/namespaces/p2/configmaps/drop-me')).status, 200);
  await remove('no-delete-protected');
});

t.test('a custom resource as the parameter', async (t) => {
  // the widgets definition exists (an earlier test made it)
  t.equal((await s.admin.post('/apis/example.com/v1/namespaces/p2/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'limit' }, spec: { size: 2 } })).status, 201);
  await install(
    policy('cr-param', {
      paramKind: { apiVersion: 'example.com/v1', kind: 'Widget' },
      matchConstraints: configmapRules(['CREATE']),
      validations: [{ expression: '!has(object.data) || size(object.data) <= params.spec.size', messageExpression: "'at most ' + string(params.spec.size) + ' keys (' + params.kind + ')'" }],
    }),
    binding('cr-param', { policyName: 'cr-param', validationActions: ['Deny'], paramRef: { name: 'limit', namespace: 'p2', parameterNotFoundAction: 'Deny' } }),
    async () => (await tryCreate('p1', { a: '1', b: '2', c: '3' })).status === 422,
  );
  const r = await tryCreate('p1', { a: '1', b: '2', c: '3' });
  t.match(r.json.message, /denied request: at most 2 keys \(Widget\)$/);
  t.equal((await tryCreate('p1', { a: '1' })).status, 201);
  await remove('cr-param');
});
