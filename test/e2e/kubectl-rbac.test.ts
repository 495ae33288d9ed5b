/**
 * RBAC end to end with the real kubectl (v1.32, unmodified) against a server with the default
 * authorization (Node,RBAC): the admin (system:masters, its generated kubeconfig) creates Roles and
 * bindings from a file written for rbac.authorization.svc.io; alice (a RoleBinding in `team`), bob (a
 * ClusterRoleBinding to his group) and carol (nothing) each use a kubeconfig of their own for
 * `kubectl auth can-i`, `--list` and `kubectl get`, and carol sees the 403 as kubectl shows it.
 * Then what upstream clients write: `kubectl create role|rolebinding|clusterrole|clusterrolebinding`
 * (sent as rbac.authorization.k8s.io/v1), `kubectl apply -f` and `kubectl auth reconcile -f` of
 * manifests spelled for upstream (roleRef and rules naming k8s.io groups), which grant as written.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { tmp } from '../helpers/fixtures.js';
import { type Kubectl, kubectlAsToken, kubectlRunner } from '../helpers/kubectl.js';
import { startRbacServer } from '../helpers/rbac.js';

const s = await startRbacServer([{ name: 'alice' }, { name: 'bob', groups: ['readers'] }, { name: 'carol' }, { name: 'dave' }]);
t.teardown(() => s.stop());
const dir = tmp('svc-kubectl-rbac-');
const admin = kubectlRunner(join(s.dataDir, 'admin.kubeconfig'), tmp('svc-kubectl-admin-'));
const as = (name: string): Kubectl => kubectlAsToken(dir, s, name, `token-${name}`);
const alice = as('alice');
const bob = as('bob');
const carol = as('carol');
const dave = as('dave');

const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

const SVC_MANIFEST = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: rbac.authorization.svc.io/v1
kind: Role
metadata: {name: cm-editor, namespace: team}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.svc.io/v1
kind: RoleBinding
metadata: {name: alice-cm-editor, namespace: team}
roleRef: {apiGroup: rbac.authorization.svc.io, kind: Role, name: cm-editor}
subjects:
- {apiGroup: rbac.authorization.svc.io, kind: User, name: alice}
---
apiVersion: rbac.authorization.svc.io/v1
kind: ClusterRole
metadata: {name: configmap-reader}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.svc.io/v1
kind: ClusterRoleBinding
metadata: {name: readers-configmap-reader}
roleRef: {apiGroup: rbac.authorization.svc.io, kind: ClusterRole, name: configmap-reader}
subjects:
- {apiGroup: rbac.authorization.svc.io, kind: Group, name: readers}
`;

t.test('kubectl create -f of Roles and bindings written for rbac.authorization.svc.io', async (t) => {
  const r = await admin(['create', '-f', file('svc-rbac.yaml', SVC_MANIFEST)]);
  t.equal(r.code, 0, r.stderr);
  t.same(r.stdout.trim().split('\n'), [
    'namespace/team created',
    'role.rbac.authorization.svc.io/cm-editor created',
    'rolebinding.rbac.authorization.svc.io/alice-cm-editor created',
    'clusterrole.rbac.authorization.svc.io/configmap-reader created',
    'clusterrolebinding.rbac.authorization.svc.io/readers-configmap-reader created',
  ]);
  const again = await admin(['create', '-f', file('svc-rbac.yaml', SVC_MANIFEST)]);
  t.equal(again.code, 1, 'creating them twice fails');
  t.match(again.stderr, /Error from server \(AlreadyExists\)/);
});

t.test('kubectl auth can-i as several users, each through its own kubeconfig', async (t) => {
  // [rule, who, args, exit code, output]
  const rows: [string, Kubectl, string[], number, RegExp][] = [
    ['the admin (system:masters) may do anything', admin, ['auth', 'can-i', '*', '*', '--all-namespaces'], 0, /^yes$/],
    ['alice may create configmaps in team (her RoleBinding)', alice, ['auth', 'can-i', 'create', 'configmaps', '-n', 'team'], 0, /^yes$/],
    ['alice may not create them elsewhere', alice, ['auth', 'can-i', 'create', 'configmaps', '-n', 'default'], 1, /^no$/],
    ['alice may not read secrets in team', alice, ['auth', 'can-i', 'get', 'secrets', '-n', 'team'], 1, /^no$/],
    ['bob may list configmaps in every namespace (his group\'s ClusterRoleBinding)', bob, ['auth', 'can-i', 'list', 'configmaps', '--all-namespaces'], 0, /^yes$/],
    ['bob may not create them', bob, ['auth', 'can-i', 'create', 'configmaps', '-n', 'team'], 1, /^no$/],
    ['carol may do nothing in team', carol, ['auth', 'can-i', 'get', 'configmaps', '-n', 'team'], 1, /^no$/],
    ['carol may read /version (system:public-info-viewer)', carol, ['auth', 'can-i', 'get', '/version'], 0, /^yes$/],
    ['carol may ask about herself (system:basic-user)', carol, ['auth', 'can-i', 'create', 'selfsubjectaccessreviews.authorization.k8s.io'], 0, /^yes\b/],
    ['asking about another user needs impersonate', alice, ['auth', 'can-i', 'get', 'configmaps', '-n', 'team', '--as=bob'], 1, /impersonate/],
    ['the admin may ask about alice', admin, ['auth', 'can-i', 'delete', 'configmaps', '-n', 'team', '--as=alice'], 0, /^yes$/],
  ];
  for (const [rule, kubectl, args, code, out] of rows) {
    const r = await kubectl(args);
    t.equal(r.code, code, `${rule}: exit ${code} (${r.stderr.trim()})`);
    t.match(`${r.stdout}${r.stderr}`.trim(), out, rule);
  }
});

t.test('kubectl auth can-i --list shows each user the rules that apply to them', async (t) => {
  const lines = async (k: Kubectl, ns: string): Promise<string[]> => {
    const r = await k(['auth', 'can-i', '--list', '-n', ns]);
    t.equal(r.code, 0, r.stderr);
    return r.stdout.trim().split('\n');
  };
  const a = await lines(alice, 'team');
  t.match(a[0], /^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs$/);
  t.ok(a.some((l) => /^configmaps\s+\[\]\s+\[\]\s+\[get list watch create update patch delete\]$/.test(l)), `alice's Role in team (${a.join('|')})`);
  t.ok(a.some((l) => /^selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$/.test(l)), 'system:basic-user, under the upstream group name too');
  t.ok(a.some((l) => /^\s+\[\/version\]\s+\[\]\s+\[get\]$/.test(l)), 'system:public-info-viewer');
  t.notOk((await lines(alice, 'default')).some((l) => l.startsWith('configmaps ')), 'not in another namespace');
  t.ok((await lines(bob, 'default')).some((l) => /^configmaps\s+\[\]\s+\[\]\s+\[get list watch\]$/.test(l)), 'bob reads configmaps everywhere');
  t.notOk((await lines(carol, 'team')).some((l) => l.startsWith('configmaps')), 'carol has no configmap rule');
});

t.test('kubectl get as a bound and an unbound user; kubectl shows the 403', async (t) => {
  const made = await alice(['create', 'configmap', 'settings', '-n', 'team', '--from-literal=a=b']);
  t.equal(made.code, 0, made.stderr);
  t.equal(made.stdout.trim(), 'configmap/settings created');
  const got = await alice(['get', 'configmaps', '-n', 'team', '-o', 'name']);
  t.equal(got.code, 0, got.stderr);
  t.ok(got.stdout.split('\n').includes('configmap/settings'), 'alice lists team');
  const read = await bob(['get', 'configmap', 'settings', '-n', 'team', '-o', 'jsonpath={.data.a}']);
  t.equal(read.code, 0, read.stderr);
  t.equal(read.stdout, 'b', 'bob reads it through his group');
  const denied = await carol(['get', 'configmaps', '-n', 'team']);
  t.equal(denied.code, 1);
  t.equal(denied.stderr.trim(), 'Error from server (Forbidden): configmaps is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "team"');
  const write = await bob(['delete', 'configmap', 'settings', '-n', 'team']);
  t.equal(write.code, 1);
  t.equal(write.stderr.trim(), 'Error from server (Forbidden): configmaps "settings" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "team"');
});

t.test('kubectl create role, rolebinding, clusterrole and clusterrolebinding (rbac.authorization.k8s.io/v1)', async (t) => {
  const steps: [string[], string][] = [
    [['create', 'role', 'reader', '--verb=get,list', '--resource=configmaps', '-n', 'team'], 'role.rbac.authorization.k8s.io/reader created'],
    [['create', 'rolebinding', 'carol-reader', '--role=reader', '--user=carol', '-n', 'team'], 'rolebinding.rbac.authorization.k8s.io/carol-reader created'],
    [['create', 'clusterrole', 'csidriver-reader', '--verb=get,list,watch', '--resource=csidrivers.storage.k8s.io'], 'clusterrole.rbac.authorization.k8s.io/csidriver-reader created'],
    [['create', 'clusterrolebinding', 'carol-csidrivers', '--clusterrole=csidriver-reader', '--user=carol'], 'clusterrolebinding.rbac.authorization.k8s.io/carol-csidrivers created'],
  ];
  for (const [args, out] of steps) {
    const r = await admin(args);
    t.equal(r.code, 0, `${args.slice(0, 3).join(' ')}: ${r.stderr}`);
    t.equal(r.stdout.trim(), out);
  }
  const role = JSON.parse((await admin(['get', 'clusterrole', 'csidriver-reader', '-o', 'json'])).stdout);
  t.same(role.rules, [{ apiGroups: ['storage.k8s.io'], resources: ['csidrivers'], verbs: ['get', 'list', 'watch'] }], 'the rule keeps the group as kubectl wrote it');
  const rb = JSON.parse((await admin(['get', 'rolebinding.rbac.authorization.k8s.io', 'carol-reader', '-n', 'team', '-o', 'json'])).stdout);
  t.equal(rb.apiVersion, 'rbac.authorization.k8s.io/v1');
  t.same(rb.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' }, 'read under the upstream name, the roleRef names that group');
  const canonical = JSON.parse((await admin(['get', 'rolebinding.rbac.authorization.svc.io', 'carol-reader', '-n', 'team', '-o', 'json'])).stdout);
  t.same(canonical.roleRef, { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'reader' }, 'and under the served name, the served group');

  const cm = await carol(['get', 'configmaps', '-n', 'team', '-o', 'name']);
  t.equal(cm.code, 0, `carol reads configmaps in team now: ${cm.stderr}`);
  for (const resource of ['csidrivers', 'csidrivers.storage.k8s.io', 'csidrivers.storage.svc.io']) {
    const r = await carol(['get', resource]);
    t.equal(r.code, 0, `a rule naming storage.k8s.io grants ${resource}: ${r.stderr}`);
  }
  t.equal((await carol(['auth', 'can-i', 'list', 'csidrivers.storage.svc.io'])).stdout.trim(), 'yes');
  t.equal((await carol(['auth', 'can-i', 'create', 'csidrivers.storage.k8s.io'])).stdout.trim(), 'no');
});

const UPSTREAM_MANIFEST = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: storage-viewer
  labels: {app.kubernetes.io/name: storage-viewer}
rules:
- apiGroups: [storage.k8s.io]
  resources: [csidrivers]
  verbs: [get, list, watch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dave-storage-viewer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: storage-viewer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: lease-writer, namespace: team}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create, update, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dave-lease-writer, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lease-writer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}
`;

t.test('kubectl apply -f of an upstream RBAC manifest, applied again unchanged', async (t) => {
  const path = file('upstream-rbac.yaml', UPSTREAM_MANIFEST);
  const r = await admin(['apply', '-f', path]);
  t.equal(r.code, 0, r.stderr);
  t.same(r.stdout.trim().split('\n'), [
    'clusterrole.rbac.authorization.k8s.io/storage-viewer created',
    'clusterrolebinding.rbac.authorization.k8s.io/dave-storage-viewer created',
    'role.rbac.authorization.k8s.io/lease-writer created',
    'rolebinding.rbac.authorization.k8s.io/dave-lease-writer created',
  ]);
  const again = await admin(['apply', '-f', path]);
  t.equal(again.code, 0, again.stderr);
  t.same(again.stdout.trim().split('\n'), [
    'clusterrole.rbac.authorization.k8s.io/storage-viewer unchanged',
    'clusterrolebinding.rbac.authorization.k8s.io/dave-storage-viewer unchanged',
    'role.rbac.authorization.k8s.io/lease-writer unchanged',
    'rolebinding.rbac.authorization.k8s.io/dave-lease-writer unchanged',
  ]);
  const lease = `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: l1, namespace: team}
spec: {holderIdentity: dave}
`;
  const made = await dave(['create', '-f', file('lease.yaml', lease)]);
  t.equal(made.code, 0, `dave writes leases in team through the upstream-spelled Role: ${made.stderr}`);
  t.equal((await dave(['get', 'leases.coordination.svc.io', '-n', 'team', '-o', 'name'])).stdout.trim(), 'lease.coordination.svc.io/l1', 'and reads them cluster-wide under either name');
  t.equal((await dave(['get', 'csidrivers'])).code, 0);
  const denied = await dave(['get', 'configmaps', '-n', 'team']);
  t.equal(denied.code, 1, 'nothing more');
});

const RECONCILE_MANIFEST = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: lease-auditor}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: carol-lease-auditor}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: lease-auditor}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
`;

t.test('kubectl auth reconcile -f of an upstream manifest: created, then nothing to do, then extended', async (t) => {
  const path = file('reconcile.yaml', RECONCILE_MANIFEST);
  const both = ['clusterrole.rbac.authorization.k8s.io/lease-auditor reconciled', 'clusterrolebinding.rbac.authorization.k8s.io/carol-lease-auditor reconciled'];
  const first = await admin(['auth', 'reconcile', '-f', path]);
  t.equal(first.code, 0, first.stderr);
  t.same(first.stdout.trim().split('\n'), both);
  const stamp = async () => {
    const role = JSON.parse((await admin(['get', 'clusterrole.rbac.authorization.k8s.io', 'lease-auditor', '-o', 'json'])).stdout);
    const binding = JSON.parse((await admin(['get', 'clusterrolebinding.rbac.authorization.k8s.io', 'carol-lease-auditor', '-o', 'json'])).stdout);
    return { role: role.metadata.resourceVersion, binding: `${binding.metadata.uid}/${binding.metadata.resourceVersion}`, rules: role.rules, roleRef: binding.roleRef };
  };
  const before = await stamp();
  t.same(before.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'lease-auditor' });
  const second = await admin(['auth', 'reconcile', '-f', path]);
  t.equal(second.code, 0, second.stderr);
  t.same(second.stdout.trim().split('\n'), both);
  const after = await stamp();
  t.equal(after.role, before.role, 'the second time the role is not written (the rules compare equal across spellings)');
  t.equal(after.binding, before.binding, 'nor the binding (not recreated: its roleRef reads as written)');
  t.equal((await carol(['auth', 'can-i', 'watch', 'leases', '--all-namespaces'])).stdout.trim(), 'yes');

  const wider = file('reconcile2.yaml', RECONCILE_MANIFEST.replace('verbs: [get, list, watch]', 'verbs: [get, list, watch, delete]').replace('name: carol}', 'name: carol}\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}'));
  const third = await admin(['auth', 'reconcile', '-f', wider]);
  t.equal(third.code, 0, third.stderr);
  const extended = await stamp();
  t.not(extended.role, before.role, 'a missing permission: the role is updated');
  t.ok(extended.rules.some((r: { verbs: string[] }) => r.verbs.includes('delete')), 'with the delete verb');
  t.equal((await alice(['auth', 'can-i', 'delete', 'leases.coordination.k8s.io', '-n', 'team'])).stdout.trim(), 'yes', 'the added subject and verb count');
});

t.test('a user may not grant what they do not hold, whatever the spelling (403 shown by kubectl)', async (t) => {
  // dave may write leases in team but may not write roles at all
  const r = await dave(['create', 'role', 'mine', '--verb=*', '--resource=configmaps', '-n', 'team']);
  t.equal(r.code, 1);
  t.match(r.stderr, /Error from server \(Forbidden\): roles\.rbac\.authorization\.k8s\.io is forbidden: User "dave" cannot create resource "roles" in API group "rbac\.authorization\.k8s\.io" in the namespace "team"/);
});

t.test('a rule with an unknown field is refused under Strict validation, and nothing is stored', async (t) => {
  const bad = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: typo, namespace: team}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verb: [get]
`;
  const r = await admin(['create', '--validate=strict', '-f', file('typo.yaml', bad)]);
  t.equal(r.code, 1);
  t.match(r.stderr, /strict decoding error: unknown field "rules\[0\]\.verb"/);
  t.equal((await admin(['get', 'role', 'typo', '-n', 'team'])).code, 1, 'not stored');
  const lax = await admin(['create', '--validate=false', '-f', file('typo.yaml', bad)]);
  t.equal(lax.code, 1, 'without the unknown field the rule has no verbs: 422');
  t.match(lax.stderr, /rules\[0\]\.verbs: Required value: verbs must contain at least one value/);
});
