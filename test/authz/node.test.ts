import t from 'tap';
import { type Attributes, selectorsFromQuery } from '../../core/authz/authorizer.js';
import { nodeAuthorizer, nodeRestrictionOnCreate } from '../../core/authz/node.js';

const NODE = { username: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] };

interface Req {
  verb: string;
  group?: string;
  resource?: string;
  sub?: string;
  ns?: string;
  name?: string;
  fieldSelector?: string;
  path?: string;
  user?: Attributes['user'];
}

const attrs = (r: Req): Attributes => {
  const a: Attributes = {
    user: r.user ?? NODE,
    verb: r.verb,
    isResourceRequest: r.path === undefined,
    path: r.path ?? '',
    namespace: r.ns ?? '',
    apiGroup: r.group ?? '',
    apiVersion: 'v1',
    resource: r.resource ?? '',
    subresource: r.sub ?? '',
    name: r.name ?? '',
  };
  const sel = selectorsFromQuery(r.fieldSelector ?? null, null);
  if (sel) a.selectors = sel;
  return a;
};

const COORD = 'coordination.svc.io';
const STORAGE = 'storage.svc.io';
const LEASE_NS = 'svc-node-lease';

// [rule, request, decision, reason]
const rows: [string, Req, 'allow' | 'no-opinion', string?][] = [
  // identity
  ['a user not in system:nodes is not a node', { verb: 'get', resource: 'secrets', ns: 'a', name: 's', user: { username: 'system:node:n1', groups: [] } }, 'no-opinion', ''],
  ['a system:nodes member without the system:node: prefix is not a node', { verb: 'create', group: COORD, resource: 'leases', ns: LEASE_NS, user: { username: 'n1', groups: ['system:nodes'] } }, 'no-opinion', ''],
  ['a node with an empty name is refused', { verb: 'get', resource: 'secrets', user: { username: 'system:node:', groups: ['system:nodes'] } }, 'no-opinion', 'unknown node for user "system:node:"'],
  // its own Lease in svc-node-lease
  ['a node may get its own lease', { verb: 'get', group: COORD, resource: 'leases', ns: LEASE_NS, name: 'n1' }, 'allow'],
  ['a node may update its own lease', { verb: 'update', group: COORD, resource: 'leases', ns: LEASE_NS, name: 'n1' }, 'allow'],
  ['a node may patch its own lease', { verb: 'patch', group: COORD, resource: 'leases', ns: LEASE_NS, name: 'n1' }, 'allow'],
  ['a node may delete its own lease', { verb: 'delete', group: COORD, resource: 'leases', ns: LEASE_NS, name: 'n1' }, 'allow'],
  ['a node may create a lease (admission checks the name)', { verb: 'create', group: COORD, resource: 'leases', ns: LEASE_NS }, 'allow'],
  ["a node may not touch another node's lease", { verb: 'update', group: COORD, resource: 'leases', ns: LEASE_NS, name: 'n2' }, 'no-opinion', 'can only access node lease with the same name as the requesting node'],
  ['a node may not list leases', { verb: 'list', group: COORD, resource: 'leases', ns: LEASE_NS }, 'no-opinion', 'can only get, create, update, patch, or delete a node lease'],
  ['a node may not watch its lease', { verb: 'watch', group: COORD, resource: 'leases', ns: LEASE_NS, name: 'n1' }, 'no-opinion', 'can only get, create, update, patch, or delete a node lease'],
  ['a node lease lives in svc-node-lease only', { verb: 'get', group: COORD, resource: 'leases', ns: 'default', name: 'n1' }, 'no-opinion', 'can only access leases in the "svc-node-lease" system namespace'],
  // secrets and configmaps: only through pods bound to the node, and there are none
  ['a node may not get a secret no pod of it uses', { verb: 'get', resource: 'secrets', ns: 'a', name: 's' }, 'no-opinion', "no relationship found between node 'n1' and this object"],
  ['a node may not get a configmap no pod of it uses', { verb: 'get', resource: 'configmaps', ns: 'a', name: 'c' }, 'no-opinion', "no relationship found between node 'n1' and this object"],
  ['a node may not list secrets', { verb: 'list', resource: 'secrets', ns: 'a' }, 'no-opinion', 'No Object name found'],
  ['a node may not write configmaps', { verb: 'update', resource: 'configmaps', ns: 'a', name: 'c' }, 'no-opinion', 'can only read resources of this type'],
  ['a node may not read cluster-wide secrets', { verb: 'list', resource: 'secrets' }, 'no-opinion', 'can only read namespaced object of this type'],
  ['a node may not read a subresource of a secret', { verb: 'get', resource: 'secrets', sub: 'x', ns: 'a', name: 's' }, 'no-opinion', 'cannot read subresource'],
  // serviceaccounts: only tokens for pods bound to the node
  ['a node may not get a service account', { verb: 'get', resource: 'serviceaccounts', ns: 'a', name: 'default' }, 'no-opinion', 'can only create tokens for individual service accounts'],
  ['a node may not create a token of a service account no pod of it runs as', { verb: 'create', resource: 'serviceaccounts', sub: 'token', ns: 'a', name: 'default' }, 'no-opinion', "no relationship found between node 'n1' and this object"],
  ['a node may create only the token subresource', { verb: 'create', resource: 'serviceaccounts', ns: 'a', name: 'default' }, 'no-opinion', 'can only create token subresource of serviceaccount'],
  // static node rules
  ['a node may create events', { verb: 'create', resource: 'events', ns: 'default' }, 'allow'],
  ['a node may patch events', { verb: 'patch', resource: 'events', ns: 'default', name: 'e' }, 'allow'],
  ['a node may not delete events', { verb: 'delete', resource: 'events', ns: 'default', name: 'e' }, 'no-opinion', ''],
  ['a node may read CSI drivers', { verb: 'list', group: STORAGE, resource: 'csidrivers' }, 'allow'],
  ['a node may not create CSI drivers', { verb: 'create', group: STORAGE, resource: 'csidrivers' }, 'no-opinion', ''],
  ['a node may ask SubjectAccessReviews', { verb: 'create', group: 'authorization.svc.io', resource: 'subjectaccessreviews' }, 'allow'],
  ['a node may ask TokenReviews', { verb: 'create', group: 'authentication.svc.io', resource: 'tokenreviews' }, 'allow'],
  ['a node may not list namespaces', { verb: 'list', resource: 'namespaces' }, 'no-opinion', ''],
  ['a node has no non-resource rules', { verb: 'get', path: '/version' }, 'no-opinion', ''],
  // its own CSINode and Node object
  ['a node may update its own CSINode', { verb: 'update', group: STORAGE, resource: 'csinodes', name: 'n1' }, 'allow'],
  ["a node may not get another node's CSINode", { verb: 'get', group: STORAGE, resource: 'csinodes', name: 'n2' }, 'no-opinion', 'can only access CSINode with the same name as the requesting node'],
  ['a node may read its own Node', { verb: 'get', resource: 'nodes', name: 'n1' }, 'allow'],
  ['a node may not list all Nodes', { verb: 'list', resource: 'nodes' }, 'no-opinion', "node 'n1' cannot read all nodes, only its own Node object"],
  ['a node may patch Node status (admission restricts which)', { verb: 'patch', resource: 'nodes', sub: 'status', name: 'n1' }, 'allow'],
  // pods: by field selector on spec.nodeName
  ['a node may list the pods bound to it', { verb: 'list', resource: 'pods', fieldSelector: 'spec.nodeName=n1' }, 'allow'],
  ['a node may not list pods of another node', { verb: 'watch', resource: 'pods', fieldSelector: 'spec.nodeName=n2' }, 'no-opinion', 'can only list/watch pods with spec.nodeName field selector'],
  ['a node may not list pods without the selector', { verb: 'list', resource: 'pods' }, 'no-opinion', 'can only list/watch pods with spec.nodeName field selector'],
  ['a node may create mirror pods', { verb: 'create', resource: 'pods', ns: 'a' }, 'allow'],
  ['resource slices: list with its nodeName only', { verb: 'list', group: 'resource.svc.io', resource: 'resourceslices', fieldSelector: 'nodeName=n1' }, 'allow'],
  ['resource slices: list without it refused', { verb: 'list', group: 'resource.svc.io', resource: 'resourceslices' }, 'no-opinion', 'can only list/watch/deletecollection resourceslices with nodeName field selector'],
  ['persistent volume claims: only through pods', { verb: 'get', resource: 'persistentvolumeclaims', ns: 'a', name: 'p' }, 'no-opinion', "no relationship found between node 'n1' and this object"],
];

