/**
 * The default RBAC policy the server keeps at every start (upstream's bootstrap policy): the
 * ClusterRoles and ClusterRoleBindings of the spec's table, each labelled
 * `svc.io/bootstrapping=rbac-defaults` and annotated `rbac.authorization.svc.io/autoupdate: "true"`.
 *
 * Rules are upstream's v1.32 rules with the groups spelled as this server serves them (`*.svc.io`)
 * and then narrowed to what it serves: a named resource (or subresource) that no served kind
 * provides is left out, and a rule left with nothing is dropped, so `kubectl get clusterrole edit`
 * shows what the role can actually reach. Wildcards and non-resource URLs are kept as written. A kind
 * added to the catalog later appears in these roles without an edit here when upstream's role names it.
 * Each `*.svc.io` group a rule keeps is followed by its upstream spelling (`*.k8s.io`), so the roles
 * read as upstream's do to tools that compare rules by group name (kubectl auth reconcile, charts).
 *
 * Every controller of the controller catalog gets `system:controller:<account>` bound to its service
 * account in svc-system (the account upstream's controller runs as), with upstream's rules for it.
 */
import type { BindingObject, PolicyRule, RoleObject, Subject } from '../../registry/rbac/policy.js';
import { RBAC_GROUP } from '../../registry/rbac/policy.js';
import type { ResourceType } from '../../registry/resource-type.js';
import { canonicalSpelling, upstreamSpelling } from '../../api/group-aliases.js';
import { nodeRules } from '../node.js';

export const BOOTSTRAP_LABEL = 'svc.io/bootstrapping';
export const BOOTSTRAP_LABEL_VALUE = 'rbac-defaults';
export const AUTOUPDATE_ANNOTATION = `${RBAC_GROUP}/autoupdate`;
export const AGGREGATE_TO = (role: 'admin' | 'edit' | 'view'): string => `${RBAC_GROUP}/aggregate-to-${role}`;
/** The namespace controllers' service accounts live in (upstream: kube-system). */
export const CONTROLLER_NAMESPACE = 'svc-system';
export const CONTROLLER_ROLE_PREFIX = 'system:controller:';

const CORE = '';
const AUTHENTICATION = 'authentication.svc.io';
const AUTHORIZATION = 'authorization.svc.io';
const DISCOVERY = 'discovery.svc.io';
const EVENTS = 'events.svc.io';
const CERTIFICATES = 'certificates.svc.io';
const NETWORKING = 'networking.svc.io';
const APPS = 'apps';
const AUTOSCALING = 'autoscaling';
const BATCH = 'batch';
const EXTENSIONS = 'extensions';
const POLICY = 'policy';

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete', 'deletecollection'];
const READ_WRITE = [...READ, ...WRITE];

const rule = (verbs: string[], groups: string[], resources: string[], names?: string[]): PolicyRule => {
  const r: PolicyRule = { verbs, apiGroups: groups, resources };
  if (names) r.resourceNames = names;
  return r;
};
const urls = (verbs: string[], paths: string[]): PolicyRule => ({ verbs, nonResourceURLs: paths });

/** Every controller may record events (upstream adds this rule to each controller role). */
const eventsRule = rule(['create', 'update', 'patch'], [CORE, EVENTS], ['events']);

