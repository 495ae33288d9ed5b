/**
 * Node (--authorization-mode=Node): what node agents may do, as upstream's node authorizer decides it.
 * A node is a user `system:node:<name>` in group `system:nodes`; anyone else gets no opinion.
 *
 * Upstream subdivides some resources by the node's relationship to them (a graph of pods and what
 * they reference): a node may read a Secret or ConfigMap only if a pod bound to it uses it, create a
 * ServiceAccount token only for a pod bound to it, get a PVC/PV/claim/attachment only through its
 * pods. No pods exist here, so every graph question has the answer "no relationship". The rest is
 * decided by name (its own Lease in svc-node-lease, its own CSINode and Node) or by field selector
 * (pods and resource slices listed for this node), and everything else by upstream's static node
 * rules (system:node's policy) with the groups spelled as this server serves them. The matching
 * admission check (a Lease created by a node must carry the node's name) is nodeRestrictionOnCreate.
 */
import type { UserInfo } from '../api/types.js';
import { type Attributes, type Authorizer, type AuthorizerDecision, type PolicyRule, type RulesResult } from './authorizer.js';

const NODE_USER_PREFIX = 'system:node:';
const NODES_GROUP = 'system:nodes';
const NODE_LEASE_NAMESPACE = 'svc-node-lease';

const CORE = '';
const AUTHENTICATION = 'authentication.svc.io';
const AUTHORIZATION = 'authorization.svc.io';
const CERTIFICATES = 'certificates.svc.io';
const COORDINATION = 'coordination.svc.io';
const STORAGE = 'storage.svc.io';
const NODE = 'node.svc.io';
const RESOURCE = 'resource.svc.io';

const READ = ['get', 'list', 'watch'];
const rule = (verbs: string[], apiGroups: string[], resources: string[]): PolicyRule => ({ verbs, apiGroups, resources });

/** Upstream's static node rules (v1.32, its DRA gate on), for resources the subdivisions below do not decide. */
export const nodeRules: readonly PolicyRule[] = [
  rule(['create'], [AUTHENTICATION], ['tokenreviews']),
  rule(['create'], [AUTHORIZATION], ['subjectaccessreviews', 'localsubjectaccessreviews']),
  rule(READ, [CORE], ['services']),
  rule(['create', 'get', 'list', 'watch'], [CORE], ['nodes']),
  rule(['update', 'patch'], [CORE], ['nodes/status']),
  rule(['update', 'patch'], [CORE], ['nodes']),
  rule(['create', 'update', 'patch'], [CORE], ['events']),
  rule(READ, [CORE], ['pods']),
  rule(['create', 'delete'], [CORE], ['pods']),
  rule(['update', 'patch'], [CORE], ['pods/status']),
  rule(['create'], [CORE], ['pods/eviction']),
  rule(READ, [CORE], ['secrets', 'configmaps']),
  rule(['get'], [CORE], ['persistentvolumeclaims', 'persistentvolumes']),
  rule(['get'], [CORE], ['endpoints']),
  rule(['create', 'get', 'list', 'watch'], [CERTIFICATES], ['certificatesigningrequests']),
  rule(['get', 'create', 'update', 'patch', 'delete'], [COORDINATION], ['leases']),
  rule(['get'], [STORAGE], ['volumeattachments']),
  rule(['create'], [CORE], ['serviceaccounts/token']),
  rule(['get', 'update', 'patch'], [CORE], ['persistentvolumeclaims/status']),
  rule(['get', 'watch', 'list'], [STORAGE], ['csidrivers']),
  rule(['get', 'create', 'update', 'patch', 'delete'], [STORAGE], ['csinodes']),
  rule(READ, [NODE], ['runtimeclasses']),
  rule(['get'], [RESOURCE], ['resourceclaims']),
  rule([...READ, 'create', 'update', 'patch', 'delete', 'deletecollection'], [RESOURCE], ['resourceslices']),
];

/** The node a user is, if it is one: `system:node:<name>` in `system:nodes` (name may be empty). */
function nodeIdentity(user: UserInfo): string | undefined {
  if (!user.username.startsWith(NODE_USER_PREFIX) || !user.groups.includes(NODES_GROUP)) return undefined;
  return user.username.slice(NODE_USER_PREFIX.length);
}

