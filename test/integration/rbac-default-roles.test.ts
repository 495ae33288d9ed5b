/**
 * The default policy against a matrix of (user, verb, resource): the server starts with its own
 * default authorization (RBAC) and default roles; users are bound in namespace `team` to view, edit,
 * admin and cluster-admin (RoleBindings), or hold only what every authenticated or anonymous caller
 * gets, or are in system:monitoring or system:masters, or are a node (the Node mode, before RBAC in the
 * default --authorization-mode=Node,RBAC). Each cell is the decision the spec's table
 * implies (allowed: anything but 403).
 */
import t from 'tap';
import type { Client } from '../helpers/client.js';
import { createAll, group, namespace, RBAC, roleBinding, startRbacServer, user } from '../helpers/rbac.js';

const s = await startRbacServer([{ name: 'plain' }, { name: 'viewer' }, { name: 'editor' }, { name: 'nsadmin' }, { name: 'nsroot' }, { name: 'mona', groups: ['system:monitoring'] }, { name: 'system:node:n1', groups: ['system:nodes'] }]);
t.teardown(() => s.stop());

await createAll(t, s.admin, [
  namespace('team'),
  namespace('other'),
  roleBinding('team', 'viewer', { kind: 'ClusterRole', name: 'view' }, [user('viewer')]),
  roleBinding('team', 'editor', { kind: 'ClusterRole', name: 'edit' }, [user('editor')]),
  roleBinding('team', 'nsadmin', { kind: 'ClusterRole', name: 'admin' }, [user('nsadmin')]),
  roleBinding('team', 'nsroot', { kind: 'ClusterRole', name: 'cluster-admin' }, [user('nsroot')]),
]);

/** Column letters: anonymous, plain, viewer, editor, nsadmin, nsroot (cluster-admin by RoleBinding), mona (monitoring), node, masters. */
const users: Record<string, Client> = {
  a: s.anon,
  p: s.as('plain'),
  v: s.as('viewer'),
  e: s.as('editor'),
  d: s.as('nsadmin'),
  r: s.as('nsroot'),
  m: s.as('mona'),
  n: s.as('system:node:n1'),
  M: s.admin,
};

const ns = (p: string) => `/api/v1/namespaces/team/${p}`;
const meta = { generateName: 'm-' };
const MERGE = 'application/merge-patch+json';

type Row = [what: string, method: string, path: string, body: unknown, allowed: string];
const rows: Row[] = [
  ['list configmaps in team', 'GET', ns('configmaps'), undefined, 'v e d r M'],
  ['create a configmap in team', 'POST', ns('configmaps'), { metadata: meta }, 'e d r M'],
  ['list secrets in team', 'GET', ns('secrets'), undefined, 'e d r M'],
  ['create a secret in team', 'POST', ns('secrets'), { metadata: meta }, 'e d r M'],
  ['get namespace team', 'GET', '/api/v1/namespaces/team', undefined, 'v e d r M'],
  ['patch namespace team', 'PATCH', '/api/v1/namespaces/team', { metadata: { labels: { x: 'y' } } }, 'r M'],
  ['get namespaces/status of team', 'GET', '/api/v1/namespaces/team/status', undefined, 'v e d r M'],
  ['list events in team', 'GET', ns('events'), undefined, 'v e d r M'],
  ['create an event in team', 'POST', ns('events'), { metadata: meta }, 'r n M'],
  ['list serviceaccounts in team', 'GET', ns('serviceaccounts'), undefined, 'v e d r M'],
  ['create a serviceaccount in team', 'POST', ns('serviceaccounts'), { metadata: meta }, 'e d r M'],
  ['delete serviceaccounts in team (deletecollection)', 'DELETE', ns('serviceaccounts'), undefined, 'e d r M'],
  ['list leases in team', 'GET', '/apis/coordination.svc.io/v1/namespaces/team/leases', undefined, 'r M'],
  ['list roles in team', 'GET', `${RBAC}/namespaces/team/roles`, undefined, 'd r M'],
  [
    'bind view in team',
    'POST',
    `${RBAC}/namespaces/team/rolebindings`,
    { apiVersion: 'rbac.authorization.svc.io/v1', kind: 'RoleBinding', metadata: meta, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'view' }, subjects: [group('g')] },
    'd r M',
  ],
  ['list configmaps in another namespace', 'GET', '/api/v1/namespaces/other/configmaps', undefined, 'M'],
  ['list configmaps in all namespaces', 'GET', '/api/v1/configmaps', undefined, 'M'],
  ['list namespaces', 'GET', '/api/v1/namespaces', undefined, 'M'],
  ['list clusterroles', 'GET', `${RBAC}/clusterroles`, undefined, 'M'],
  ['get a csidriver', 'GET', '/apis/storage.svc.io/v1/csidrivers/x', undefined, 'n M'],
  ['create a csidriver', 'POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: meta }, 'M'],
  ['get the node\'s own lease', 'GET', '/apis/coordination.svc.io/v1/namespaces/svc-node-lease/leases/n1', undefined, 'n M'],
  ['get another node\'s lease', 'GET', '/apis/coordination.svc.io/v1/namespaces/svc-node-lease/leases/n2', undefined, 'M'],
  // the same objects under upstream's group names (an alias: authorized as the served group)
  ['list roles in team (rbac.authorization.k8s.io)', 'GET', '/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles', undefined, 'd r M'],
  ['list leases in team (coordination.k8s.io)', 'GET', '/apis/coordination.k8s.io/v1/namespaces/team/leases', undefined, 'r M'],
  ['create a selfsubjectaccessreview (authorization.k8s.io)', 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { nonResourceAttributes: { path: '/x', verb: 'get' } } }, 'p v e d r m n M'],
  ['create a selfsubjectreview', 'POST', '/apis/authentication.svc.io/v1/selfsubjectreviews', { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' }, 'p v e d r m n M'],
  ['GET /version', 'GET', '/version', undefined, 'a p v e d r m n M'],
  ['GET /healthz', 'GET', '/healthz', undefined, 'a p v e d r m n M'],
  ['GET /apis (discovery)', 'GET', '/apis', undefined, 'p v e d r m n M'],
  ['GET /api/v1 (discovery)', 'GET', '/api/v1', undefined, 'p v e d r m n M'],
  ['GET /openapi/v3', 'GET', '/openapi/v3', undefined, 'p v e d r m n M'],
  ['GET /openapi/v2', 'GET', '/openapi/v2', undefined, 'p v e d r m n M'],
  ['GET /readyz/ping (one check)', 'GET', '/readyz/ping', undefined, 'm M'],
  ['GET /livez?verbose', 'GET', '/livez?verbose', undefined, 'a p v e d r m n M'],
];

for (const [what, method, path, body, allowed] of rows) {
  t.test(what, async (t) => {
    const want = new Set(allowed.split(' '));
    for (const [letter, c] of Object.entries(users)) {
      const r = method === 'PATCH' ? await c.patch(path, body, MERGE) : await c.request(method, path, body === undefined ? {} : { body });
      const decision = r.status === 403 ? 'denied' : 'allowed';
      t.equal(decision, want.has(letter) ? 'allowed' : 'denied', `${letter}: ${method} ${path} (${r.status})`);
    }
  });
}
