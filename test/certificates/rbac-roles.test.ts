/**
 * The default RBAC policy's certificate roles, as upstream v1.32 ships them in this server's spelling:
 * node bootstrapping, node client approval permissions, one approver role per built-in signer and the
 * certificate controller's role; every rule names both group spellings, and every signer both names.
 */
import t from 'tap';
import { bootstrapPolicy } from '../../core/authz/rbac/bootstrap-policy.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { selectControllers } from '../../core/controllers/manager.js';

const policy = bootstrapPolicy(builtinResourceTypes, selectControllers(['*']).map((c) => c.name));
const rulesOf = (name: string) => policy.clusterRoles.find((r) => r.metadata.name === name)?.rules;
const GROUPS = ['certificates.svc.io', 'certificates.k8s.io'];

t.test('certificate roles, one a row', async (t) => {
  const rows: [string, unknown][] = [
    ['system:node-bootstrapper', [{ verbs: ['create', 'get', 'list', 'watch'], apiGroups: GROUPS, resources: ['certificatesigningrequests'] }]],
    ['system:certificates.svc.io:certificatesigningrequests:nodeclient', [{ verbs: ['create'], apiGroups: GROUPS, resources: ['certificatesigningrequests/nodeclient'] }]],
    ['system:certificates.svc.io:certificatesigningrequests:selfnodeclient', [{ verbs: ['create'], apiGroups: GROUPS, resources: ['certificatesigningrequests/selfnodeclient'] }]],
    ...['kube-apiserver-client', 'kube-apiserver-client-kubelet', 'kubelet-serving', 'legacy-unknown'].map((s): [string, unknown] => [
      `system:certificates.svc.io:${s}-approver`,
      [{ verbs: ['approve'], apiGroups: GROUPS, resources: ['signers'], resourceNames: [`svc.io/${s}`, `kubernetes.io/${s}`] }],
    ]),
  ];
  for (const [name, rules] of rows) t.same(rulesOf(name), rules, name);
});

t.test('the certificate controllers share one role, bound to their account', async (t) => {
  const roles = policy.clusterRoles.filter((r) => r.metadata.name === 'system:controller:certificate-controller');
  t.equal(roles.length, 1, 'one role for the three controllers');
  const rules = roles[0]!.rules!;
  t.ok(rules.some((r) => r.verbs.includes('sign') && r.resourceNames?.includes('kubernetes.io/kubelet-serving') && r.resourceNames.includes('svc.io/kubelet-serving')), 'sign on the built-in signers');
  t.ok(rules.some((r) => r.verbs.includes('approve') && r.resourceNames?.join() === 'svc.io/kube-apiserver-client-kubelet,kubernetes.io/kube-apiserver-client-kubelet'), 'approve on the kubelet client signer only');
  t.ok(rules.some((r) => r.resources?.includes('subjectaccessreviews')), 'subject access reviews');
  const binding = policy.clusterRoleBindings.filter((b) => b.metadata.name === 'system:controller:certificate-controller');
  t.same(binding.map((b) => b.subjects), [[{ kind: 'ServiceAccount', name: 'certificate-controller', namespace: 'svc-system' }]]);
  t.notOk(policy.clusterRoleBindings.some((b) => /nodeclient|node-bootstrapper/.test(b.roleRef.name ?? '')), 'nothing binds the join roles (a join does, as kubeadm)');
});

t.test('without the certificates API the roles narrow away', async (t) => {
  const p = bootstrapPolicy(builtinResourceTypes.filter((rt) => rt.group !== 'certificates.svc.io'), []);
  t.notOk(p.clusterRoles.some((r) => /certificates|node-bootstrapper/.test(r.metadata.name ?? '')));
});
