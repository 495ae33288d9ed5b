/**
 * The RBAC authorizer over the wire, with the product's default authorization: bindings to users,
 * groups and service accounts; RoleBindings of Roles and of ClusterRoles (namespace only);
 * ClusterRoleBindings (cluster-wide); resource names, subresources, wildcards and non-resource URLs;
 * permissions adding up; a binding to a missing role granting nothing (and saying so); a new or
 * deleted binding counting from the very next request; anonymous callers limited to
 * system:public-info-viewer.
 */
import t from 'tap';
import { expectStatus } from '../helpers/fixtures.js';
import {
  clusterRole,
  clusterRoleBinding,
  configMap,
  createAll,
  group,
  namespace,
  pathOf,
  RBAC,
  role,
  roleBinding,
  rule,
  startRbacServer,
  user,
} from '../helpers/rbac.js';

const s = await startRbacServer([
  { name: 'carol' },
  { name: 'dave', groups: ['readers'] },
  { name: 'system:serviceaccount:team:robot', groups: ['system:serviceaccounts', 'system:serviceaccounts:team'] },
  { name: 'mona', groups: ['system:monitoring'] },
]);
t.teardown(() => s.stop());

const cm = (ns: string, name = '') => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ''}`;
const carol = s.as('carol');

await createAll(t, s.admin, [namespace('team'), namespace('other'), configMap('team', 'a'), configMap('team', 'b'), configMap('other', 'a')]);

t.test('nothing is allowed without a binding: 403 worded as upstream', async (t) => {
  expectStatus(t, await carol.get(cm('team')), 403, 'Forbidden', 'configmaps is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "team"');
  expectStatus(t, await carol.get(cm('team', 'a')), 403, 'Forbidden', 'configmaps "a" is forbidden: User "carol" cannot get resource "configmaps" in API group "" in the namespace "team"');
  expectStatus(t, await carol.get('/apis/storage.svc.io/v1/csidrivers'), 403, 'Forbidden', 'csidrivers.storage.svc.io is forbidden: User "carol" cannot list resource "csidrivers" in API group "storage.svc.io" at the cluster scope');
});

t.test('a new binding counts from the next request; deleting it takes the access away at once', async (t) => {
  const rb = roleBinding('team', 'carol-view', { kind: 'ClusterRole', name: 'view' }, [user('carol')]);
  for (let i = 0; i < 3; i++) {
    t.equal((await s.admin.post(`${RBAC}/namespaces/team/rolebindings`, rb)).status, 201);
    t.equal((await carol.get(cm('team'))).status, 200, `round ${i}: allowed right after the create`);
    t.equal((await s.admin.delete(pathOf(rb))).status, 200);
    t.equal((await carol.get(cm('team'))).status, 403, `round ${i}: refused right after the delete`);
  }
});

t.test('a RoleBinding of a Role grants in its namespace only', async (t) => {
  await createAll(t, s.admin, [role('team', 'cm-reader', [rule(['get', 'list'], [''], ['configmaps'])]), roleBinding('team', 'carol-cm', { kind: 'Role', name: 'cm-reader' }, [user('carol')])]);
  t.equal((await carol.get(cm('team'))).status, 200);
  t.equal((await carol.get(cm('team', 'a'))).status, 200);
  t.equal((await carol.get(cm('other'))).status, 403, 'not in another namespace');
  t.equal((await carol.post(cm('team'), configMap('team', 'c'))).status, 403, 'not another verb');
  t.equal((await carol.get('/api/v1/namespaces/team/secrets')).status, 403, 'not another resource');
  await s.admin.delete(pathOf(roleBinding('team', 'carol-cm', { kind: 'Role', name: 'x' }, [])));
});

t.test('a RoleBinding of a ClusterRole grants its rules inside the binding namespace only', async (t) => {
  await createAll(t, s.admin, [
    clusterRole('cm-all', [rule(['get', 'list'], [''], ['configmaps']), rule(['get'], ['storage.svc.io'], ['csidrivers'])]),
    roleBinding('team', 'carol-cm-all', { kind: 'ClusterRole', name: 'cm-all' }, [user('carol')]),
  ]);
  t.equal((await carol.get(cm('team'))).status, 200);
  t.equal((await carol.get(cm('other'))).status, 403);
  t.equal((await carol.get('/api/v1/configmaps')).status, 403, 'not across all namespaces');
  t.equal((await carol.get('/apis/storage.svc.io/v1/csidrivers/x')).status, 403, 'not cluster-scoped resources');
  await s.admin.delete(`${RBAC}/namespaces/team/rolebindings/carol-cm-all`);
});

t.test('a ClusterRoleBinding grants everywhere, cluster-scoped resources included', async (t) => {
  await createAll(t, s.admin, [clusterRoleBinding('readers-cm', 'cm-all', [group('readers')])]);
  const dave = s.as('dave');
  t.equal((await dave.get(cm('team'))).status, 200, 'through a group');
  t.equal((await dave.get(cm('other'))).status, 200);
  t.equal((await dave.get('/api/v1/configmaps')).status, 200, 'across namespaces');
  t.equal((await dave.get('/apis/storage.svc.io/v1/csidrivers/x')).status, 404, 'cluster-scoped: allowed (and absent)');
  t.equal((await carol.get(cm('other'))).status, 403, 'other users gain nothing');
});

t.test('permissions add up across bindings', async (t) => {
  await createAll(t, s.admin, [
    role('team', 'get-a', [rule(['get'], [''], ['configmaps'], ['a'])]),
    role('team', 'list-only', [rule(['list'], [''], ['configmaps'])]),
    roleBinding('team', 'carol-a', { kind: 'Role', name: 'get-a' }, [user('carol')]),
    roleBinding('team', 'carol-list', { kind: 'Role', name: 'list-only' }, [user('carol')]),
  ]);
  t.equal((await carol.get(cm('team', 'a'))).status, 200, 'the named object');
  t.equal((await carol.get(cm('team', 'b'))).status, 403, 'resourceNames limit get to the names');
  t.equal((await carol.get(cm('team'))).status, 200, 'list from the other binding');
  t.equal((await carol.delete(cm('team', 'a'))).status, 403);
  for (const n of ['carol-a', 'carol-list']) await s.admin.delete(`${RBAC}/namespaces/team/rolebindings/${n}`);
});

t.test('subresources and wildcards', async (t) => {
  await createAll(t, s.admin, [
    clusterRole('ns-status', [rule(['get'], [''], ['namespaces/status'])]),
    clusterRole('star-status', [rule(['get'], ['*'], ['*/status'])]),
    clusterRole('all-in-core', [rule(['*'], [''], ['*'])]),
    clusterRoleBinding('carol-ns-status', 'ns-status', [user('carol')]),
  ]);
  t.equal((await carol.get('/api/v1/namespaces/team/status')).status, 200, 'resource/subresource');
  t.equal((await carol.get('/api/v1/namespaces/team')).status, 403, 'not the resource itself');
  await s.admin.delete(`${RBAC}/clusterrolebindings/carol-ns-status`);
  await createAll(t, s.admin, [clusterRoleBinding('carol-star-status', 'star-status', [user('carol')])]);
  t.equal((await carol.get('/api/v1/namespaces/team/status')).status, 200, '*/status');
  await s.admin.delete(`${RBAC}/clusterrolebindings/carol-star-status`);
  await createAll(t, s.admin, [roleBinding('team', 'carol-core', { kind: 'ClusterRole', name: 'all-in-core' }, [user('carol')])]);
  t.equal((await carol.post(cm('team'), configMap('team', 'made-by-carol'))).status, 201, 'verbs and resources *');
  t.equal((await carol.get('/apis/coordination.svc.io/v1/namespaces/team/leases')).status, 403, 'group "" is the core group only');
  await s.admin.delete(`${RBAC}/namespaces/team/rolebindings/carol-core`);
});

t.test('service accounts: by namespace and name, the namespace defaulting to the binding', async (t) => {
  const robot = s.as('system:serviceaccount:team:robot');
  t.equal((await robot.get(cm('team'))).status, 403);
  await createAll(t, s.admin, [roleBinding('team', 'robot', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'robot' }])]);
  t.equal((await robot.get(cm('team'))).status, 200, 'subject without namespace: the binding namespace');
  await createAll(t, s.admin, [roleBinding('other', 'robot', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'robot' }])]);
  t.equal((await robot.get(cm('other'))).status, 403, 'robot in namespace other is another account');
  await createAll(t, s.admin, [roleBinding('other', 'team-robot', { kind: 'ClusterRole', name: 'view' }, [{ kind: 'ServiceAccount', name: 'robot', namespace: 'team' }])]);
  t.equal((await robot.get(cm('other'))).status, 200, 'named with its namespace');
  await createAll(t, s.admin, [roleBinding('other', 'all-sa', { kind: 'ClusterRole', name: 'edit' }, [group('system:serviceaccounts:team')])]);
  t.equal((await robot.post(cm('other'), configMap('other', 'by-robot'))).status, 201, 'through the namespace group of service accounts');
});

t.test('a binding to a missing role grants nothing and the 403 names it', async (t) => {
  await createAll(t, s.admin, [
    roleBinding('team', 'ghost', { kind: 'Role', name: 'ghost' }, [user('carol')]),
    clusterRoleBinding('ghost-c', 'ghost-c', [user('carol')]),
  ]);
  const r = await carol.get(cm('team'));
  expectStatus(
    t,
    r,
    403,
    'Forbidden',
    'configmaps is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "team": RBAC: [clusterrole.rbac.authorization.svc.io "ghost-c" not found, role.rbac.authorization.svc.io "ghost" not found]',
  );
  // creating the role later makes the binding work
  await createAll(t, s.admin, [role('team', 'ghost', [rule(['list'], [''], ['configmaps'])])]);
  t.equal((await carol.get(cm('team'))).status, 200);
  await s.admin.delete(`${RBAC}/namespaces/team/rolebindings/ghost`);
  await s.admin.delete(`${RBAC}/clusterrolebindings/ghost-c`);
});

t.test('non-resource URLs: exact paths and trailing *', async (t) => {
  t.equal((await carol.get('/livez')).status, 200, 'system:public-info-viewer');
  t.equal((await carol.get('/apis')).status, 200, 'system:discovery');
  t.equal((await carol.get('/readyz/ping')).status, 403, 'a single check needs system:monitoring');
  t.equal((await s.as('mona').get('/readyz/ping')).status, 200, 'system:monitoring reads /readyz/*');
  await createAll(t, s.admin, [clusterRole('health-star', [{ verbs: ['get'], nonResourceURLs: ['/livez/*'] }]), clusterRoleBinding('carol-health', 'health-star', [user('carol')])]);
  t.equal((await carol.get('/livez/ping')).status, 200);
  expectStatus(t, await carol.get('/readyz/ping'), 403, 'Forbidden', 'forbidden: User "carol" cannot get path "/readyz/ping"');
  t.equal((await carol.post('/livez/ping', {})).status, 403, 'verb post is not get');
  await createAll(t, s.admin, [roleBinding('team', 'urls-in-ns', { kind: 'ClusterRole', name: 'system:monitoring' }, [user('carol')])]);
  t.equal((await carol.get('/readyz/ping')).status, 403, 'URLs bound by a RoleBinding grant nothing');
});

t.test('anonymous callers get system:public-info-viewer and nothing else', async (t) => {
  for (const p of ['/version', '/livez', '/readyz', '/healthz']) t.equal((await s.anon.get(p)).status, 200, p);
  for (const p of ['/api', '/apis', '/openapi/v2', '/readyz/ping', '/api/v1/namespaces', cm('team'), '/apis/rbac.authorization.svc.io/v1/clusterroles']) {
    t.equal((await s.anon.get(p)).status, 403, p);
  }
  expectStatus(t, await s.anon.get('/api'), 403, 'Forbidden', 'forbidden: User "system:anonymous" cannot get path "/api"');
});

t.test('system:masters needs no binding', async (t) => {
  t.equal((await s.admin.get('/api/v1/configmaps')).status, 200);
  t.equal((await s.admin.get('/readyz/ping')).status, 200);
});
