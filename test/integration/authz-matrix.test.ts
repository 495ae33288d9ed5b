/**
 * The authorization matrix (issue 26): 13 users with different bindings, every served kind under both
 * group spellings, every verb (get, list, watch, create, update, patch, delete, deletecollection) and
 * the subresources (status, namespaces/finalize, serviceaccounts/token), sent to one real server with
 * the product's default authorization (Node,RBAC) over TLS. Each expected answer is computed by the
 * test's own model of upstream (test/helpers/authz-model.ts: request attributes from the path, RBAC
 * rules evaluated from the roles as data, upstream's routes), never asked of the server:
 *
 *   denied by RBAC            403, and a write changed nothing (every object it could touch compared
 *                             by resourceVersion afterwards, a refused create's name absent everywhere)
 *   allowed                   the route's answer: 404 for any path naming a namespace around a
 *                             cluster-scoped kind (namespaces, csidrivers, clusterroles, ...), 404 for
 *                             a namespaced kind's object without a namespace, 405 for a method the
 *                             route does not have, else the operation's code (200, 201; 404 when the
 *                             object is not there), with a body of the kind, name, namespace and group
 *                             spelling the path named (a list a list, a watch a stream of events)
 *
 * The classes include the escalation of issue 26 (`/api/v1/namespaces/<ns>/namespaces/<name>`, its
 * status, its collection, list and watch, the legacy `/watch/` form), every other cluster-scoped kind
 * under a namespace, percent-encoded and upper-case segments, the `watch` parameter's readings and
 * field-selector names. Allowed writes act on objects made for them (or run as dry runs where the grant
 * names the one object, as a resourceNames rule or a namespace's own RoleBinding does); refused ones
 * act on the shared objects, which must be unchanged at the end. A smaller matrix runs over gRPC.
 * Mismatches are printed as one table per class.
 */
import t from 'tap';
import { GrpcStatusError, ResourceClient } from '../../core/grpc/client.js';
import { type Attrs, type Binding, type ModelUser, RbacModel, routeAnswer, type Rule, type ServedKind, type ServedTypes, upstreamAttributes } from '../helpers/authz-model.js';
import { H2Client, pool, table } from '../helpers/h2-requests.js';
import { G, startRbacServer, type TestUser, waitFor } from '../helpers/rbac.js';
import { b64, rsaCsr } from '../helpers/csr.js';
import { ADMIN_TOKEN, freePort } from '../helpers/server.js';

// about 15-20 s on two cores when the server is right; one that serves what it should refuse can take longer
t.setTimeout(180_000);

const CONCURRENCY = 24;
/** Rows of a mismatch table printed per class. */
const ROWS = 60;
const NAMESPACES = ['a', 'b', 'victim'] as const;
const CRD_NAME = 'widgets.matrix.example.com';
const UPSTREAM_RBAC = 'rbac.authorization.k8s.io';

// ---------------------------------------------------------------- users and their grants

const USERS: (TestUser & { about: string })[] = [
  { name: 'nobody', about: 'no bindings at all' },
  { name: 'view-a', about: 'RoleBinding to view in a' },
  { name: 'edit-a', about: 'RoleBinding to edit in a' },
  { name: 'admin-a', about: 'RoleBinding to admin in a' },
  { name: 'nsadmin-a', about: 'RoleBinding to cluster-admin in a (namespace admin)' },
  { name: 'cluster-view', about: 'ClusterRoleBinding to view' },
  { name: 'rn-user', about: 'Role in a with resourceNames: configmap rn-cm, namespace victim' },
  { name: 'upstream-groups', about: 'Role in a and ClusterRole naming storage.k8s.io, coordination.k8s.io, rbac.authorization.k8s.io' },
  { name: 'ns-reader', about: 'ClusterRole get/list namespaces' },
  { name: 'sub-only', about: 'RoleBinding in a: namespaces/status update+patch, serviceaccounts/token create, */status get' },
  { name: 'grouped', groups: ['matrix-team'], about: 'ClusterRoleBinding of edit to its group matrix-team' },
  { name: 'wild-b', about: 'Role in b with * verbs, groups and resources' },
  { name: 'watcher', about: 'ClusterRole watch on * in every group' },
];

/** The test's own roles (created on the server and given to the model as the same data). */
const ROLES: { namespace?: string; name: string; rules: Rule[]; upstreamSpelling?: boolean }[] = [
  { name: 'matrix-empty', rules: [] },
  {
    namespace: 'a',
    name: 'rn',
    rules: [
      { verbs: ['get', 'update', 'patch', 'delete', 'list', 'watch'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['rn-cm'] },
      { verbs: ['get', 'update', 'patch', 'delete'], apiGroups: [''], resources: ['namespaces', 'namespaces/status'], resourceNames: ['victim'] },
    ],
  },
  {
    namespace: 'a',
    name: 'upstream',
    upstreamSpelling: true,
    rules: [
      { verbs: ['get', 'list', 'watch', 'update', 'delete'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] },
      { verbs: ['*'], apiGroups: ['coordination.k8s.io'], resources: ['leases'] },
      { verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'], apiGroups: [UPSTREAM_RBAC], resources: ['roles', 'rolebindings'] },
    ],
  },
  {
    name: 'upstream-storage',
    upstreamSpelling: true,
    rules: [{ verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }],
  },
  { name: 'ns-reader', rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['namespaces'] }] },
  {
    name: 'sub-only',
    rules: [
      { verbs: ['update', 'patch'], apiGroups: [''], resources: ['namespaces/status'] },
      { verbs: ['create'], apiGroups: [''], resources: ['serviceaccounts/token'] },
      { verbs: ['get'], apiGroups: ['*'], resources: ['*/status'] },
    ],
  },
  { namespace: 'b', name: 'wild', rules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }] },
  { name: 'watcher', rules: [{ verbs: ['watch'], apiGroups: ['*'], resources: ['*'] }] },
];