t.test("Node authorizer: upstream's node rules for the resources served here, pod relationships always absent", async (t) => {
  const z = nodeAuthorizer({ withSelectors: true });
  for (const [rule, req, decision, reason] of rows) {
    const d = await z.authorize(attrs(req));
    t.equal(d.decision, decision, rule);
    if (reason !== undefined) t.equal(d.reason, reason, `${rule}: reason`);
  }
});

t.test('Node authorizer without AuthorizeNodeWithSelectors: nodes and pods fall back to the static rules', async (t) => {
  const z = nodeAuthorizer({ withSelectors: false });
  t.equal((await z.authorize(attrs({ verb: 'list', resource: 'pods' }))).decision, 'allow');
  t.equal((await z.authorize(attrs({ verb: 'list', resource: 'nodes' }))).decision, 'allow');
  t.equal((await z.authorize(attrs({ verb: 'list', group: 'resource.svc.io', resource: 'resourceslices' }))).decision, 'allow');
});

t.test('Node authorizer rules: nodes cannot list theirs (incomplete), others have none', async (t) => {
  const z = nodeAuthorizer({ withSelectors: true });
  t.same(await z.rulesFor!(NODE, 'default'), { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: 'node authorizer does not support user rule resolution' });
  t.same(await z.rulesFor!({ username: 'alice', groups: [] }, 'default'), { resourceRules: [], nonResourceRules: [], incomplete: false });
});

t.test('NodeRestriction on create: a node creates only its own Lease and CSINode', async (t) => {
  const cases: [string, Attributes['user'], string, string, string, string, string | undefined][] = [
    ['its own lease', NODE, COORD, 'leases', LEASE_NS, 'n1', undefined],
    ["another node's lease", NODE, COORD, 'leases', LEASE_NS, 'n2', 'can only access node lease with the same name as the requesting node'],
    ['a lease outside svc-node-lease', NODE, COORD, 'leases', 'default', 'n1', 'can only access leases in the "svc-node-lease" system namespace'],
    ["another node's CSINode", NODE, STORAGE, 'csinodes', '', 'n2', 'node "n1" is not allowed to create CSINode "n2"'],
    ['anything by a non-node', { username: 'alice', groups: [] }, COORD, 'leases', LEASE_NS, 'n2', undefined],
    ['other kinds', NODE, '', 'configmaps', 'default', 'x', undefined],
  ];
  for (const [rule, user, group, resource, ns, name, want] of cases) t.equal(nodeRestrictionOnCreate(user, group, resource, ns, name), want, rule);
});
