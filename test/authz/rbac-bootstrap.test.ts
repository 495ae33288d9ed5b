/**
 * The default policy as data: every ClusterRole and ClusterRoleBinding of the spec's table (and the
 * aggregate-to-* roles and issuer discovery role upstream adds), labels and annotations, rules
 * narrowed to what is served, one controller role per catalog controller; and reconciliation
 * (missing permissions, selectors and subjects added, extras kept, autoupdate=false respected, a
 * changed roleRef recreated).
 */
import t from 'tap';
import { bootstrapPolicy, controllerPolicies, narrowRule, servedResourceSet } from '../../core/authz/rbac/bootstrap-policy.js';
import { reconcileClusterRole, reconcileClusterRoleBinding } from '../../core/authz/rbac/reconcile.js';
import { controllerCatalog } from '../../core/controllers/manager.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import type { BindingObject, RoleObject } from '../../core/registry/rbac/policy.js';

const policy = bootstrapPolicy(builtinResourceTypes, controllerCatalog.map((c) => c.name));
const roleNamed = (n: string) => policy.clusterRoles.find((r) => r.metadata.name === n);
const bindingNamed = (n: string) => policy.clusterRoleBindings.find((b) => b.metadata.name === n);

t.test('the spec table: every default ClusterRole and its default binding', async (t) => {
  const rows: [string, string[]][] = [
    ['cluster-admin', ['Group:system:masters']],
    ['admin', []],
    ['edit', []],
    ['view', []],
    ['system:basic-user', ['Group:system:authenticated']],
    ['system:discovery', ['Group:system:authenticated']],
    ['system:public-info-viewer', ['Group:system:authenticated', 'Group:system:unauthenticated']],
    ['system:monitoring', ['Group:system:monitoring']],
    ['system:service-account-issuer-discovery', ['Group:system:serviceaccounts']],
    ['system:aggregate-to-admin', []],
    ['system:aggregate-to-edit', []],
    ['system:aggregate-to-view', []],
  ];
  for (const [name, subjects] of rows) {
    const r = roleNamed(name);
    t.ok(r, `ClusterRole ${name}`);
    t.same(r?.metadata.labels?.['svc.io/bootstrapping'], 'rbac-defaults', `${name} labelled`);
    t.same(r?.metadata.annotations, { 'rbac.authorization.svc.io/autoupdate': 'true' }, `${name} annotated`);
    const b = bindingNamed(name);
    if (!subjects.length) {
      t.notOk(b, `${name} has no default binding`);
      continue;
    }
    t.same(b?.roleRef, { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name });
    t.same(b?.subjects?.map((s) => `${s.kind}:${s.name}`), subjects, `${name} bound to ${subjects.join(', ')}`);
    t.same(b?.metadata.labels, { 'svc.io/bootstrapping': 'rbac-defaults' });
  }
});

t.test('admin, edit and view aggregate, and are chained by their labels', async (t) => {
  const sel = (n: string) => roleNamed(n)?.aggregationRule?.clusterRoleSelectors;
  t.same(sel('admin'), [{ matchLabels: { 'rbac.authorization.svc.io/aggregate-to-admin': 'true' } }]);
  t.same(sel('edit'), [{ matchLabels: { 'rbac.authorization.svc.io/aggregate-to-edit': 'true' } }]);
  t.same(sel('view'), [{ matchLabels: { 'rbac.authorization.svc.io/aggregate-to-view': 'true' } }]);
  t.equal(roleNamed('edit')?.metadata.labels?.['rbac.authorization.svc.io/aggregate-to-admin'], 'true');
  t.equal(roleNamed('view')?.metadata.labels?.['rbac.authorization.svc.io/aggregate-to-edit'], 'true');
  for (const n of ['admin', 'edit', 'view']) t.same(roleNamed(n)?.rules, [], `${n} is created with no rules`);
});