const u = (name: string) => ({ kind: 'User', name });
const BINDINGS: (Binding & { name: string; upstreamSpelling?: boolean })[] = [
  { name: 'view-a', namespace: 'a', roleRef: { kind: 'ClusterRole', name: 'view' }, subjects: [u('view-a')] },
  { name: 'edit-a', namespace: 'a', roleRef: { kind: 'ClusterRole', name: 'edit' }, subjects: [u('edit-a')] },
  { name: 'admin-a', namespace: 'a', roleRef: { kind: 'ClusterRole', name: 'admin' }, subjects: [u('admin-a')] },
  { name: 'nsadmin-a', namespace: 'a', roleRef: { kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [u('nsadmin-a')] },
  { name: 'cluster-view', roleRef: { kind: 'ClusterRole', name: 'view' }, subjects: [u('cluster-view')] },
  { name: 'rn', namespace: 'a', roleRef: { kind: 'Role', name: 'rn' }, subjects: [u('rn-user')] },
  { name: 'upstream', namespace: 'a', upstreamSpelling: true, roleRef: { kind: 'Role', name: 'upstream' }, subjects: [u('upstream-groups')] },
  { name: 'upstream-storage', upstreamSpelling: true, roleRef: { kind: 'ClusterRole', name: 'upstream-storage' }, subjects: [u('upstream-groups')] },
  { name: 'ns-reader', roleRef: { kind: 'ClusterRole', name: 'ns-reader' }, subjects: [u('ns-reader')] },
  { name: 'sub-only', namespace: 'a', roleRef: { kind: 'ClusterRole', name: 'sub-only' }, subjects: [u('sub-only')] },
  { name: 'matrix-team-edit', roleRef: { kind: 'ClusterRole', name: 'edit' }, subjects: [{ kind: 'Group', name: 'matrix-team' }] },
  { name: 'wild', namespace: 'b', roleRef: { kind: 'Role', name: 'wild' }, subjects: [u('wild-b')] },
  { name: 'watcher', roleRef: { kind: 'ClusterRole', name: 'watcher' }, subjects: [u('watcher')] },
];

/** Upstream's default bindings that reach our users (all of them authenticated); their roles are read from the server. */
const DEFAULT_BINDINGS: Binding[] = ['system:basic-user', 'system:discovery', 'system:public-info-viewer'].map((name) => ({
  roleRef: { kind: 'ClusterRole', name },
  subjects: [{ kind: 'Group', name: 'system:authenticated' }],
}));
const DEFAULT_ROLES = ['view', 'edit', 'admin', 'cluster-admin', 'system:basic-user', 'system:discovery', 'system:public-info-viewer'];

const modelUsers = new Map<string, ModelUser>(USERS.map((x) => [x.name, { name: x.name, groups: [...(x.groups ?? []), 'system:authenticated'] }]));

// ---------------------------------------------------------------- the server

const grpcPort = await freePort();
const s = await startRbacServer(USERS, [`--grpc-port=${grpcPort}`]);
const h2 = new Map<string, H2Client>(USERS.map((x) => [x.name, new H2Client(s.url, s.ca, `token-${x.name}`)]));
const admin = new H2Client(s.url, s.ca, ADMIN_TOKEN);
t.teardown(async () => {
  for (const c of h2.values()) c.close();
  admin.close();
  await s.stop();
});

async function must(method: string, path: string, body?: unknown, codes = [200, 201]): Promise<any> {
  const r = await admin.request(method, path, body === undefined ? {} : { body });
  if (!codes.includes(r.status)) throw new Error(`setup ${method} ${path}: ${r.status} ${r.body.toString().slice(0, 300)}`);
  return r.json;
}

// discovery: the served kinds, both spellings of each group
const kinds: ServedKind[] = [];
const byId = new Map<string, ServedKind>();
{
  const lists: { group: string; version: string; resources: any[] }[] = [{ group: '', version: 'v1', resources: (await must('GET', '/api/v1')).resources }];
  const groups = (await must('GET', '/apis')).groups as { name: string; versions: { version: string }[] }[];
  for (const g of groups) for (const v of g.versions) lists.push({ group: g.name, version: v.version, resources: (await must('GET', `/apis/${g.name}/${v.version}`)).resources });
  const names = new Set(groups.map((g) => g.name));
  for (const l of lists) {
    if (l.group.endsWith('.k8s.io') && names.has(l.group.replace(/\.k8s\.io$/, '.svc.io'))) continue; // an alias: added as a spelling below
    for (const r of l.resources) {
      if (r.name.includes('/')) continue;
      const k: ServedKind = { group: l.group, spellings: [l.group], version: l.version, resource: r.name, kind: r.kind, namespaced: r.namespaced, verbs: new Set(r.verbs), subresources: new Map() };
      const alias = l.group.replace(/\.svc\.io$/, '.k8s.io');
      if (alias !== l.group && names.has(alias)) k.spellings.push(alias);
      for (const sub of l.resources) if (sub.name.startsWith(`${r.name}/`)) k.subresources.set(sub.name.slice(r.name.length + 1), new Set(sub.verbs));
      kinds.push(k);
      byId.set(`${k.group}/${k.version}/${k.resource}`, k);
    }
  }
}
const canonical = (g: string): string => {
  const svc = g.replace(/\.k8s\.io$/, '.svc.io');
  return g.endsWith('.k8s.io') && kinds.some((k) => k.group === svc) ? svc : g;
};
const types: ServedTypes = { get: (g, v, r) => byId.get(`${g}/${v}/${r}`), canonical };
const kindOf = (a: Attrs): ServedKind | undefined => (a.isResourceRequest ? byId.get(`${canonical(a.apiGroup)}/${a.apiVersion}/${a.resource}`) : undefined);
const REVIEWS = new Set(['selfsubjectreviews', 'tokenreviews', 'selfsubjectaccessreviews', 'subjectaccessreviews', 'localsubjectaccessreviews', 'selfsubjectrulesreviews']);
const isReview = (k: ServedKind) => REVIEWS.has(k.resource);

const prefix = (k: ServedKind, spelling: string) => (k.group === '' ? `/api/${k.version}` : `/apis/${spelling}/${k.version}`);
const apiVersionOf = (k: ServedKind, spelling: string) => (k.group === '' ? k.version : `${spelling}/${k.version}`);
const canaryName = (k: ServedKind) => (k.resource === 'customresourcedefinitions' ? CRD_NAME : k.resource === 'apiservices' ? 'x.matrix.example.com' : 'x');
/** A fresh name for `k` (a CRD's name is its plural and group). */
const freshName = (k: ServedKind, n: string) => (k.resource === 'customresourcedefinitions' ? `${n}s.matrix.example.com` : k.resource === 'apiservices' ? `${n}.matrix.example.com` : n);

/** One certificate request every CertificateSigningRequest of the matrix carries. */
const MATRIX_CSR = rsaCsr({ cn: 'matrix' }).pem;

/** A new object of kind `k` as the path spelled its group, valid for a create. */
function newObject(k: ServedKind, spelling: string, name: string, ns: string, labels: Record<string, string> = {}): Record<string, unknown> {
  const metadata: Record<string, unknown> = { name, ...(k.namespaced && ns ? { namespace: ns } : {}), labels };
  const base = { apiVersion: apiVersionOf(k, spelling), kind: k.kind, metadata };
  const rbacRef = { apiGroup: k.group === '' ? G : spelling, kind: 'ClusterRole', name: 'matrix-empty' };
  switch (k.resource) {
    case 'namespaces':
    case 'serviceaccounts':
      return base;
    case 'configmaps':
      return { ...base, data: { k: 'v' } };
    case 'secrets':
      return { ...base, type: 'Opaque', data: { k: 'dg==' } };
    case 'events':
      return { ...base, involvedObject: { kind: 'ConfigMap', namespace: ns, name: 'x' }, reason: 'Matrix', message: 'm', type: 'Normal' };
    case 'leases':
      return { ...base, spec: { holderIdentity: 'matrix' } };
    case 'csidrivers':
      return { ...base, spec: {} };
    case 'roles':
    case 'clusterroles':
      return { ...base, rules: [] };
    case 'rolebindings':
    case 'clusterrolebindings':
      return { ...base, roleRef: rbacRef, subjects: [] };
    case 'customresourcedefinitions': {
      const plural = name.split('.')[0]!;
      return {
        ...base,
        spec: {
          group: 'matrix.example.com',
          names: { plural, singular: plural.replace(/s$/, ''), kind: plural[0]!.toUpperCase() + plural.slice(1, -1), listKind: `${plural[0]!.toUpperCase()}${plural.slice(1, -1)}List` },
          scope: 'Namespaced',
          versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
        },
      };
    }
    case 'validatingwebhookconfigurations':
    case 'mutatingwebhookconfigurations':
      // no webhooks: the matrix's own writes are not admitted by them
      return { ...base, webhooks: [] };
    case 'validatingadmissionpolicies':
      // a policy on a resource nothing writes
      return { ...base, spec: { matchConstraints: { resourceRules: [{ apiGroups: ['matrix.example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['nothings'] }] }, validations: [{ expression: 'true' }] } };
    case 'validatingadmissionpolicybindings':
      return { ...base, spec: { policyName: 'matrix-no-such-policy', validationActions: ['Deny'] } };
    case 'resourcequotas':
      return { ...base, spec: { hard: {} } };
    case 'certificatesigningrequests':
      // a signer nobody here answers: no controller touches the request
      return { ...base, spec: { request: b64(MATRIX_CSR), signerName: 'matrix.example.com/signer', usages: ['client auth'] } };
    case 'endpoints':
      return { ...base, subsets: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ port: 443 }] }] };
    case 'apiservices': {
      // a local group version nothing serves: valid, and no request is proxied for it
      const [version, ...group] = name.split('.');
      return { ...base, spec: { group: group.join('.'), version, groupPriorityMinimum: 1, versionPriority: 1 } };
    }
    case 'flowschemas':
      // a schema nothing matches (no subject is this user), at a level of its own
      return { ...base, spec: { priorityLevelConfiguration: { name: 'matrix-level' }, matchingPrecedence: 9999, rules: [{ subjects: [{ kind: 'User', user: { name: 'matrix-nobody' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/matrix'] }] }] } };
    case 'prioritylevelconfigurations':
      return { ...base, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } } };
    case 'selfsubjectreviews':
      return { apiVersion: base.apiVersion, kind: k.kind };
    case 'tokenreviews':
      return { apiVersion: base.apiVersion, kind: k.kind, spec: { token: 'not-a-token' } };
    case 'selfsubjectaccessreviews':
      return { apiVersion: base.apiVersion, kind: k.kind, spec: { resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: 'a' } } };
    case 'selfsubjectrulesreviews':
      return { apiVersion: base.apiVersion, kind: k.kind, spec: { namespace: 'a' } };
    case 'subjectaccessreviews':
      return { apiVersion: base.apiVersion, kind: k.kind, spec: { user: 'nobody', resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: 'a' } } };
    case 'localsubjectaccessreviews':
      return { apiVersion: base.apiVersion, kind: k.kind, metadata: { namespace: ns }, spec: { user: 'nobody', resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: ns } } };
    default:
      throw new Error(`the matrix has no object for the served kind ${k.resource} (${k.group}): add one`);
  }
}

// ---------------------------------------------------------------- seed: namespaces, shared objects, roles

/** Objects that exist, by `group|resource|namespace|name` (namespace '' for cluster-scoped kinds). */
const world = new Map<string, any>();
const keyOf = (k: ServedKind, ns: string, name: string) => `${k.group}|${k.resource}|${k.namespaced ? ns : ''}|${name}`;
const objectPath = (k: ServedKind, ns: string, name: string) => `${prefix(k, k.group)}${k.namespaced ? `/namespaces/${ns}` : ''}/${k.resource}/${name}`;
const collectionPath = (k: ServedKind, ns: string) => `${prefix(k, k.group)}${k.namespaced ? `/namespaces/${ns}` : ''}/${k.resource}`;
const kind = (resource: string) => kinds.find((k) => k.resource === resource)!;

const CANARY = { matrix: 'canary' };
async function seed(k: ServedKind, ns: string, name: string, labels: Record<string, string>): Promise<void> {
  const obj = await must('POST', collectionPath(k, ns), newObject(k, k.group, name, ns, labels));
  world.set(keyOf(k, ns, name), obj);
}

for (const ns of NAMESPACES) await seed(kind('namespaces'), '', ns, CANARY);
await must('POST', `/apis/${G}/v1/clusterroles`, newObject(kind('clusterroles'), G, 'matrix-empty', ''));
{
  const tasks: (() => Promise<void>)[] = [];
  for (const k of kinds) {
    if (isReview(k) || k.resource === 'namespaces') continue;
    if (k.namespaced) for (const ns of NAMESPACES) tasks.push(() => seed(k, ns, 'x', CANARY));
    else tasks.push(() => seed(k, '', canaryName(k), CANARY));
  }
  tasks.push(() => seed(kind('configmaps'), 'a', 'rn-cm', CANARY));
  await pool(tasks, 8);
  // the definition controller writes the shared CRD's status once: wait for it, so the object stays as it is from here
  const crd = `/apis/${kind('customresourcedefinitions').group}/v1/customresourcedefinitions/${CRD_NAME}`;
  const established = async () => !!(await must('GET', crd)).status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Established' && c.status === 'True');
  if (!(await waitFor(established, 30_000))) throw new Error(`setup: ${CRD_NAME} was not Established`);
}

// the roles and bindings: created as written (upstream spellings where the test says so) and handed to the model
const model = new RbacModel(canonical);
for (const r of ROLES) {
  const g = r.upstreamSpelling ? UPSTREAM_RBAC : G;
  if (r.name === 'matrix-empty') {
    model.clusterRoles.set(r.name, []);
    continue;
  }
  const obj = { apiVersion: `${g}/v1`, kind: r.namespace ? 'Role' : 'ClusterRole', metadata: { name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) }, rules: r.rules };
  await must('POST', r.namespace ? `/apis/${g}/v1/namespaces/${r.namespace}/roles` : `/apis/${g}/v1/clusterroles`, obj);
  if (r.namespace) model.role(r.namespace, r.name, r.rules);
  else model.clusterRoles.set(r.name, r.rules);
}
for (const b of BINDINGS) {
  const g = b.upstreamSpelling ? UPSTREAM_RBAC : G;
  const obj = {
    apiVersion: `${g}/v1`,
    kind: b.namespace ? 'RoleBinding' : 'ClusterRoleBinding',
    metadata: { name: b.name, ...(b.namespace ? { namespace: b.namespace } : {}) },
    roleRef: { apiGroup: g, ...b.roleRef },
    subjects: b.subjects.map((x) => ({ ...x, apiGroup: g })),
  };
  await must('POST', b.namespace ? `/apis/${g}/v1/namespaces/${b.namespace}/rolebindings` : `/apis/${g}/v1/clusterrolebindings`, obj);
  model.bindings.push({ namespace: b.namespace, roleRef: b.roleRef, subjects: b.subjects });
}
model.bindings.push(...DEFAULT_BINDINGS);
// the default roles' rules, read as data (after aggregation)
for (const name of DEFAULT_ROLES) model.clusterRoles.set(name, (await must('GET', `/apis/${G}/v1/clusterroles/${name}`)).rules ?? []);


// ---------------------------------------------------------------- the escalation of issue 26, on its own

t.test('a namespace admin in `a` cannot read, patch, update the status of or delete another namespace through /namespaces/a/namespaces/<name>', async (t) => {
  const nsadmin = s.as('nsadmin-a'); // HTTP/1.1, as kubectl and curl send
  const victim = await s.admin.get('/api/v1/namespaces/victim');
  const victimCm = await s.admin.get('/api/v1/namespaces/victim/configmaps/x');
  t.equal(victim.status, 200);
  t.equal(victimCm.status, 200);
  // the user is the admin of a (so a 404 below is the route's, not a refusal) and nothing more
  t.equal((await nsadmin.get('/api/v1/namespaces/a')).status, 200, 'GET its own namespace');
  t.equal((await nsadmin.patch('/api/v1/namespaces/a?dryRun=All', { metadata: { labels: { x: 'y' } } }, 'application/merge-patch+json')).status, 200, 'PATCH its own namespace');
  t.equal((await nsadmin.get('/api/v1/namespaces/victim')).status, 403, 'GET another namespace directly is refused');

  const around = '/api/v1/namespaces/a/namespaces';
  t.equal((await nsadmin.get(`${around}/victim`)).status, 404, 'GET');
  t.equal((await nsadmin.get(`${around}/victim/status`)).status, 404, 'GET status');
  t.equal((await nsadmin.get(around)).status, 404, 'LIST');
  const watchStatus = async (path: string) => {
    const w = await nsadmin.stream(path); // a watch served by mistake stays open: only its status is read
    w.close();
    return w.status;
  };
  t.equal(await watchStatus(`${around}?watch=1`), 404, 'WATCH');
  t.equal((await nsadmin.get(`${around}?fieldSelector=metadata.name%3Dvictim`)).status, 404, 'LIST by name');
  t.equal(await watchStatus('/api/v1/watch/namespaces/a/namespaces/victim'), 404, 'legacy WATCH');
  t.equal((await nsadmin.patch(`${around}/victim`, { metadata: { labels: { owned: 'by-a' } } }, 'application/merge-patch+json')).status, 404, 'PATCH');
  t.equal((await nsadmin.put(`${around}/victim`, { ...victim.json, metadata: { ...victim.json.metadata, labels: { owned: 'by-a' } } })).status, 404, 'PUT');
  t.equal((await nsadmin.put(`${around}/victim/status`, { ...victim.json, status: { phase: 'Terminating' } })).status, 404, 'PUT status');
  t.equal((await nsadmin.put(`${around}/victim/finalize`, { ...victim.json, spec: { finalizers: [] } })).status, 404, 'PUT finalize');
  t.equal((await nsadmin.delete(`${around}/victim`)).status, 404, 'DELETE');
  t.equal((await nsadmin.post(around, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'made-through-a' } })).status, 404, 'CREATE');

  const after = await s.admin.get('/api/v1/namespaces/victim');
  t.equal(after.status, 200, 'victim still exists');
  t.equal(after.json.metadata.resourceVersion, victim.json.metadata.resourceVersion, 'victim unchanged');
  t.notOk(after.json.metadata.deletionTimestamp, 'victim is not being deleted');
  const cm = await s.admin.get('/api/v1/namespaces/victim/configmaps/x');
  t.equal(cm.status, 200, "victim's objects still exist");
  t.equal(cm.json.metadata.resourceVersion, victimCm.json.metadata.resourceVersion);
  t.equal((await s.admin.get('/api/v1/namespaces/made-through-a')).status, 404, 'no namespace was created');
});

// ---------------------------------------------------------------- cases

type Phase = 'read' | 'write-ok' | 'write-fail';
interface Case {
  cls: string;
  user: string;
  method: string;
  /** Raw path and query, sent byte for byte. */
  path: string;
  body?: () => unknown;
  contentType?: string;
  expect: number;
  phase: Phase;
  /** For a create expected to fail: its name, which must exist nowhere afterwards. */
  refusedCreate?: { k: ServedKind; name: string };
  /** A dedicated object to make before the write phase. */
  prepare?: () => Promise<void>;
  /** Why that object could not be made (the request is then not sent). */
  unprepared?: string;
}

const splitPath = (p: string): [string, string] => {
  const q = p.indexOf('?');
  return q < 0 ? [p, ''] : [p.slice(0, q), p.slice(q + 1)];
};
const attrsOf = (method: string, p: string): Attrs | undefined => upstreamAttributes(method, ...splitPath(p));

/** The object a request's attributes name, if it exists. */
function targetOf(a: Attrs): any {
  const k = kindOf(a);
  if (!k) return undefined;
  return world.get(keyOf(k, a.namespace, a.name));
}

/** The expected status of `user`'s request (`assumeExists`: the target will be made before it is sent). */
function expected(user: string, method: string, p: string, assumeExists = false): number {
  const a = attrsOf(method, p);
  if (!a) return 400;
  if (!model.allows(modelUsers.get(user)!, a)) return 403;
  return routeAnswer(types, a, method, assumeExists || targetOf(a) !== undefined);
}

const ok = (code: number) => code >= 200 && code < 300;
let serial = 0;
const next = () => `t${++serial}`;
const cases: Case[] = [];

/** A read (GET, or a POST of a review, which stores nothing). */
function read(cls: string, user: string, p: string, method = 'GET', body?: () => unknown): void {
  cases.push({ cls, user, method, path: p, expect: expected(user, method, p), phase: 'read', ...(body ? { body } : {}) });
}

const CONDITION = { type: 'MatrixWrite', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'Matrix', message: 'written' };

/**
 * The body of a PUT to `p`: the object it names in its current form, changed where the write would
 * change it (a label; a status condition for `/status`; a finalizer for `/finalize`), so that a write
 * let through by mistake shows in the object's resourceVersion.
 */
function updateBody(p: string, spelling: string): () => unknown {
  return () => {
    const a = attrsOf('PUT', p)!;
    const k = kindOf(a);
    const cur = targetOf(a);
    if (!k) return { metadata: { name: a.name } };
    const obj = cur ? structuredClone(cur) : newObject(k, spelling, a.name, a.namespace);
    obj.apiVersion = apiVersionOf(k, k.spellings.includes(spelling) ? spelling : k.group);
    obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'matrix-write': 'yes' };
    if (a.subresource === 'status') obj.status = { ...(obj.status ?? {}), conditions: [...(obj.status?.conditions ?? []), CONDITION] };
    if (a.subresource === 'finalize') obj.spec = { ...(obj.spec ?? {}), finalizers: ['matrix.example.com/write'] };
    return obj;
  };
}
/** The merge patch of a PATCH to `p` (a status condition for `/status`, else a label). */
const patchBody = (p: string) => () => (attrsOf('PATCH', p)?.subresource === 'status' ? { status: { conditions: [CONDITION] } } : { metadata: { labels: { 'matrix-write': 'yes' } } });
const bodyOf = (method: string, p: string, spelling: string) => (method === 'PUT' ? updateBody(p, spelling) : method === 'PATCH' ? patchBody(p) : undefined);

/**
 * A write of one object, `path(name)` with the shared object's name `shared`: when allowed, on an
 * object made for it if the grant would allow that one too, else as a dry run on the shared object;
 * when refused (403, or the 404 of a path no route has), on the shared object, for real.
 */
function objectWrite(cls: string, user: string, method: 'PUT' | 'PATCH' | 'DELETE', path: (name: string) => string, shared: string, spelling: string): void {
  const p = path(shared);
  const exp = expected(user, method, p);
  const bodyFor = (q: string) => bodyOf(method, q, spelling);
  const ct = method === 'PATCH' ? 'application/merge-patch+json' : undefined;
  if (!ok(exp)) {
    cases.push({ cls, user, method, path: p, expect: exp, phase: 'write-fail', ...(bodyFor(p) ? { body: bodyFor(p)! } : {}), ...(ct ? { contentType: ct } : {}) });
    return;
  }
  const a = attrsOf(method, p)!;
  const k = kindOf(a)!;
  const fresh = freshName(k, next());
  const q = path(fresh);
  if (expected(user, method, q, true) === exp) {
    const fa = attrsOf(method, q)!;
    const ns = k.namespaced ? fa.namespace : '';
    cases.push({
      cls,
      user,
      method,
      path: q,
      expect: exp,
      phase: 'write-ok',
      prepare: () => seed(k, ns, fa.name, { matrix: fa.name }),
      ...(bodyFor(q) ? { body: bodyFor(q)! } : {}),
      ...(ct ? { contentType: ct } : {}),
    });
  } else {
    const dry = `${p}${p.includes('?') ? '&' : '?'}dryRun=All`;
    cases.push({ cls, user, method, path: dry, expect: expected(user, method, dry), phase: 'write-ok', ...(bodyFor(p) ? { body: bodyFor(p)! } : {}), ...(ct ? { contentType: ct } : {}) });
  }
}

/** A write with a fixed path (no object of its own): a dry run when it is expected to succeed. */
function fixedWrite(cls: string, user: string, method: string, p: string, spelling: string): void {
  let exp = expected(user, method, p);
  let q = p;
  if (ok(exp)) {
    q = `${p}${p.includes('?') ? '&' : '?'}dryRun=All`;
    exp = expected(user, method, q);
  }
  const body = bodyOf(method, p, spelling);
  cases.push({ cls, user, method, path: q, expect: exp, phase: ok(exp) ? 'write-ok' : 'write-fail', ...(body ? { body } : {}), ...(method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {}) });
}

/** A create into `coll`: a fresh name; when refused, that name must exist nowhere afterwards. */
function create(cls: string, user: string, k: ServedKind, spelling: string, coll: string, ns: string): void {
  const name = freshName(k, next());
  const exp = expected(user, 'POST', coll);
  const body = () => newObject(k, spelling, name, ns);
  cases.push({ cls, user, method: 'POST', path: coll, body, expect: exp, phase: ok(exp) ? 'write-ok' : 'write-fail', ...(ok(exp) ? {} : { refusedCreate: { k, name } }) });
}

/** A deletecollection: when allowed, of one object labelled for it; when refused, of the shared objects. */
function deleteCollection(cls: string, user: string, k: ServedKind, coll: string, ns: string): void {
  const refused = `${coll}?labelSelector=matrix%3Dcanary`;
  const exp = expected(user, 'DELETE', refused);
  if (!ok(exp)) {
    cases.push({ cls, user, method: 'DELETE', path: refused, expect: exp, phase: 'write-fail' });
    return;
  }
  const name = freshName(k, next());
  const label = name.split('.')[0]!;
  cases.push({ cls, user, method: 'DELETE', path: `${coll}?labelSelector=matrix%3D${label}`, expect: exp, phase: 'write-ok', prepare: () => seed(k, ns, name, { matrix: label }) });
}

/** A POST of the token subresource (a TokenRequest: nothing is stored, so no object of its own is needed). */
function token(cls: string, user: string, p: string): void {
  const exp = expected(user, 'POST', p);
  cases.push({ cls, user, method: 'POST', path: p, body: () => ({ apiVersion: 'authentication.svc.io/v1', kind: 'TokenRequest', spec: {} }), expect: exp, phase: ok(exp) ? 'write-ok' : 'write-fail' });
}

const WATCH_READINGS = ['watch=1', 'watch=f', 'watch=', 'watch=false', 'watch=0', 'watch=FALSE', 'watch=no'];

for (const { name: user } of USERS) {
  for (const k of kinds) {
    for (const sp of k.spellings) {
      const P = prefix(k, sp);
      if (isReview(k)) {
        const body = (ns: string) => () => newObject(k, sp, '', ns);
        const cls = 'reviews (create only, nothing stored)';
        if (k.namespaced) {
          for (const ns of ['a', 'victim']) read(cls, user, `${P}/namespaces/${ns}/${k.resource}`, 'POST', body(ns));
          read(cls, user, `${P}/${k.resource}`, 'POST', body(''));
        } else {
          read(cls, user, `${P}/${k.resource}`, 'POST', body(''));
          read('namespace around a cluster-scoped kind', user, `${P}/namespaces/a/${k.resource}`, 'POST', body('a'));
        }
        read(cls, user, `${P}/${k.resource}`);
        continue;
      }
      const cn = canaryName(k);
      if (k.namespaced) {
        for (const ns of NAMESPACES) {
          const coll = `${P}/namespaces/${ns}/${k.resource}`;
          const cls = 'namespaced kinds in a namespace';
          read(cls, user, coll);
          for (const w of WATCH_READINGS) read('the watch parameter (upstream codec: only 0 and false are false)', user, `${coll}?${w}`);
          read('field selector names', user, `${coll}?fieldSelector=metadata.name%3Dx`);
          read('field selector names', user, `${coll}?watch=1&fieldSelector=metadata.name%3Dx`);
          read('legacy /watch/ paths', user, `${P}/watch/namespaces/${ns}/${k.resource}`);
          read('legacy /watch/ paths', user, `${P}/watch/namespaces/${ns}/${k.resource}/x`);
          fixedWrite('legacy /watch/ paths', user, 'DELETE', `${P}/watch/namespaces/${ns}/${k.resource}/x`, sp);
          read(cls, user, `${coll}/x`);
          read(cls, user, `${coll}/nope`);
          read(cls, user, `${coll}/x?watch=1`);
          create(cls, user, k, sp, coll, ns);
          objectWrite(cls, user, 'PUT', (n) => `${coll}/${n}`, 'x', sp);
          objectWrite(cls, user, 'PATCH', (n) => `${coll}/${n}`, 'x', sp);
          objectWrite(cls, user, 'DELETE', (n) => `${coll}/${n}`, 'x', sp);
          deleteCollection(cls, user, k, coll, ns);
          fixedWrite(cls, user, 'PUT', coll, sp);
          for (const sub of k.subresources.keys()) {
            read('subresources', user, `${coll}/x/${sub}`);
            if (sub === 'token') token('subresources', user, `${coll}/x/token`);
          }
        }
        const cls = 'namespaced kinds across namespaces';
        read(cls, user, `${P}/${k.resource}`);
        read(cls, user, `${P}/${k.resource}?watch=1`);
        read(cls, user, `${P}/watch/${k.resource}`);
        read(cls, user, `${P}/${k.resource}/x`);
        create(cls, user, k, sp, `${P}/${k.resource}`, 'a');
        fixedWrite(cls, user, 'PUT', `${P}/${k.resource}/x`, sp);
        const refused = `${P}/${k.resource}?labelSelector=matrix%3Dcanary`;
        cases.push({ cls, user, method: 'DELETE', path: refused, expect: expected(user, 'DELETE', refused), phase: 'write-fail' });
        continue;
      }
      // cluster-scoped kinds
      const coll = `${P}/${k.resource}`;
      const isNs = k.resource === 'namespaces';
      const cls = isNs ? 'namespaces' : 'cluster-scoped kinds';
      read(cls, user, coll);
      for (const w of WATCH_READINGS) read('the watch parameter (upstream codec: only 0 and false are false)', user, `${coll}?${w}`);
      for (const n of isNs ? ['victim', 'a', 'b'] : [cn]) read('field selector names', user, `${coll}?fieldSelector=metadata.name%3D${n}`);
      read('legacy /watch/ paths', user, `${P}/watch/${k.resource}`);
      create(cls, user, k, sp, coll, '');
      if (k.verbs.has('deletecollection')) deleteCollection(cls, user, k, coll, '');
      else cases.push({ cls, user, method: 'DELETE', path: `${coll}?labelSelector=matrix%3Dcanary`, expect: expected(user, 'DELETE', `${coll}?labelSelector=matrix%3Dcanary`), phase: 'write-fail' });
      for (const n of isNs ? ['a', 'b', 'victim'] : [cn]) {
        read(cls, user, `${coll}/${n}`);
        read(cls, user, `${coll}/${n}?watch=1`);
        read('legacy /watch/ paths', user, `${P}/watch/${k.resource}/${n}`);
        objectWrite(cls, user, 'PUT', (m) => `${coll}/${m}`, n, sp);
        objectWrite(cls, user, 'PATCH', (m) => `${coll}/${m}`, n, sp);
        objectWrite(cls, user, 'DELETE', (m) => `${coll}/${m}`, n, sp);
        for (const [sub, verbs] of k.subresources) {
          read('subresources', user, `${coll}/${n}/${sub}`); // a GET of finalize: 405 where allowed
          if (verbs.has('update')) objectWrite('subresources', user, 'PUT', (m) => `${coll}/${m}/${sub}`, n, sp);
          if (verbs.has('patch')) objectWrite('subresources', user, 'PATCH', (m) => `${coll}/${m}/${sub}`, n, sp);
        }
      }
      read(cls, user, `${coll}/nope`);
      // the escalation's class: the same kind under a namespace
      const around = isNs ? 'namespace around namespaces (issue 26)' : 'namespace around a cluster-scoped kind';
      for (const ns of NAMESPACES) {
        const nc = `${P}/namespaces/${ns}/${k.resource}`;
        read(around, user, nc);
        for (const w of ['watch=1', 'watch=f', 'watch=']) read(around, user, `${nc}?${w}`);
        read(around, user, `${nc}?fieldSelector=metadata.name%3D${isNs ? 'victim' : cn}`);
        read(around, user, `${P}/watch/namespaces/${ns}/${k.resource}`);
        create(around, user, k, sp, nc, ns);
        const refused = `${nc}?labelSelector=matrix%3Dcanary`;
        cases.push({ cls: around, user, method: 'DELETE', path: refused, expect: expected(user, 'DELETE', refused), phase: 'write-fail' });
        for (const n of isNs ? ['victim', 'a', 'b'] : [cn]) {
          read(around, user, `${nc}/${n}`);
          read(around, user, `${P}/watch/namespaces/${ns}/${k.resource}/${n}`);
          objectWrite(around, user, 'PUT', (m) => `${nc}/${m}`, n, sp);
          objectWrite(around, user, 'PATCH', (m) => `${nc}/${m}`, n, sp);
          objectWrite(around, user, 'DELETE', (m) => `${nc}/${m}`, n, sp);
          for (const [sub, verbs] of k.subresources) {
            read(around, user, `${nc}/${n}/${sub}`);
            if (verbs.has('update')) objectWrite(around, user, 'PUT', (m) => `${nc}/${m}/${sub}`, n, sp);
            if (verbs.has('patch')) objectWrite(around, user, 'PATCH', (m) => `${nc}/${m}/${sub}`, n, sp);
          }
        }
      }
    }
  }

  // field selectors naming the one configmap a resourceNames rule grants
  {
    const cls = 'field selector names';
    const coll = '/api/v1/namespaces/a/configmaps';
    for (const fs of ['metadata.name%3Drn-cm', 'metadata.name%3D%3Drn-cm', 'metadata.name!%3Drn-cm', 'metadata.name%3Drn-cm,metadata.namespace%3Da', 'metadata.namespace%3Da,metadata.name%3Drn-cm', 'metadata.name%3Dx']) {
      read(cls, user, `${coll}?fieldSelector=${fs}`);
      read(cls, user, `${coll}?watch=1&fieldSelector=${fs}`);
    }
    read(cls, user, `/api/v1/watch/namespaces/a/configmaps?fieldSelector=metadata.name%3Drn-cm`);
    read(cls, user, `${coll}/rn-cm`);
    const sp = '';
    objectWrite(cls, user, 'PUT', (n) => `${coll}/${n}`, 'rn-cm', sp);
    objectWrite(cls, user, 'PATCH', (n) => `${coll}/${n}`, 'rn-cm', sp);
    objectWrite(cls, user, 'DELETE', (n) => `${coll}/${n}`, 'rn-cm', sp);
    read(cls, user, '/api/v1/namespaces?fieldSelector=metadata.name%3Dvictim');
    read(cls, user, '/api/v1/namespaces/a/namespaces?fieldSelector=metadata.name%3Dvictim');
  }

  // percent-encoded segments: one path for authorization and serving alike
  {
    const cls = 'percent-encoded segments';
    for (const p of [
      '/api/v1/namespaces/%61/configmaps/x',
      '/api/v1/namespaces/%61/configmaps',
      '/api/v1/namespaces/a/configmaps/%78',
      '/api/v1/namespaces/%61/namespaces/victim',
      '/api/v1/namespaces/a/%6eamespaces/victim',
      '/api/v1/%6eamespaces/a/namespaces/victim',
      '/api/v1/namespaces/a%2Fnamespaces%2Fvictim',
      '/api/v1/namespaces/a%2fnamespaces/victim/status',
      '/api/v1/namespaces%2Fvictim',
      '/api/v1/namespaces/%76ictim',
      '/api/v1/watch/namespaces/%61/namespaces/victim',
      '/api/v1/namespaces/%61/namespaces?watch=f',
      '/apis/storage.k8s.io/v1/namespaces/%61/csidrivers/x',
      '/apis/storage%2Ek8s%2Eio/v1/csidrivers/x',
      '/apis/storage.svc.io/v1/csidrivers/%78',
      '/api/v1/namespaces/%zz/configmaps',
      '/api/v1/namespaces/a/configmaps/x%',
    ]) read(cls, user, p);
    fixedWrite(cls, user, 'PUT', '/api/v1/namespaces/%61/configmaps/x', '');
    fixedWrite(cls, user, 'PATCH', '/api/v1/namespaces/%61/namespaces/victim', '');
    fixedWrite(cls, user, 'DELETE', '/api/v1/namespaces/a%2Fnamespaces%2Fvictim', '');
    fixedWrite(cls, user, 'PUT', '/api/v1/namespaces/%61/namespaces/victim/status', '');
    fixedWrite(cls, user, 'DELETE', '/api/v1/namespaces/%76ictim', '');
    fixedWrite(cls, user, 'DELETE', '/apis/storage.k8s.io/v1/namespaces/%61/csidrivers/x', 'storage.k8s.io');
  }

  // upper-case segments: another resource, group or namespace, never the lower-case one when that was refused
  {
    const cls = 'upper-case segments';
    for (const p of [
      '/api/v1/Namespaces/victim',
      '/api/v1/namespaces/a/Namespaces/victim',
      '/api/v1/NAMESPACES/a/configmaps/x',
      '/api/v1/namespaces/A/configmaps/x',
      '/api/v1/namespaces/B/configmaps/x',
      '/api/v1/namespaces/b/ConfigMaps/x',
      '/api/v1/namespaces/b/configmaps/X',
      '/api/v1/namespaces/VICTIM/configmaps',
      '/apis/STORAGE.k8s.io/v1/csidrivers/x',
      '/apis/Storage.svc.io/v1/namespaces/b/csidrivers/x',
      '/apis/storage.k8s.io/V1/csidrivers/x',
      '/apis/storage.svc.io/v1/CSIDrivers',
      '/api/V1/namespaces/victim',
      '/API/v1/namespaces/victim',
      '/api/v1/WATCH/namespaces/victim',
      '/api/v1/namespaces/b/../a/configmaps/x',
      '/api/v1/namespaces/b/configmaps/../../a/configmaps/x',
    ]) read(cls, user, p);
    fixedWrite(cls, user, 'DELETE', '/api/v1/Namespaces/victim', '');
    fixedWrite(cls, user, 'PATCH', '/api/v1/namespaces/B/configmaps/x', '');
    fixedWrite(cls, user, 'DELETE', '/api/v1/namespaces/b/ConfigMaps/x', '');
    fixedWrite(cls, user, 'PUT', '/apis/STORAGE.k8s.io/v1/namespaces/b/csidrivers/x', 'storage.k8s.io');
    fixedWrite(cls, user, 'DELETE', '/apis/storage.svc.io/v1/CSIDrivers/x', '');
  }
}

// ---------------------------------------------------------------- running and judging

interface Outcome {
  c: Case;
  status: number;
  problem?: string;
}

/** What is wrong with a success answer's body, if anything: kind, name, namespace, group spelling, list or watch. */
function bodyProblem(c: Case, r: { json: any; body: Buffer; cut: boolean }): string | undefined {
  const a = attrsOf(c.method, c.path);
  if (!a) return undefined;
  const k = kindOf(a);
  if (!k) return 'served a kind that is not served';
  const apiVersion = apiVersionOf(k, a.apiGroup);
  const j = r.json;
  const ns = k.namespaced ? a.namespace : undefined;
  const sameNs = (o: any) => (ns === undefined ? !o?.metadata?.namespace : o?.metadata?.namespace === ns);
  if (c.method === 'GET' && a.verb === 'watch') {
    if (r.body.length === 0) return undefined;
    if (!j || typeof j.type !== 'string' || !j.object) return `not a watch stream: ${r.body.toString().slice(0, 80)}`;
    if (j.type === 'ERROR') return `watch ERROR ${JSON.stringify(j.object).slice(0, 80)}`;
    if (j.object.apiVersion !== apiVersion) return `event object apiVersion ${j.object.apiVersion}`;
    if (!a.namespaceAround && !k.namespaced) return a.name && j.object.metadata?.name !== a.name ? `event for ${j.object.metadata?.name}` : undefined;
    if (a.namespaceAround && !sameNs(j.object)) return `event from namespace ${j.object.metadata?.namespace}`;
    if (a.name && j.object.metadata?.name !== a.name) return `event for ${j.object.metadata?.name}`;
    return undefined;
  }
  if (c.method === 'GET' && a.verb === 'list') {
    if (j?.kind !== `${k.kind}List`) return `not a ${k.kind}List: ${r.body.toString().slice(0, 80)}`;
    if (j.apiVersion !== apiVersion) return `apiVersion ${j.apiVersion}`;
    for (const it of j.items ?? []) {
      if (a.namespaceAround && !sameNs(it)) return `item of namespace ${it.metadata?.namespace}`;
      if (a.name && it.metadata?.name !== a.name) return `item ${it.metadata?.name}`;
    }
    return undefined;
  }
  if (c.method === 'GET') {
    if (j?.kind !== k.kind || j.apiVersion !== apiVersion) return `not a ${apiVersion} ${k.kind}: ${r.body.toString().slice(0, 80)}`;
    if (j.metadata?.name !== a.name || !sameNs(j)) return `served ${j.metadata?.namespace ?? ''}/${j.metadata?.name}`;
    return undefined;
  }
  if (c.method === 'POST' && c.expect === 201 && !a.subresource && !isReview(k)) {
    const sent = c.body?.() as any;
    if (j?.metadata?.name !== sent?.metadata?.name || !sameNs(j)) return `created ${j?.metadata?.namespace ?? ''}/${j?.metadata?.name}`;
  }
  return undefined;
}

async function send(c: Case): Promise<Outcome> {
  if (c.unprepared) return { c, status: 0, problem: `its object could not be made: ${c.unprepared}` };
  const client = h2.get(c.user)!;
  const body = c.body?.();
  const r = await client.request(c.method, c.path, { ...(body !== undefined ? { body, contentType: c.contentType } : {}), firstLine: c.method === 'GET' });
  const o: Outcome = { c, status: r.status };
  if (r.status === c.expect && ok(r.status)) o.problem = bodyProblem(c, r);
  return o;
}

// ---------------------------------------------------------------- gRPC: the same users, a smaller matrix

interface GrpcCase {
  user: string;
  call: 'Get' | 'List' | 'Watch' | 'Create' | 'Update' | 'Patch' | 'Delete' | 'DeleteCollection';
  ref: { group?: string; version: string; resource: string; namespace?: string; name?: string; subresource?: string };
  options?: Record<string, string>;
  /** HTTP status the same request over HTTPS must get (the model's), mapped to a gRPC code below. */
  expectHttp: number;
  cls: string;
  /** A Create's object name (one refused must exist nowhere afterwards). */
  createName?: string;
}
const GRPC_CODE: Readonly<Record<number, number>> = { 200: 0, 201: 0, 400: 3, 403: 7, 404: 5, 405: 12 };

/** The HTTPS request a gRPC call stands for (ResourceRef to path, the method's verb, a watch by name as a field selector). */
function httpOf(g: GrpcCase): { method: string; path: string } {
  const r = g.ref;
  let p = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  if (r.namespace) p += `/namespaces/${r.namespace}`;
  p += `/${r.resource}`;
  const q = new URLSearchParams(g.options ?? {});
  if (g.call === 'Watch') {
    if (r.name) q.set('fieldSelector', `metadata.name=${r.name}`);
    q.set('watch', 'true');
  } else {
    if (r.name) p += `/${r.name}`;
    if (r.subresource) p += `/${r.subresource}`;
  }
  const method = { Get: 'GET', List: 'GET', Watch: 'GET', Create: 'POST', Update: 'PUT', Patch: 'PATCH', Delete: 'DELETE', DeleteCollection: 'DELETE' }[g.call];
  const qs = q.toString();
  return { method, path: qs ? `${p}?${qs}` : p };
}

const grpcCases: GrpcCase[] = [];
for (const { name: user } of USERS) {
  const add = (cls: string, call: GrpcCase['call'], ref: GrpcCase['ref'], options?: Record<string, string>) => {
    const g: GrpcCase = { user, call, ref, cls, expectHttp: 0, ...(options ? { options } : {}) };
    if (call === 'Create') g.createName = freshName(kinds.find((k) => k.resource === ref.resource)!, next());
    const h = httpOf(g);
    g.expectHttp = expected(user, h.method, h.path);
    if (ok(g.expectHttp) && call !== 'Get' && call !== 'List' && call !== 'Watch') {
      g.options = { ...(g.options ?? {}), dryRun: 'All' };
      const h2p = httpOf(g);
      g.expectHttp = expected(user, h2p.method, h2p.path);
    }
    grpcCases.push(g);
  };
  const around = 'gRPC: namespace around a cluster-scoped kind';
  for (const ns of ['a', 'b', 'victim']) {
    for (const name of ['victim', 'a']) {
      add(around, 'Get', { version: 'v1', namespace: ns, resource: 'namespaces', name });
      add(around, 'Get', { version: 'v1', namespace: ns, resource: 'namespaces', name, subresource: 'status' });
      add(around, 'Watch', { version: 'v1', namespace: ns, resource: 'namespaces', name }, { timeoutSeconds: '2' });
      add(around, 'Patch', { version: 'v1', namespace: ns, resource: 'namespaces', name });
      add(around, 'Update', { version: 'v1', namespace: ns, resource: 'namespaces', name, subresource: 'status' });
      add(around, 'Delete', { version: 'v1', namespace: ns, resource: 'namespaces', name });
    }
    add(around, 'List', { version: 'v1', namespace: ns, resource: 'namespaces' });
    add(around, 'Watch', { version: 'v1', namespace: ns, resource: 'namespaces' }, { timeoutSeconds: '2' });
    add(around, 'Create', { version: 'v1', namespace: ns, resource: 'namespaces' });
    for (const group of ['storage.svc.io', 'storage.k8s.io']) {
      add(around, 'Get', { group, version: 'v1', namespace: ns, resource: 'csidrivers', name: 'x' });
      add(around, 'List', { group, version: 'v1', namespace: ns, resource: 'csidrivers' });
      add(around, 'Delete', { group, version: 'v1', namespace: ns, resource: 'csidrivers', name: 'x' });
    }
    add(around, 'Get', { group: 'apiextensions.k8s.io', version: 'v1', namespace: ns, resource: 'customresourcedefinitions', name: CRD_NAME });
  }
  const plain = 'gRPC: ordinary requests';
  for (const name of ['victim', 'a']) add(plain, 'Get', { version: 'v1', resource: 'namespaces', name });
  add(plain, 'List', { version: 'v1', resource: 'namespaces' });
  for (const ns of NAMESPACES) {
    add(plain, 'Get', { version: 'v1', namespace: ns, resource: 'configmaps', name: 'x' });
    add(plain, 'List', { version: 'v1', namespace: ns, resource: 'configmaps' });
    add(plain, 'Watch', { version: 'v1', namespace: ns, resource: 'configmaps' }, { timeoutSeconds: '2' });
    add(plain, 'Create', { version: 'v1', namespace: ns, resource: 'configmaps' });
  }
  add(plain, 'Get', { version: 'v1', namespace: 'a', resource: 'configmaps', name: 'rn-cm' });
  add(plain, 'Watch', { version: 'v1', namespace: 'a', resource: 'configmaps', name: 'rn-cm' }, { timeoutSeconds: '2' });
  add(plain, 'Get', { version: 'v1', resource: 'configmaps', name: 'x' });
  for (const group of ['coordination.svc.io', 'coordination.k8s.io']) add(plain, 'Get', { group, version: 'v1', namespace: 'a', resource: 'leases', name: 'x' });
  for (const group of ['storage.svc.io', 'storage.k8s.io']) add(plain, 'Get', { group, version: 'v1', resource: 'csidrivers', name: 'x' });
}

// ---------------------------------------------------------------- running

t.test(`the authorization matrix: ${USERS.length} users, every served kind in both group spellings, every verb, over HTTPS and gRPC`, async (t) => {
  const grpcClients = new Map<string, ResourceClient>(USERS.map((x) => [x.name, new ResourceClient({ server: `127.0.0.1:${grpcPort}`, ca: s.ca, token: `token-${x.name}` })]));
  t.teardown(() => {
    for (const c of grpcClients.values()) c.close();
  });

  /** A call's gRPC code; for a Get that succeeded, whether it served the object the ref named. */
  async function sendGrpc(g: GrpcCase): Promise<{ g: GrpcCase; code: number; problem?: string }> {
    const c = grpcClients.get(g.user)!;
    const o = { options: g.options ?? {} };
    try {
      switch (g.call) {
        case 'Get': {
          const got = (await c.get(g.ref, o)).object as any;
          const k = kinds.find((x) => x.resource === g.ref.resource);
          const ns = k?.namespaced ? g.ref.namespace : undefined;
          if (got?.metadata?.name !== g.ref.name || (got?.metadata?.namespace ?? undefined) !== ns) return { g, code: 0, problem: `served ${got?.metadata?.namespace ?? ''}/${got?.metadata?.name}` };
          break;
        }
        case 'List':
          await c.list(g.ref, o);
          break;
        case 'Watch': {
          const ac = new AbortController();
          for await (const ev of c.watch(g.ref, { ...o, signal: ac.signal })) {
            void ev;
            ac.abort();
            break;
          }
          break;
        }
        case 'Create':
          await c.create(g.ref, newObject(kinds.find((k) => k.resource === g.ref.resource)!, g.ref.group ?? '', g.createName!, g.ref.namespace ?? ''), o);
          break;
        case 'Update': {
          const h = httpOf(g);
          await c.update(g.ref, JSON.stringify(updateBody(h.path.split('?')[0]!, g.ref.group ?? '')()), o);
          break;
        }
        case 'Patch':
          await c.patch(g.ref, JSON.stringify(patchBody(httpOf(g).path.split('?')[0]!)()), 'application/merge-patch+json', o);
          break;
        case 'Delete':
          await c.delete(g.ref, o);
          break;
        case 'DeleteCollection':
          await c.deleteCollection(g.ref, o);
          break;
      }
      return { g, code: 0 };
    } catch (e) {
      if (e instanceof GrpcStatusError) return { g, code: e.code };
      throw e;
    }
  }

  const isGrpcRead = (g: GrpcCase) => g.call === 'Get' || g.call === 'List' || g.call === 'Watch';
  const grpcOutcomes: Awaited<ReturnType<typeof sendGrpc>>[] = [];
  const outcomes: Outcome[] = [];
  const started = Date.now();

  // 1. reads (and the reviews, which store nothing), over HTTPS then gRPC
  outcomes.push(...(await pool(cases.filter((c) => c.phase === 'read').map((c) => () => send(c)), CONCURRENCY)));
  grpcOutcomes.push(...(await pool(grpcCases.filter(isGrpcRead).map((g) => () => sendGrpc(g)), CONCURRENCY)));

  // the shared objects as they are before any write (update bodies carry their current resourceVersion)
  const shared = [...world.keys()];
  const stateOf = async (key: string): Promise<{ state: string; obj?: any }> => {
    const [g, res, ns, name] = key.split('|') as [string, string, string, string];
    const r = await admin.request('GET', objectPath(kinds.find((x) => x.group === g && x.resource === res)!, ns, name));
    if (r.status !== 200) return { state: `HTTP ${r.status}` };
    return { state: `rv ${r.json.metadata.resourceVersion}${r.json.metadata.deletionTimestamp ? ' deleting' : ''}`, obj: r.json };
  };
  const before = new Map<string, string>();
  await pool(
    shared.map((key) => async () => {
      const { state, obj } = await stateOf(key);
      if (obj) world.set(key, obj);
      before.set(key, state);
    }),
    8,
  );

  // 2. the writes expected to succeed: on objects made for them, or dry runs
  const writesOk = cases.filter((c) => c.phase === 'write-ok');
  await pool(
    writesOk.filter((c) => c.prepare).map((c) => () => c.prepare!().catch((e: Error) => void (c.unprepared = e.message.slice(0, 100)))),
    8,
  );
  outcomes.push(...(await pool(writesOk.map((c) => () => send(c)), CONCURRENCY)));
  grpcOutcomes.push(...(await pool(grpcCases.filter((g) => !isGrpcRead(g) && ok(g.expectHttp)).map((g) => () => sendGrpc(g)), CONCURRENCY)));

  // 3. the writes expected to be refused (403) or to find no route (404, 405), on the shared objects, for real
  outcomes.push(...(await pool(cases.filter((c) => c.phase === 'write-fail').map((c) => () => send(c)), CONCURRENCY)));
  grpcOutcomes.push(...(await pool(grpcCases.filter((g) => !isGrpcRead(g) && !ok(g.expectHttp)).map((g) => () => sendGrpc(g)), CONCURRENCY)));
  const seconds = (Date.now() - started) / 1000;

  // ---------------------------------------------------------------- what the refused writes left

  interface Damage {
    what: string;
    before: string;
    after: string;
  }
  const damage: Damage[] = [];
  await pool(
    shared.map((key) => async () => {
      const { state } = await stateOf(key);
      const [, res, ns, name] = key.split('|') as [string, string, string, string];
      if (state !== before.get(key)) damage.push({ what: `${res} ${ns ? `${ns}/` : ''}${name}`, before: before.get(key)!, after: state });
    }),
    8,
  );
  // the creates refused (or routed nowhere), over HTTPS and gRPC: their names must exist nowhere
  const refused = [
    ...cases.filter((c) => c.refusedCreate).map((c) => ({ ...c.refusedCreate!, by: `${c.user}: POST ${c.path}` })),
    ...grpcCases.filter((g) => g.call === 'Create' && !ok(g.expectHttp)).map((g) => ({ k: kinds.find((k) => k.resource === g.ref.resource)!, name: g.createName!, by: `${g.user}: gRPC Create ${JSON.stringify(g.ref)}` })),
  ];
  {
    const names = new Map<string, string>();
    for (const k of new Set(refused.map((r) => r.k))) {
      const list = await must('GET', `${prefix(k, k.group)}/${k.resource}`);
      for (const it of list.items ?? []) names.set(`${k.resource}|${it.metadata.name}`, it.metadata.namespace ?? '');
    }
    for (const r of refused) {
      const key = `${r.k.resource}|${r.name}`;
      if (names.has(key)) damage.push({ what: `${r.k.resource} ${names.get(key) ? `${names.get(key)}/` : ''}${r.name} created by ${r.by}`, before: 'absent', after: 'exists' });
    }
  }

  // ---------------------------------------------------------------- the verdicts

  const classes = [...new Set(cases.map((c) => c.cls))];
  const summary: string[] = [];

  t.test(`the matrix covers ${USERS.length} users, ${kinds.length} kinds in both group spellings, and every class with allowed and refused requests`, async (t) => {
    t.equal(USERS.length, 13);
    t.ok(cases.length > 10_000, `${cases.length} HTTPS requests`);
    for (const cls of classes) {
      const of = cases.filter((c) => c.cls === cls);
      const allowed = of.filter((c) => c.expect !== 403 && c.expect !== 400).length;
      const refused = of.filter((c) => c.expect === 403).length;
      const codes = [...new Set(of.map((c) => c.expect))].sort().map((code) => `${of.filter((c) => c.expect === code).length}x${code}`);
      summary.push(`${cls}: ${of.length} requests (${refused} refused by RBAC, ${allowed} allowed), expected ${codes.join(' ')}`);
      t.ok(allowed > 0 && refused > 0, `${cls}: both allowed and refused requests`);
    }
    for (const name of ['nsadmin-a', 'view-a', 'rn-user', 'cluster-view', 'sub-only', 'watcher', 'ns-reader', 'wild-b']) {
      t.ok(
        cases.some((c) => c.user === name && c.cls === 'namespace around namespaces (issue 26)' && c.expect === 404),
        `${name} is allowed some namespace-around-namespaces request (so the 404 of its route is what is checked)`,
      );
    }
    t.comment(USERS.map((x) => `${x.name}: ${x.about}`).join('\n'));
    t.comment(summary.join('\n'));
    t.comment(`${outcomes.length} HTTPS requests and ${grpcOutcomes.length} gRPC calls in ${seconds.toFixed(1)} s`);
  });

  const describe = (code: number) => (code === 0 ? 'no answer' : String(code));
  /** The mismatches as one table, attached to the failing assertion (reporters print it with the failure). */
  const report = (header: string[], rows: string[][]) => ({ mismatches: table(header, rows.slice(0, ROWS)) + (rows.length > ROWS ? `\n... and ${rows.length - ROWS} more` : '') });
  for (const cls of classes) {
    const rule =
      cls === 'namespace around namespaces (issue 26)'
        ? '/namespaces/<ns>/namespaces[/<name>[/status|/finalize]] is 404 when allowed in <ns>, 403 otherwise: never served as the cluster-scoped namespace'
        : cls === 'namespace around a cluster-scoped kind'
          ? 'a cluster-scoped kind under /namespaces/<ns>/ is 404 when allowed, 403 otherwise'
          : 'every answer is 403 where RBAC refuses, else the route answer upstream gives, with the object the path named';
    t.test(`${cls}: ${rule}`, async (t) => {
      const of = outcomes.filter((o) => o.c.cls === cls);
      const bad = of.filter((o) => o.status !== o.c.expect || o.problem);
      const rows = bad.map((o) => [o.c.user, o.c.method, o.c.path, describe(o.c.expect), `${describe(o.status)}${o.problem ? ` (${o.problem})` : ''}`]);
      t.equal(bad.length, 0, `${of.length} requests, ${bad.length} answered otherwise than upstream would`, bad.length ? report(['user', 'method', 'path', 'expected', 'actual'], rows) : {});
    });
  }

  t.test('gRPC: a ResourceRef with a namespace around namespaces (or another cluster-scoped kind) is NOT_FOUND where allowed, PERMISSION_DENIED otherwise; ordinary refs as over HTTPS', async (t) => {
    const bad = grpcOutcomes.filter((o) => o.code !== GRPC_CODE[o.g.expectHttp] || o.problem);
    const rows = bad.map((o) => [o.g.user, o.g.call, JSON.stringify({ ...o.g.ref, ...(o.g.options ? { options: o.g.options } : {}) }), `${GRPC_CODE[o.g.expectHttp]} (HTTP ${o.g.expectHttp})`, `${o.code}${o.problem ? ` (${o.problem})` : ''}`]);
    t.ok(grpcOutcomes.some((o) => o.g.expectHttp === 404) && grpcOutcomes.some((o) => o.g.expectHttp === 403) && grpcOutcomes.some((o) => ok(o.g.expectHttp)), 'the gRPC matrix has allowed, refused and not-found cases');
    t.equal(bad.length, 0, `${grpcOutcomes.length} calls, ${bad.length} answered otherwise than upstream's HTTPS answer maps to`, bad.length ? report(['user', 'call', 'ref', 'expected', 'actual'], rows) : {});
  });

  t.test('refused writes changed nothing: every shared object keeps its resourceVersion, no refused create made its object', async (t) => {
    const namespaced = kinds.filter((k) => k.namespaced && !isReview(k)).length;
    const clusterScoped = kinds.filter((k) => !k.namespaced && !isReview(k) && k.resource !== 'namespaces').length;
    t.equal(shared.length, NAMESPACES.length * (1 + namespaced) + clusterScoped + 1, `${shared.length} shared objects compared: the namespaces, one of each kind in each and cluster-wide, rn-cm`);
    t.ok(refused.length > 500, `${refused.length} refused creates looked for`);
    const rows = damage.map((d) => [d.what, d.before, d.after]);
    t.equal(damage.length, 0, `${damage.length} changed`, damage.length ? report(['object', 'before', 'after'], rows) : {});
  });
});
