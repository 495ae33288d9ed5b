/**
 * The clusterrole-aggregation-controller: an aggregating ClusterRole's rules are the union of the
 * rules of the ClusterRoles its selectors match (sorted by name, duplicates dropped), kept current as
 * matching roles are created, relabelled, edited and deleted; a hand edit of the aggregated rules is
 * undone; the default view/edit/admin roles grow with roles labelled aggregate-to-*. Runs with the
 * worker pool, so the controller's writes take the main-thread route of RBAC writes.
 */
import t from 'tap';
import { clusterRole, createAll, namespace, RBAC, roleBinding, rule, startRbacServer, user, waitFor } from '../helpers/rbac.js';

const s = await startRbacServer([{ name: 'carol' }], ['--workers=2']);
t.teardown(() => s.stop());

const LABEL = 'example.com/aggregate-to-ops';
const path = (n: string) => `${RBAC}/clusterroles/${n}`;
const rulesOf = async (n: string) => (await s.admin.get(path(n))).json.rules;
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const eventually = (n: string, want: unknown) => waitFor(async () => same(await rulesOf(n), want));

const podsGet = rule(['get'], [''], ['pods']);
const cmList = rule(['list'], [''], ['configmaps']);
const secretsGet = rule(['get'], [''], ['secrets']);

t.test('rules follow the matching roles', async (t) => {
  await createAll(t, s.admin, [clusterRole('ops', [], { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [LABEL]: 'true' } }] } })]);
  t.same(await rulesOf('ops'), [], 'created with no rules');

  await createAll(t, s.admin, [{ ...clusterRole('ops-b', [secretsGet, podsGet]), metadata: { name: 'ops-b', labels: { [LABEL]: 'true' } } }]);
  t.ok(await eventually('ops', [secretsGet, podsGet]), 'a matching role created later adds its rules');

  await createAll(t, s.admin, [{ ...clusterRole('ops-a', [podsGet, cmList]), metadata: { name: 'ops-a', labels: { [LABEL]: 'true' } } }]);
  t.ok(await eventually('ops', [podsGet, cmList, secretsGet]), 'roles in name order, a rule held twice listed once');

  await createAll(t, s.admin, [{ ...clusterRole('not-ops', [rule(['*'], ['*'], ['*'])]), metadata: { name: 'not-ops', labels: { [LABEL]: 'false' } } }]);
  t.equal((await s.admin.patch(path('ops-a'), { metadata: { labels: { [LABEL]: null } } }, 'application/merge-patch+json')).status, 200);
  t.ok(await eventually('ops', [secretsGet, podsGet]), 'removing the label removes its rules');

  t.equal((await s.admin.patch(path('ops-b'), { rules: [cmList] }, 'application/merge-patch+json')).status, 200);
  t.ok(await eventually('ops', [cmList]), 'an edit of a matching role is followed');

  t.equal((await s.admin.patch(path('ops'), { rules: [rule(['*'], ['*'], ['*'])] }, 'application/merge-patch+json')).status, 200);
  t.ok(await eventually('ops', [cmList]), 'a hand edit of the aggregated rules is undone');
  const managers = (await s.admin.get(path('ops'))).json.metadata.managedFields.map((m: { manager: string }) => m.manager);
  t.ok(managers.includes('clusterrole-aggregation-controller'), `written by the controller's field manager (${managers.join(', ')})`);

  t.equal((await s.admin.delete(path('ops-b'))).status, 200);
  t.ok(await eventually('ops', []), 'deleting the last matching role leaves no rules');
});

t.test('the default view, edit and admin roles take in roles labelled aggregate-to-*', async (t) => {
  await createAll(t, s.admin, [namespace('team'), roleBinding('team', 'carol-view', { kind: 'ClusterRole', name: 'view' }, [user('carol')])]);
  const carol = s.as('carol');
  t.equal((await carol.get('/apis/coordination.svc.io/v1/namespaces/team/leases')).status, 403, 'view cannot read leases');
  const leases = rule(['get', 'list', 'watch'], ['coordination.svc.io'], ['leases']);
  await createAll(t, s.admin, [
    { ...clusterRole('leases-view', [leases]), metadata: { name: 'leases-view', labels: { 'rbac.authorization.svc.io/aggregate-to-view': 'true' } } },
  ]);
  const has = async (n: string) => ((await rulesOf(n)) as unknown[]).some((r) => same(r, leases));
  t.ok(await waitFor(() => has('view')), 'view');
  t.ok(await waitFor(() => has('edit')), 'edit (which aggregates view)');
  t.ok(await waitFor(() => has('admin')), 'admin (which aggregates edit)');
  t.equal((await carol.get('/apis/coordination.svc.io/v1/namespaces/team/leases')).status, 200, 'a user bound to view may now read leases');
});