const viewRules: PolicyRule[] = [
  rule(READ, [CORE], ['pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'configmaps']),
  rule(READ, [CORE], ['limitranges', 'resourcequotas', 'bindings', 'events', 'pods/status', 'resourcequotas/status', 'namespaces/status', 'replicationcontrollers/status', 'pods/log']),
  // read access to namespaces at the namespace scope means one can read *this* namespace
  rule(READ, [CORE], ['namespaces']),
  rule(READ, [DISCOVERY], ['endpointslices']),
  rule(READ, [APPS], ['controllerrevisions', 'statefulsets', 'statefulsets/status', 'statefulsets/scale', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/status', 'deployments/scale', 'replicasets', 'replicasets/status', 'replicasets/scale']),
  rule(READ, [AUTOSCALING], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
  rule(READ, [BATCH], ['jobs', 'cronjobs', 'cronjobs/status', 'jobs/status']),
  rule(READ, [EXTENSIONS], ['daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'ingresses', 'ingresses/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'replicationcontrollers/scale', 'networkpolicies']),
  rule(READ, [POLICY], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
  rule(READ, [NETWORKING], ['ingresses', 'ingresses/status', 'networkpolicies']),
];

const editRules: PolicyRule[] = [
  // read on resources that can lead to escalation
  rule(READ, [CORE], ['pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward', 'secrets', 'services/proxy']),
  rule(['impersonate'], [CORE], ['serviceaccounts']),
  rule(WRITE, [CORE], ['pods', 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward']),
  rule(['create'], [CORE], ['pods/eviction']),
  // no endpoints: since 1.22 edit may not write Endpoints or EndpointSlices
  rule(WRITE, [CORE], ['replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/proxy', 'persistentvolumeclaims', 'configmaps', 'secrets']),
  rule(['create'], [CORE], ['serviceaccounts/token']),
  rule(WRITE, [APPS], ['statefulsets', 'statefulsets/scale', 'daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'replicasets', 'replicasets/scale']),
  rule(WRITE, [AUTOSCALING], ['horizontalpodautoscalers']),
  rule(WRITE, [BATCH], ['jobs', 'cronjobs']),
  rule(WRITE, [EXTENSIONS], ['daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'ingresses', 'replicasets', 'replicasets/scale', 'replicationcontrollers/scale', 'networkpolicies']),
  rule(WRITE, [POLICY], ['poddisruptionbudgets']),
  rule(WRITE, [NETWORKING], ['networkpolicies', 'ingresses']),
];

const adminRules: PolicyRule[] = [
  rule(['create'], [AUTHORIZATION], ['localsubjectaccessreviews']),
  rule(READ_WRITE, [RBAC_GROUP], ['roles', 'rolebindings']),
];

/** Upstream's rules for the controllers it names, keyed by this server's catalog name. */
export const controllerPolicies: Readonly<Record<string, { account: string; rules: PolicyRule[] }>> = {
  'namespace-controller': {
    account: 'namespace-controller',
    rules: [
      rule(['get', 'list', 'watch', 'delete'], [CORE], ['namespaces']),
      rule(['update'], [CORE], ['namespaces/finalize', 'namespaces/status']),
      rule(['get', 'list', 'delete', 'deletecollection'], ['*'], ['*']),
    ],
  },
  'clusterrole-aggregation-controller': {
    account: 'clusterrole-aggregation-controller',
    // it must be able to write any rules into clusterroles
    rules: [rule(['escalate', 'get', 'list', 'watch', 'update', 'patch'], [RBAC_GROUP], ['clusterroles'])],
  },
  'garbage-collector-controller': {
    account: 'generic-garbage-collector',
    rules: [rule(['get', 'list', 'watch', 'patch', 'update', 'delete'], ['*'], ['*'])],
  },
  'serviceaccount-controller': {
    account: 'service-account-controller',
    rules: [rule(['create'], [CORE], ['serviceaccounts'])],
  },
  'resourcequota-controller': {
    account: 'resourcequota-controller',
    // quota counts anything, so it may list and watch everything
    rules: [rule(['list', 'watch'], ['*'], ['*']), rule(['update'], [CORE], ['resourcequotas/status'])],
  },
  // upstream gives these two namespaced Roles (svc-system / svc-public); here they are cluster roles
  'bootstrap-signer-controller': {
    account: 'bootstrap-signer',
    rules: [rule(READ, [CORE], ['secrets']), rule(READ, [CORE], ['configmaps']), rule(['update'], [CORE], ['configmaps'], ['cluster-info'])],
  },
  'token-cleaner-controller': {
    account: 'token-cleaner',
    rules: [rule(['delete', 'get', 'list', 'watch'], [CORE], ['secrets'])],
  },
  // upstream's three certificate controllers share one account and role
  'certificatesigningrequest-signing-controller': { account: 'certificate-controller', rules: certificateControllerRules() },
  'certificatesigningrequest-approving-controller': { account: 'certificate-controller', rules: certificateControllerRules() },
  'certificatesigningrequest-cleaner-controller': { account: 'certificate-controller', rules: certificateControllerRules() },
};

/** A built-in signer's names: this server's spelling, then upstream's. */
function signerNames(...names: string[]): string[] {
  return names.flatMap((n) => [`svc.io/${n}`, `kubernetes.io/${n}`]);
}

function certificateControllerRules(): PolicyRule[] {
  return [
    rule(['get', 'list', 'watch', 'delete'], [CERTIFICATES], ['certificatesigningrequests']),
    rule(['update'], [CERTIFICATES], ['certificatesigningrequests/status', 'certificatesigningrequests/approval']),
    rule(['approve'], [CERTIFICATES], ['signers'], signerNames('kube-apiserver-client-kubelet')),
    rule(['sign'], [CERTIFICATES], ['signers'], signerNames('legacy-unknown', 'kube-apiserver-client', 'kube-apiserver-client-kubelet', 'kubelet-serving')),
    rule(['create'], [AUTHORIZATION], ['subjectaccessreviews']),
  ];
}

/**
 * Names RBAC rules use that are no served resource of their own, each with the served resource that
 * brings it: a signer (verbs approve and sign) and the node client permissions the CSR approver asks
 * about (upstream's authorization-only names).
 */
const AUTHORIZATION_ONLY: Readonly<Record<string, readonly string[]>> = {
  [`${CERTIFICATES}/certificatesigningrequests`]: [`${CERTIFICATES}/signers`, `${CERTIFICATES}/certificatesigningrequests/nodeclient`, `${CERTIFICATES}/certificatesigningrequests/selfnodeclient`],
};

/** upstream's certificate roles: bootstrapping nodes, node client approvals, approvers per signer. */
function certificateRoles(served: ReadonlySet<string>): RoleObject[] {
  const prefix = 'system:certificates.svc.io:';
  const approver = (signer: string): RoleObject => clusterRole(`${prefix}${signer}-approver`, narrow([rule(['approve'], [CERTIFICATES], ['signers'], signerNames(signer))], served));
  return [
    clusterRole('system:node-bootstrapper', narrow([rule(['create', 'get', 'list', 'watch'], [CERTIFICATES], ['certificatesigningrequests'])], served)),
    clusterRole(`${prefix}certificatesigningrequests:nodeclient`, narrow([rule(['create'], [CERTIFICATES], ['certificatesigningrequests/nodeclient'])], served)),
    clusterRole(`${prefix}certificatesigningrequests:selfnodeclient`, narrow([rule(['create'], [CERTIFICATES], ['certificatesigningrequests/selfnodeclient'])], served)),
    approver('kube-apiserver-client'),
    approver('kube-apiserver-client-kubelet'),
    approver('kubelet-serving'),
    approver('legacy-unknown'),
  ].filter((r) => r.rules?.length);
}

/** What the server serves, for narrowing rules: `group/resource` and `group/resource/subresource`. */
export function servedResourceSet(types: readonly ResourceType[]): ReadonlySet<string> {
  const out = new Set<string>();
  for (const t of types) {
    out.add(`${t.group}/${t.plural}`);
    for (const sub of Object.keys(t.subresources ?? {})) out.add(`${t.group}/${t.plural}/${sub}`);
    for (const name of AUTHORIZATION_ONLY[`${t.group}/${t.plural}`] ?? []) out.add(name);
  }
  return out;
}

/** A rule narrowed to what is served: per group, the named resources it serves; nothing when none is. */
export function narrowRule(r: PolicyRule, served: ReadonlySet<string>): PolicyRule[] {
  if (r.nonResourceURLs?.length) return [r];
  const out: PolicyRule[] = [];
  for (const group of r.apiGroups ?? []) {
    const canonical = canonicalSpelling(group);
    const resources = group === '*' ? [...(r.resources ?? [])] : (r.resources ?? []).filter((res) => res === '*' || res.startsWith('*/') || served.has(`${canonical}/${res}`));
    if (!resources.length) continue;
    const same = out.find((o) => JSON.stringify(o.resources) === JSON.stringify(resources));
    if (same) same.apiGroups!.push(group);
    else out.push({ ...r, apiGroups: [group], resources });
  }
  return out;
}

/** The rule with each svc.io group followed by its upstream spelling (unless the rule names it already). */
export function withUpstreamSpellings(r: PolicyRule): PolicyRule {
  if (!r.apiGroups) return r;
  const groups: string[] = [];
  for (const g of r.apiGroups) {
    groups.push(g);
    const alias = upstreamSpelling(g);
    if (alias && !r.apiGroups.includes(alias)) groups.push(alias);
  }
  return { ...r, apiGroups: groups };
}

const narrow = (rules: readonly PolicyRule[], served: ReadonlySet<string>): PolicyRule[] => rules.flatMap((r) => narrowRule(r, served)).map(withUpstreamSpellings);

function meta(name: string, labels: Record<string, string> = {}): RoleObject['metadata'] {
  return { name, labels: { ...labels, [BOOTSTRAP_LABEL]: BOOTSTRAP_LABEL_VALUE }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } };
}

const clusterRole = (name: string, rules: PolicyRule[], labels?: Record<string, string>): RoleObject => ({
  apiVersion: `${RBAC_GROUP}/v1`,
  kind: 'ClusterRole',
  metadata: meta(name, labels),
  rules,
});

const aggregating = (name: string, from: 'admin' | 'edit' | 'view', labels?: Record<string, string>): RoleObject => ({
  ...clusterRole(name, [], labels),
  aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO(from)]: 'true' } }] },
});

const group = (name: string): Subject => ({ kind: 'Group', apiGroup: RBAC_GROUP, name });

const clusterBinding = (role: string, subjects: Subject[]): BindingObject => ({
  apiVersion: `${RBAC_GROUP}/v1`,
  kind: 'ClusterRoleBinding',
  metadata: meta(role),
  roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
  subjects,
});

export interface BootstrapPolicy {
  clusterRoles: RoleObject[];
  clusterRoleBindings: BindingObject[];
}

/** The default policy for the served types and the catalog's controllers (by catalog name). */
export function bootstrapPolicy(types: readonly ResourceType[], controllers: readonly string[]): BootstrapPolicy {
  const served = servedResourceSet(types);
  const roles: RoleObject[] = [
    // a root role that can do absolutely anything
    clusterRole('cluster-admin', [rule(['*'], ['*'], ['*']), urls(['*'], ['*'])]),
    // enough to tell whether the server is ready and to discover API versions for negotiation
    clusterRole('system:discovery', [urls(['get'], ['/livez', '/readyz', '/healthz', '/version', '/version/', '/openapi', '/openapi/*', '/api', '/api/*', '/apis', '/apis/*'])]),
    // the monitoring endpoints, the per-check health endpoints included
    clusterRole('system:monitoring', [urls(['get'], ['/metrics', '/metrics/slis', '/livez', '/readyz', '/healthz', '/livez/*', '/readyz/*', '/healthz/*'])]),
    // what a user needs to learn about themselves
    clusterRole(
      'system:basic-user',
      narrow([rule(['create'], [AUTHORIZATION], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']), rule(['create'], [AUTHENTICATION], ['selfsubjectreviews'])], served),
    ),
    // non-sensitive information about the cluster
    clusterRole('system:public-info-viewer', [urls(['get'], ['/livez', '/readyz', '/healthz', '/version', '/version/'])]),
    aggregating('admin', 'admin'),
    aggregating('edit', 'edit', { [AGGREGATE_TO('admin')]: 'true' }),
    aggregating('view', 'view', { [AGGREGATE_TO('edit')]: 'true' }),
    clusterRole('system:aggregate-to-admin', narrow(adminRules, served), { [AGGREGATE_TO('admin')]: 'true' }),
    clusterRole('system:aggregate-to-edit', narrow(editRules, served), { [AGGREGATE_TO('edit')]: 'true' }),
    clusterRole('system:aggregate-to-view', narrow(viewRules, served), { [AGGREGATE_TO('view')]: 'true' }),
    // what node agents may do (unbound, as upstream: the Node mode grants it to each node)
    clusterRole('system:node', narrow(nodeRules.map((r) => structuredClone(r) as PolicyRule), served)),
    clusterRole('system:service-account-issuer-discovery', [
      urls(['get'], ['/.well-known/openid-configuration', '/.well-known/openid-configuration/', '/openid/v1/jwks', '/openid/v1/jwks/']),
    ]),
    ...certificateRoles(served),
  ];
  const bindings: BindingObject[] = [
    clusterBinding('cluster-admin', [group('system:masters')]),
    clusterBinding('system:monitoring', [group('system:monitoring')]),
    clusterBinding('system:discovery', [group('system:authenticated')]),
    clusterBinding('system:basic-user', [group('system:authenticated')]),
    clusterBinding('system:public-info-viewer', [group('system:authenticated'), group('system:unauthenticated')]),
    clusterBinding('system:service-account-issuer-discovery', [group('system:serviceaccounts')]),
  ];
  for (const name of controllers) {
    const p = controllerPolicies[name] ?? { account: name, rules: [] };
    const roleName = `${CONTROLLER_ROLE_PREFIX}${p.account}`;
    // controllers sharing an account share its role
    if (roles.some((r) => r.metadata.name === roleName)) continue;
    roles.push(clusterRole(roleName, [...narrow(p.rules, served), ...narrow([eventsRule], served)]));
    bindings.push(clusterBinding(roleName, [{ kind: 'ServiceAccount', name: p.account, namespace: CONTROLLER_NAMESPACE }]));
  }
  return { clusterRoles: roles, clusterRoleBindings: bindings };
}
