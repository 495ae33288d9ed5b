/**
 * MutatingAdmissionPolicy (v1alpha1): served only with the MutatingAdmissionPolicy gate on and the
 * version turned on by --runtime-config; with the plugin enabled, ApplyConfiguration and JSONPatch
 * mutations change what is stored, match conditions and parameters apply, and errors follow the
 * failure policy.
 */
import t from 'tap';
import { servedTypesFor } from '../../core/registry/enablement.js';
import { celToJson } from '../../core/admission/policy/mutating.js';
import { create } from '../registry/kind-harness.js';
import { mutatingAdmissionPolicies } from '../../core/registry/admissionregistration/mutatingadmissionpolicies.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { AdmissionWebhookServer, webhookEntry } from '../helpers/admission-webhook.js';

const MAP = '/apis/admissionregistration.svc.io/v1alpha1/mutatingadmissionpolicies';
const MAPB = '/apis/admissionregistration.svc.io/v1alpha1/mutatingadmissionpolicybindings';
const served = (gates: Record<string, boolean>, rc: Record<string, boolean> = {}) => servedTypesFor(gates, rc).some((rt) => rt.kind === 'MutatingAdmissionPolicy');

t.test('served only with the gate on and the version enabled (the version, api/alpha or api/all)', async (t) => {
  const on = { MutatingAdmissionPolicy: true };
  t.notOk(served({}));
  t.notOk(served({}, { 'admissionregistration.k8s.io/v1alpha1': true }), 'the gate is off');
  t.notOk(served(on), 'no alpha version by default');
  t.ok(served(on, { 'admissionregistration.k8s.io/v1alpha1': true }));
  t.ok(served(on, { 'admissionregistration.svc.io/v1alpha1': true }));
  t.ok(served(on, { 'api/alpha': true }));
  t.ok(served(on, { 'api/all': true }));
  t.notOk(served(on, { 'api/alpha': true, 'admissionregistration.svc.io/v1alpha1/mutatingadmissionpolicies': false }), 'one resource off');
  t.ok(servedTypesFor({}, {}).some((rt) => rt.kind === 'ValidatingAdmissionPolicy'), 'v1 policies are served by default');
});

t.test('policy validation', async (t) => {
  const rules = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }];
  const p = (spec: object) => ({ apiVersion: 'admissionregistration.svc.io/v1alpha1', kind: 'MutatingAdmissionPolicy', metadata: { name: 'm' }, spec: { reinvocationPolicy: 'Never', ...spec } }) as never;
  const ok = create(mutatingAdmissionPolicies, p({ matchConstraints: { resourceRules: rules }, mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"a": "b"}}}' } }] }));
  t.same(ok.errors, []);
  t.match(ok.obj, { spec: { failurePolicy: 'Fail', reinvocationPolicy: 'Never' } });
  t.same(create(mutatingAdmissionPolicies, p({ reinvocationPolicy: undefined, matchConstraints: { resourceRules: rules }, mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: '[]' } }] })).errors, ['spec.reinvocationPolicy: Required value'], 'no default for reinvocationPolicy');
  t.same(
    create(mutatingAdmissionPolicies, p({ matchConstraints: { resourceRules: [{ ...rules[0], operations: ['CREATE', 'DELETE'] }] }, mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: '[]' } }] })).errors,
    ['spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"'],
    'deletes cannot be mutated',
  );
  t.same(create(mutatingAdmissionPolicies, p({ matchConstraints: { resourceRules: rules } })).errors, ['spec.mutations: Required value: mutations must contain at least one item']);
  t.same(
    create(mutatingAdmissionPolicies, p({ matchConstraints: { resourceRules: rules }, mutations: [{ patchType: 'JSONPatch', applyConfiguration: { expression: 'x' } }] })).errors,
    ['spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch', 'spec.mutations[0].applyConfiguration: Invalid value: {applyConfiguration}: must not be specified when patchType is JSONPatch'],
  );
  t.same(create(mutatingAdmissionPolicies, p({ matchConstraints: { resourceRules: rules }, mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: '1' } }] })).errors, [
    'spec.mutations[0].jsonPatch.expression: Invalid value: "1": must evaluate to list(JSONPatch)',
  ]);
  t.same(celToJson(new Map([['a', [1n, 'x', null]]])), { a: [1, 'x', null] });
});