/** RBAC's rule matching, enough for the static rules above (no resourceNames, no wildcards in them). */
function rulesAllow(a: Attributes, rules: readonly PolicyRule[]): boolean {
  if (!a.isResourceRequest) return false;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  return rules.some((r) => r.verbs.includes(a.verb) && r.apiGroups!.includes(a.apiGroup) && r.resources!.includes(resource));
}

const ALLOW: AuthorizerDecision = { decision: 'allow', reason: '' };
const noOpinion = (reason: string): AuthorizerDecision => ({ decision: 'no-opinion', reason });
const noRelationship = (node: string): AuthorizerDecision => noOpinion(`no relationship found between node '${node}' and this object`);

/** Resources reached only through a pod bound to the node: always "no relationship" here, after upstream's verb checks. */
function throughPods(node: string, a: Attributes): AuthorizerDecision {
  if (!a.name) return noOpinion('No Object name found');
  return noRelationship(node);
}

function readNamespaced(node: string, a: Attributes): AuthorizerDecision {
  if (!READ.includes(a.verb)) return noOpinion('can only read resources of this type');
  if (a.subresource) return noOpinion('cannot read subresource');
  if (!a.namespace) return noOpinion('can only read namespaced object of this type');
  return throughPods(node, a);
}

function getOnly(node: string, a: Attributes): AuthorizerDecision {
  if (a.verb !== 'get') return noOpinion('can only get individual resources of this type');
  if (a.subresource) return noOpinion('cannot get subresource');
  return throughPods(node, a);
}

function pvcStatus(node: string, a: Attributes): AuthorizerDecision {
  if (a.verb !== 'update' && a.verb !== 'patch') return noOpinion('can only get/update/patch this type');
  return throughPods(node, a);
}

function createToken(node: string, a: Attributes): AuthorizerDecision {
  if (a.verb !== 'create' || !a.name) return noOpinion('can only create tokens for individual service accounts');
  if (a.subresource !== 'token') return noOpinion('can only create token subresource of serviceaccount');
  return noRelationship(node);
}

const OWN_OBJECT_VERBS = ['get', 'create', 'update', 'patch', 'delete'];

/** The node's own object of a per-node kind (Lease, CSINode): its own name, except on create, whose name admission checks. */
function ownName(node: string, a: Attributes, what: string): AuthorizerDecision {
  if (a.verb !== 'create' && a.name !== node) return noOpinion(`can only access ${what} with the same name as the requesting node`);
  return ALLOW;
}

