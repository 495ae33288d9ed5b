/**
 * The default policy across restarts (the rbac/bootstrap-roles post-start hook): on the first start
 * every default role and binding exists; on a later start missing permissions and subjects are put
 * back, deleted defaults recreated and administrators' additions kept, while an object annotated
 * rbac.authorization.svc.io/autoupdate=false is left as it is.
 */
import t from 'tap';
import { covers } from '../../core/authz/rbac/rules.js';
import { seededDir } from '../helpers/fixtures.js';
import { RBAC } from '../helpers/rbac.js';
import { startServer } from '../helpers/server.js';

const dir = seededDir('svc-rbac-boot-');
const MERGE = 'application/merge-patch+json';
const cr = (n: string) => `${RBAC}/clusterroles/${n}`;
const crb = (n: string) => `${RBAC}/clusterrolebindings/${n}`;

t.test('first start: the defaults exist and the hook reports', async (t) => {
  const s = await startServer([], dir);
  t.teardown(() => s.stop());
  const names = (await s.admin.get(`${RBAC}/clusterroles?labelSelector=svc.io/bootstrapping=rbac-defaults`)).json.items.map((i: { metadata: { name: string } }) => i.metadata.name);
  for (const n of ['cluster-admin', 'admin', 'edit', 'view', 'system:basic-user', 'system:discovery', 'system:public-info-viewer', 'system:monitoring', 'system:controller:namespace-controller']) {
    t.ok(names.includes(n), n);
  }
  t.match((await s.admin.get('/readyz?verbose')).text, /\[\+\]poststarthook\/rbac\/bootstrap-roles ok/);

  // an administrator's changes before the restart
  t.equal((await s.admin.patch(cr('system:basic-user'), { rules: [] }, MERGE)).status, 200, 'a default permission removed');
  t.equal((await s.admin.patch(cr('system:public-info-viewer'), { metadata: { annotations: { 'rbac.authorization.svc.io/autoupdate': 'false' } }, rules: [] }, MERGE)).status, 200, 'a default opted out of updates');
  t.equal((await s.anon.get('/version')).status, 403, 'anonymous callers lost /version');
  t.equal((await s.admin.delete(crb('system:discovery'))).status, 200, 'a default binding deleted');
  t.equal((await s.admin.patch(crb('cluster-admin'), { subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'ops-lead' }] }, MERGE)).status, 200, 'cluster-admin subjects replaced');
  const mon = (await s.admin.get(cr('system:monitoring'))).json;
  t.equal((await s.admin.patch(cr('system:monitoring'), { rules: [...mon.rules, { verbs: ['get'], nonResourceURLs: ['/debug/extra'] }] }, MERGE)).status, 200, 'a permission added to a default');
  t.equal((await s.admin.patch(cr('edit'), { metadata: { labels: { 'svc.io/bootstrapping': null } } }, MERGE)).status, 200, 'a default label removed');
});

t.test('a restart puts back what is missing and keeps the rest', async (t) => {
  const s = await startServer([], dir);
  t.teardown(() => s.stop());
  // as upstream's reconciliation: the missing permissions are appended one piece (verb, group, resource) each
  const basic = (await s.admin.get(cr('system:basic-user'))).json.rules;
  t.ok(covers(basic, [{ verbs: ['create'], apiGroups: ['authentication.svc.io', 'authentication.k8s.io'], resources: ['selfsubjectreviews'] }]).covered, 'the permissions are back');
  t.ok(covers(basic, [{ verbs: ['create'], apiGroups: ['authorization.svc.io', 'authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'] }]).covered, 'under both group names');
  t.same(basic[0], { apiGroups: ['authorization.svc.io'], resources: ['selfsubjectaccessreviews'], verbs: ['create'] }, 'one piece per rule');
  t.same((await s.admin.get(cr('system:public-info-viewer'))).json.rules, [], 'autoupdate=false: left alone');
  t.equal((await s.anon.get('/version')).status, 403, 'and anonymous callers stay out');
  const discovery = (await s.admin.get(crb('system:discovery'))).json;
  t.same(discovery.subjects, [{ kind: 'Group', apiGroup: 'rbac.authorization.svc.io', name: 'system:authenticated' }], 'the deleted binding is recreated');
  t.same(
    (await s.admin.get(crb('cluster-admin'))).json.subjects.map((x: { name: string }) => x.name),
    ['ops-lead', 'system:masters'],
    'the missing subject is added after the kept one',
  );
  const mon = (await s.admin.get(cr('system:monitoring'))).json.rules;
  t.ok(mon.some((r: { nonResourceURLs?: string[] }) => r.nonResourceURLs?.includes('/debug/extra')), 'the added permission stays');
  t.equal((await s.admin.get(cr('edit'))).json.metadata.labels['svc.io/bootstrapping'], 'rbac-defaults', 'the label is back');
  t.ok((await s.admin.get(cr('edit'))).json.rules.length > 0, 'edit is aggregated again before the server is ready');
});