t.test('rules are narrowed to what this server serves', async (t) => {
  const served = servedResourceSet(builtinResourceTypes);
  t.same(narrowRule({ verbs: ['get'], apiGroups: [''], resources: ['pods', 'configmaps', 'namespaces/status', 'pods/log'] }, served), [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps', 'namespaces/status'] }]);
  t.same(narrowRule({ verbs: ['get'], apiGroups: ['apps'], resources: ['deployments'] }, served), [], 'a group not served at all');
  t.same(narrowRule({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }, served), [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], 'wildcards kept');
  t.same(narrowRule({ verbs: ['get'], nonResourceURLs: ['/x'] }, served), [{ verbs: ['get'], nonResourceURLs: ['/x'] }], 'URLs kept');
  t.same(narrowRule({ verbs: ['create'], apiGroups: ['', 'events.svc.io'], resources: ['events'] }, served), [{ verbs: ['create'], apiGroups: [''], resources: ['events'] }]);
  t.same(roleNamed('system:aggregate-to-edit')?.rules, [
    { verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['secrets'] },
    { verbs: ['impersonate'], apiGroups: [''], resources: ['serviceaccounts'] },
    { verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'], apiGroups: [''], resources: ['serviceaccounts', 'configmaps', 'secrets'] },
    { verbs: ['create'], apiGroups: [''], resources: ['serviceaccounts/token'] },
  ]);
  t.same(roleNamed('system:aggregate-to-admin')?.rules, [
    { verbs: ['create'], apiGroups: ['authorization.svc.io', 'authorization.k8s.io'], resources: ['localsubjectaccessreviews'] },
    { verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'], apiGroups: ['rbac.authorization.svc.io', 'rbac.authorization.k8s.io'], resources: ['roles', 'rolebindings'] },
  ]);
  t.same(roleNamed('system:basic-user')?.rules, [
    { verbs: ['create'], apiGroups: ['authorization.svc.io', 'authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'] },
    { verbs: ['create'], apiGroups: ['authentication.svc.io', 'authentication.k8s.io'], resources: ['selfsubjectreviews'] },
  ]);
  t.same(roleNamed('system:public-info-viewer')?.rules, [{ verbs: ['get'], nonResourceURLs: ['/livez', '/readyz', '/healthz', '/version', '/version/'] }]);
});

t.test('one system:controller:<account> role and binding per catalog controller', async (t) => {
  for (const c of controllerCatalog) {
    const p = controllerPolicies[c.name];
    t.ok(p, `${c.name} has upstream's rules here`);
    const name = `system:controller:${p?.account ?? c.name}`;
    t.ok(roleNamed(name), name);
    t.same(bindingNamed(name)?.subjects, [{ kind: 'ServiceAccount', name: p?.account ?? c.name, namespace: 'svc-system' }], `${name} bound to its account in svc-system`);
    t.ok(roleNamed(name)?.rules?.some((r) => r.resources?.includes('events') && r.verbs.includes('create')), `${name} may record events`);
  }
  t.same(roleNamed('system:controller:clusterrole-aggregation-controller')?.rules?.[0], {
    verbs: ['escalate', 'get', 'list', 'watch', 'update', 'patch'],
    apiGroups: ['rbac.authorization.svc.io', 'rbac.authorization.k8s.io'],
    resources: ['clusterroles'],
  });
});

t.test('every svc.io group a default rule names is followed by its upstream spelling', async (t) => {
  for (const r of policy.clusterRoles) {
    for (const rule of r.rules ?? []) {
      for (const g of rule.apiGroups ?? []) {
        if (g.endsWith('.svc.io')) t.ok(rule.apiGroups!.includes(g.replace(/\.svc\.io$/, '.k8s.io')), `${r.metadata.name}: ${g} and its upstream name`);
      }
    }
  }
  const served = servedResourceSet(builtinResourceTypes);
  t.same(narrowRule({ verbs: ['get'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers', 'csinodes'] }, served), [{ verbs: ['get'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }], 'an upstream spelling is narrowed by the group it names');
});

t.test('system:node holds the node rules narrowed to what is served, with no binding (the Node mode grants them)', async (t) => {
  const rules = roleNamed('system:node')?.rules ?? [];
  const grants = (verb: string, group: string, resource: string) => rules.some((r) => r.verbs.includes(verb) && r.apiGroups?.includes(group) && r.resources?.includes(resource));
  t.ok(grants('create', 'coordination.svc.io', 'leases'), 'its Lease');
  t.ok(grants('update', 'coordination.k8s.io', 'leases'), 'under the upstream name too');
  t.ok(grants('create', 'authentication.svc.io', 'tokenreviews'));
  t.ok(grants('list', 'storage.svc.io', 'csidrivers'));
  t.notOk(rules.some((r) => r.resources?.includes('pods')), 'pods are not served: left out');
  t.notOk(bindingNamed('system:node'));
});

const role = (rules: RoleObject['rules'], extra: Partial<RoleObject> = {}): RoleObject => ({ kind: 'ClusterRole', metadata: { name: 'r', labels: { a: 'expected' }, annotations: { 'rbac.authorization.svc.io/autoupdate': 'true' } }, rules, ...extra });

t.test('reconcile a ClusterRole: add what is missing, keep what was added', async (t) => {
  const want = role([{ verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps'] }]);
  t.equal(reconcileClusterRole(undefined, want).op, 'create');
  t.equal(reconcileClusterRole(structuredClone(want), want).op, 'none', 'equal: nothing to do');
  const trimmed = role([{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }, { verbs: ['delete'], apiGroups: [''], resources: ['secrets'] }]);
  trimmed.metadata.labels = { a: 'mine', b: 'extra' };
  const r = reconcileClusterRole(trimmed, want);
  t.equal(r.op, 'update');
  t.same(r.object.rules, [
    { verbs: ['get'], apiGroups: [''], resources: ['configmaps'] },
    { verbs: ['delete'], apiGroups: [''], resources: ['secrets'] },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['list'] },
  ], 'the missing permission appended, the extra one kept');
  t.same(r.object.metadata.labels, { a: 'mine', b: 'extra' }, 'existing label values win');
  const unannotated = structuredClone(want);
  delete unannotated.metadata.annotations;
  t.same(reconcileClusterRole(unannotated, want).object.metadata.annotations, { 'rbac.authorization.svc.io/autoupdate': 'true' }, 'a missing annotation is added');
  const protectedRole = role([], { metadata: { name: 'r', annotations: { 'rbac.authorization.svc.io/autoupdate': 'false' } } });
  t.equal(reconcileClusterRole(protectedRole, want).op, 'protected', 'autoupdate=false: left alone');
});

t.test('reconcile a ClusterRole: aggregation selectors', async (t) => {
  const sel = (v: string) => ({ matchLabels: { [v]: 'true' } });
  const want = role([], { aggregationRule: { clusterRoleSelectors: [sel('x')] } });
  const filled = role([{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], { aggregationRule: { clusterRoleSelectors: [sel('x'), sel('mine')] } });
  t.equal(reconcileClusterRole(filled, want).op, 'none', 'aggregated rules and an extra selector stay');
  const lost = role([], { aggregationRule: { clusterRoleSelectors: [sel('mine')] } });
  t.same(reconcileClusterRole(lost, want).object.aggregationRule, { clusterRoleSelectors: [sel('mine'), sel('x')] });
  t.same(reconcileClusterRole(role([]), want).object.aggregationRule, { clusterRoleSelectors: [sel('x')] }, 'aggregation restored');
  t.equal(reconcileClusterRole(role([], { aggregationRule: { clusterRoleSelectors: [sel('x')] } }), role([])).object.aggregationRule, undefined, 'not aggregated by default: removed');
});

const binding = (subjects: BindingObject['subjects'], name = 'r'): BindingObject => ({
  kind: 'ClusterRoleBinding',
  metadata: { name: 'b', annotations: { 'rbac.authorization.svc.io/autoupdate': 'true' } },
  roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name },
  subjects,
});

t.test('reconcile a ClusterRoleBinding: missing subjects added, extras kept, roleRef change recreates', async (t) => {
  const g = (n: string) => ({ kind: 'Group', apiGroup: 'rbac.authorization.svc.io', name: n });
  const want = binding([g('a'), g('b')]);
  t.equal(reconcileClusterRoleBinding(undefined, want).op, 'create');
  t.equal(reconcileClusterRoleBinding(binding([g('b'), g('a')]), want).op, 'none');
  const r = reconcileClusterRoleBinding(binding([g('c'), g('a')]), want);
  t.equal(r.op, 'update');
  t.same(r.object.subjects, [g('c'), g('a'), g('b')]);
  const moved = reconcileClusterRoleBinding(binding([g('a'), g('b')], 'other'), want);
  t.equal(moved.op, 'recreate');
  t.same(moved.object.roleRef, want.roleRef);
  const protectedBinding = binding([]);
  protectedBinding.metadata.annotations = { 'rbac.authorization.svc.io/autoupdate': 'false' };
  t.equal(reconcileClusterRoleBinding(protectedBinding, want).op, 'protected');
});