function lease(node: string, a: Attributes): AuthorizerDecision {
  if (!OWN_OBJECT_VERBS.includes(a.verb)) return noOpinion('can only get, create, update, patch, or delete a node lease');
  if (a.namespace !== NODE_LEASE_NAMESPACE) return noOpinion(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
  return ownName(node, a, 'node lease');
}

function csiNode(node: string, a: Attributes): AuthorizerDecision {
  if (!OWN_OBJECT_VERBS.includes(a.verb)) return noOpinion('can only get, create, update, patch, or delete a CSINode');
  if (a.subresource) return noOpinion('cannot authorize CSINode subresources');
  return ownName(node, a, 'CSINode');
}

/** Whether the request's field selector pins `field` to `value` with `=`. */
function selectsField(a: Attributes, field: string, value: string): boolean {
  const reqs = a.selectors?.fieldRequirements().requirements ?? [];
  return reqs.some((r) => r.field === field && r.operator === '=' && r.value === value);
}

function resourceSlice(node: string, a: Attributes, withSelectors: boolean): AuthorizerDecision {
  if (a.subresource) return noOpinion('cannot authorize ResourceSlice subresources');
  switch (a.verb) {
    case 'create':
      return ALLOW;
    case 'get':
    case 'update':
    case 'patch':
    case 'delete':
      return throughPods(node, a);
    case 'watch':
    case 'list':
    case 'deletecollection':
      if (!withSelectors || selectsField(a, 'nodeName', node)) return ALLOW;
      return noOpinion('can only list/watch/deletecollection resourceslices with nodeName field selector');
    default:
      return noOpinion('only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection');
  }
}

function nodeObject(node: string, a: Attributes): AuthorizerDecision {
  if (a.subresource === '') {
    if (['create', 'update', 'patch'].includes(a.verb)) return ALLOW;
    if (READ.includes(a.verb)) {
      if (a.name === node) return ALLOW;
      return noOpinion(a.name ? `node '${node}' cannot read '${a.name}', only its own Node object` : `node '${node}' cannot read all nodes, only its own Node object`);
    }
  } else if (a.subresource === 'status' && (a.verb === 'update' || a.verb === 'patch')) return ALLOW;
  return noOpinion('');
}

function pod(node: string, a: Attributes): AuthorizerDecision {
  switch (a.subresource) {
    case '':
      if (a.verb === 'get') return getOnly(node, a);
      if (a.verb === 'list' || a.verb === 'watch') {
        if (selectsField(a, 'spec.nodeName', node)) return ALLOW;
        if (a.name) return noRelationship(node);
        return noOpinion('can only list/watch pods with spec.nodeName field selector');
      }
      if (a.verb === 'create' || a.verb === 'delete') return ALLOW;
      break;
    case 'status':
      if (a.verb === 'update' || a.verb === 'patch') return ALLOW;
      break;
    case 'eviction':
      if (a.verb === 'create') return ALLOW;
      break;
  }
  return noOpinion('');
}

export interface NodeAuthorizerOptions {
  /** Upstream's AuthorizeNodeWithSelectors (beta, on in v1.32): nodes and pods by name and field selector. */
  withSelectors: boolean;
}

export function nodeAuthorizer(o: NodeAuthorizerOptions): Authorizer {
  const decide = (node: string, a: Attributes): AuthorizerDecision | undefined => {
    if (!a.isResourceRequest) return undefined;
    const g = a.apiGroup;
    const r = a.resource;
    if (g === CORE) {
      if (r === 'secrets' || r === 'configmaps') return readNamespaced(node, a);
      if (r === 'persistentvolumeclaims') return a.subresource === 'status' ? pvcStatus(node, a) : getOnly(node, a);
      if (r === 'persistentvolumes') return getOnly(node, a);
      if (r === 'serviceaccounts') return createToken(node, a);
      if (r === 'nodes' && o.withSelectors) return nodeObject(node, a);
      if (r === 'pods' && o.withSelectors) return pod(node, a);
    } else if (g === COORDINATION && r === 'leases') return lease(node, a);
    else if (g === STORAGE && r === 'csinodes') return csiNode(node, a);
    else if (g === STORAGE && r === 'volumeattachments') return getOnly(node, a);
    else if (g === RESOURCE && r === 'resourceclaims') return getOnly(node, a);
    else if (g === RESOURCE && r === 'resourceslices') return resourceSlice(node, a, o.withSelectors);
    return undefined;
  };
  const notANode: AuthorizerDecision = noOpinion('');
  return {
    name: 'Node',
    authorize: (a) => {
      const node = nodeIdentity(a.user);
      if (node === undefined) return notANode;
      if (node === '') return noOpinion(`unknown node for user ${JSON.stringify(a.user.username)}`);
      return decide(node, a) ?? (rulesAllow(a, nodeRules) ? ALLOW : notANode);
    },
    rulesFor: (user): RulesResult =>
      nodeIdentity(user) === undefined
        ? { resourceRules: [], nonResourceRules: [], incomplete: false }
        : { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: 'node authorizer does not support user rule resolution' },
  };
}

/**
 * Upstream's NodeRestriction admission for the kinds served here: a node may create only the Lease
 * (in svc-node-lease) and the CSINode named after itself. Returns the Forbidden reason, if any.
 */
export function nodeRestrictionOnCreate(user: UserInfo, group: string, resource: string, namespace: string, name: string): string | undefined {
  const node = nodeIdentity(user);
  if (!node) return undefined;
  if (group === COORDINATION && resource === 'leases') {
    if (namespace !== NODE_LEASE_NAMESPACE) return `can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`;
    if (name !== node) return 'can only access node lease with the same name as the requesting node';
  }
  if (group === STORAGE && resource === 'csinodes' && name !== node) return `node "${node}" is not allowed to create CSINode "${name}"`;
  return undefined;
}