let s: TestServer;
t.test('against a server', async (t) => {
  s = await startServer(['--feature-gates=MutatingAdmissionPolicy=true', '--runtime-config=admissionregistration.k8s.io/v1alpha1=true', '--enable-admission-plugins=MutatingAdmissionPolicy']);
  t.teardown(() => s.stop());
  await s.admin.post('/api/v1/namespaces', { metadata: { name: 'm1' } });
  const rules = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }];
  let r = await s.admin.post(MAP, {
    apiVersion: 'admissionregistration.k8s.io/v1alpha1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: 'label-and-key' },
    spec: {
      reinvocationPolicy: 'IfNeeded',
      matchConstraints: { resourceRules: rules },
      matchConditions: [{ name: 'not-skipped', expression: "!has(object.metadata.labels) || !('skip' in object.metadata.labels)" }],
      mutations: [
        { patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}' } },
        { patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/labels'), value: string(size(object.metadata.labels))}]" } },
      ],
    },
  });
  t.equal(r.status, 201, r.text);
  r = await s.admin.post(MAPB, { apiVersion: 'admissionregistration.k8s.io/v1alpha1', kind: 'MutatingAdmissionPolicyBinding', metadata: { name: 'label-and-key' }, spec: { policyName: 'label-and-key' } });
  t.equal(r.status, 201, r.text);
  let n = 0;
  let made: { status: number; json: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } } } | undefined;
  t.ok(
    await waitFor(async () => {
      made = await s.admin.post('/api/v1/namespaces/m1/configmaps', { metadata: { name: `c${++n}`, labels: { own: 'x' }, annotations: { a: '1' } }, data: { k: 'v' } });
      return made.json.metadata.labels?.mutated === 'yes';
    }),
    'the policy takes effect',
  );
  t.same(made!.json.metadata.labels, { own: 'x', mutated: 'yes' }, 'apply merged the labels');
  t.same(made!.json.metadata.annotations, { a: '1', 'example.com/labels': '2' }, 'the JSON patch saw the first mutation');
  const skipped = await s.admin.post('/api/v1/namespaces/m1/configmaps', { metadata: { name: 'skipped', labels: { skip: '1' }, annotations: { a: '1' } }, data: {} });
  t.same(skipped.json.metadata.labels, { skip: '1' }, 'match condition false: untouched');
  // a runtime error with Fail refuses; with Ignore the write goes through untouched
  r = await s.admin.post(MAP, {
    apiVersion: 'admissionregistration.k8s.io/v1alpha1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: 'broken' },
    spec: { reinvocationPolicy: 'Never', matchConstraints: { resourceRules: rules }, mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/data/x', value: object.data.nosuch}]" } }] },
  });
  t.equal(r.status, 201, r.text);
  await s.admin.post(MAPB, { apiVersion: 'admissionregistration.k8s.io/v1alpha1', kind: 'MutatingAdmissionPolicyBinding', metadata: { name: 'broken' }, spec: { policyName: 'broken' } });
  let refused: { status: number; json: { message: string } } | undefined;
  t.ok(await waitFor(async () => (refused = await s.admin.post('/api/v1/namespaces/m1/configmaps', { metadata: { name: `b${++n}` }, data: { k: 'v' } })).status === 422));
  t.match(refused!.json.message, /is forbidden: policy 'broken' with binding 'broken' denied request: expression '.*' resulted in error: /);
  const broken = (await s.admin.get(`${MAP}/broken`)).json;
  broken.spec.failurePolicy = 'Ignore';
  t.equal((await s.admin.put(`${MAP}/broken`, broken)).status, 200);
  t.ok(await waitFor(async () => (await s.admin.post('/api/v1/namespaces/m1/configmaps', { metadata: { name: `i${++n}`, annotations: { a: '1' } }, data: { k: 'v' } })).status === 201), 'Ignore admits');
});

t.test('an IfNeeded policy runs again in the chain\'s second pass after a webhook changed the object; a Never policy does not', async (t) => {
  const hook = await AdmissionWebhookServer.start();
  const srv = await startServer(['--feature-gates=MutatingAdmissionPolicy=true', '--runtime-config=admissionregistration.k8s.io/v1alpha1=true', '--enable-admission-plugins=MutatingAdmissionPolicy']);
  t.teardown(async () => {
    await srv.stop();
    await hook.stop();
  });
  await srv.admin.post('/api/v1/namespaces', { metadata: { name: 'r1' } });
  const rules = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }];
  for (const policy of ['IfNeeded', 'Never']) {
    const name = policy.toLowerCase();
    const r = await srv.admin.post(MAP, {
      metadata: { name },
      spec: {
        reinvocationPolicy: policy,
        matchConstraints: { resourceRules: rules },
        matchConditions: [{ name: 'mode', expression: `has(object.metadata.labels) && object.metadata.labels['mode'] == '${name}'` }],
        // counts the labels the object has when the policy sees it
        mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'labels-seen': string(size(object.metadata.labels))}}]" } }],
      },
    });
    t.equal(r.status, 201, r.text);
    t.equal((await srv.admin.post(MAPB, { metadata: { name }, spec: { policyName: name } })).status, 201);
  }
  t.equal((await srv.admin.post('/apis/admissionregistration.svc.io/v1/mutatingwebhookconfigurations', { metadata: { name: 'adds-a-label' }, webhooks: [webhookEntry('label.example.com', hook.url('/mutate-label'))] })).status, 201);
  let n = 0;
  const made = async (mode: string) => (await srv.admin.post('/api/v1/namespaces/r1/configmaps', { metadata: { name: `${mode}-${++n}`, labels: { mode } } })).json;
  t.ok(await waitFor(async () => (await made('ifneeded')).metadata.labels?.mutated === 'yes' && (await made('never')).metadata.annotations?.['labels-seen'] !== undefined), 'the webhook and both policies take effect');
  const again = await made('ifneeded');
  t.same(again.metadata.labels, { mode: 'ifneeded', mutated: 'yes' });
  t.same(again.metadata.annotations, { 'labels-seen': '2' }, 'IfNeeded: called again, it saw the webhook\'s label');
  const once = await made('never');
  t.same(once.metadata.labels, { mode: 'never', mutated: 'yes' });
  t.same(once.metadata.annotations, { 'labels-seen': '1' }, 'Never: called once, before the webhook');
});

t.test('without the gate the kinds are not served', async (t) => {
  const plain = await startServer();
  t.teardown(() => plain.stop());
  t.equal((await plain.admin.get(MAP)).status, 404);
  t.equal((await plain.admin.get('/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies')).status, 200);
});
