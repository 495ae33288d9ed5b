/**
 * Policies with the worker pool: policy and binding writes (a write check) and the writes a policy
 * covers run on the main thread, where the plugin is; writes it does not cover stay in the pool.
 */
import t from 'tap';
import { startServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

t.test('a policy refuses writes with --workers=2', async (t) => {
  const s = await startServer(['--workers=2']);
  t.teardown(() => s.stop());
  await s.admin.post('/api/v1/namespaces', { metadata: { name: 'w' } });
  const rules = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }];
  t.equal((await s.admin.post('/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'p' }, spec: { matchConstraints: { resourceRules: rules }, validations: [{ expression: "!('bad' in object.data)" }] } })).status, 201);
  t.equal((await s.admin.post('/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings', { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'b' }, spec: { policyName: 'p', validationActions: ['Deny'] } })).status, 201);
  let n = 0;
  t.ok(await waitFor(async () => (await s.admin.post('/api/v1/namespaces/w/configmaps', { metadata: { name: `c${++n}` }, data: { bad: '1' } })).status === 422));
  t.equal((await s.admin.post('/api/v1/namespaces/w/configmaps', { metadata: { name: 'good' }, data: { fine: '1' } })).status, 201);
  t.equal((await s.admin.post('/api/v1/namespaces/w/secrets', { metadata: { name: 's' }, data: {} })).status, 201, 'not covered');
});
