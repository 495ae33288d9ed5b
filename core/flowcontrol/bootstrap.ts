/**
 * The configuration API Priority and Fairness starts from: upstream v1.32's mandatory objects (the
 * exempt and catch-all levels and schemas) and its suggested ones (system, node-high,
 * leader-election, workload-high, workload-low, global-default and their FlowSchemas), with the
 * brand's spellings (coordination.svc.io, svc-system, system:svc-controller-manager,
 * system:svc-scheduler). Pure data: the kind files check the mandatory specs against it, the
 * reconciler (ensurer.ts) writes it.
 */
import type { FlowSchemaSpec, PolicyRulesWithSubjects, ResourcePolicyRule, Subject } from '../registry/flowcontrol/flowschemas.js';
import type { PriorityLevelConfigurationSpec } from '../registry/flowcontrol/prioritylevelconfigurations.js';

export interface BootstrapPriorityLevel {
  metadata: { name: string };
  spec: PriorityLevelConfigurationSpec;
}

export interface BootstrapFlowSchema {
  metadata: { name: string };
  spec: FlowSchemaSpec;
}

/** The annotation that says whether the server keeps an object's spec as it bootstraps it. */
export const AUTO_UPDATE_ANNOTATION = 'apf.svc.io/autoupdate-spec';

const SYSTEM_NAMESPACE = 'svc-system';
const CONTROLLER_MANAGER = 'system:svc-controller-manager';
const SCHEDULER = 'system:svc-scheduler';
const ALL = '*';

const groups = (...names: string[]): Subject[] => names.map((name) => ({ kind: 'Group', group: { name } }));
const users = (...names: string[]): Subject[] => names.map((name) => ({ kind: 'User', user: { name } }));
const systemServiceAccounts = (...names: string[]): Subject[] => names.map((name) => ({ kind: 'ServiceAccount', serviceAccount: { namespace: SYSTEM_NAMESPACE, name } }));

const resourceRule = (verbs: string[], apiGroups: string[], resources: string[], namespaces: string[], clusterScope: boolean): ResourcePolicyRule =>
  clusterScope ? { verbs, apiGroups, resources, clusterScope, namespaces } : { verbs, apiGroups, resources, namespaces };

/** Every request by these subjects. */
const everything = (subjects: Subject[]): PolicyRulesWithSubjects => ({
  subjects,
  resourceRules: [resourceRule([ALL], [ALL], [ALL], [ALL], true)],
  nonResourceRules: [{ verbs: [ALL], nonResourceURLs: [ALL] }],
});

function level(name: string, spec: PriorityLevelConfigurationSpec): BootstrapPriorityLevel {
  return { metadata: { name }, spec };
}

function queued(shares: number, lendablePercent: number, queues: number, handSize: number, queueLengthLimit: number): PriorityLevelConfigurationSpec {
  return {
    type: 'Limited',
    limited: { nominalConcurrencyShares: shares, limitResponse: { type: 'Queue', queuing: { queues, handSize, queueLengthLimit } }, lendablePercent },
  };
}

function schema(name: string, priorityLevel: string, matchingPrecedence: number, distinguisher: string, ...rules: PolicyRulesWithSubjects[]): BootstrapFlowSchema {
  const spec: FlowSchemaSpec = { priorityLevelConfiguration: { name: priorityLevel }, matchingPrecedence };
  if (distinguisher) spec.distinguisherMethod = { type: distinguisher };
  spec.rules = rules;
  return { metadata: { name }, spec };
}

export const mandatoryPriorityLevels: readonly BootstrapPriorityLevel[] = [
  level('exempt', { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } }),
  level('catch-all', { type: 'Limited', limited: { nominalConcurrencyShares: 5, limitResponse: { type: 'Reject' }, lendablePercent: 0 } }),
];

export const mandatoryFlowSchemas: readonly BootstrapFlowSchema[] = [
  schema('exempt', 'exempt', 1, '', everything(groups('system:masters'))),
  schema('catch-all', 'catch-all', 10000, 'ByUser', everything(groups('system:unauthenticated', 'system:authenticated'))),
];

export const suggestedPriorityLevels: readonly BootstrapPriorityLevel[] = [
  level('system', queued(30, 33, 64, 6, 50)),
  level('node-high', queued(40, 25, 64, 6, 50)),
  level('leader-election', queued(10, 0, 16, 4, 50)),
  level('workload-high', queued(40, 50, 128, 6, 50)),
  level('workload-low', queued(100, 90, 128, 6, 50)),
  level('global-default', queued(20, 50, 128, 6, 50)),
];

/** Leader election's reads and writes: Leases anywhere (and, for workloads, the older Endpoints and ConfigMaps locks). */
const leaseRule = resourceRule(['get', 'create', 'update'], ['coordination.svc.io'], ['leases'], [ALL], false);

export const suggestedFlowSchemas: readonly BootstrapFlowSchema[] = [
  schema('system-nodes', 'system', 500, 'ByUser', everything(groups('system:nodes'))),
  schema('system-node-high', 'node-high', 400, 'ByUser', {
    subjects: groups('system:nodes'),
    resourceRules: [resourceRule([ALL], [''], ['nodes', 'nodes/status'], [ALL], true), resourceRule([ALL], ['coordination.svc.io'], ['leases'], [ALL], false)],
  }),
  schema('probes', 'exempt', 2, '', { subjects: groups('system:unauthenticated', 'system:authenticated'), nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/readyz', '/livez'] }] }),
  schema('system-leader-election', 'leader-election', 100, 'ByUser', {
    subjects: [...users(CONTROLLER_MANAGER, SCHEDULER), ...systemServiceAccounts(ALL)],
    resourceRules: [leaseRule],
  }),
  schema('workload-leader-election', 'leader-election', 200, 'ByUser', {
    subjects: systemServiceAccounts(ALL),
    resourceRules: [resourceRule(['get', 'create', 'update'], [''], ['endpoints', 'configmaps'], [ALL], false), leaseRule],
  }),
  schema('endpoint-controller', 'workload-high', 150, 'ByUser', {
    subjects: [...users(CONTROLLER_MANAGER), ...systemServiceAccounts('endpoint-controller', 'endpointslicemirroring-controller')],
    resourceRules: [resourceRule(['get', 'create', 'update'], [''], ['endpoints'], [ALL], false)],
  }),
  schema('kube-controller-manager', 'workload-high', 800, 'ByNamespace', everything(users(CONTROLLER_MANAGER))),
  schema('kube-scheduler', 'workload-high', 800, 'ByNamespace', everything(users(SCHEDULER))),
  schema('kube-system-service-accounts', 'workload-high', 900, 'ByNamespace', everything(systemServiceAccounts(ALL))),
  schema('service-accounts', 'workload-low', 9000, 'ByUser', everything(groups('system:serviceaccounts'))),
  schema('global-default', 'global-default', 9900, 'ByUser', everything(groups('system:unauthenticated', 'system:authenticated'))),
];
