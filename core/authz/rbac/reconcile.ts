/**
 * Keeps the default policy in place at every start (upstream's `rbac/bootstrap-roles` post-start
 * hook and its reconciliation): missing default ClusterRoles and ClusterRoleBindings are created;
 * existing ones get the permissions, aggregation selectors, subjects, labels and annotations they lack
 * (nothing is removed: an administrator's additions stay); a binding whose roleRef differs is deleted
 * and recreated. An object annotated `rbac.authorization.svc.io/autoupdate: "false"` is left alone.
 * It writes as system:apiserver in system:masters, as upstream's loopback client does.
 */
import { StatusError } from '../../api/status.js';
import type { ApiObject } from '../../api/types.js';
import { jsonEqual } from '../../api/validation.js';
import type { ControllerIdentity, RegistryClient } from '../../registry/client.js';
import type { Listers } from '../../registry/lister.js';
import type { BindingObject, PolicyRule, RoleObject } from '../../registry/rbac/policy.js';
import { AUTOUPDATE_ANNOTATION, type BootstrapPolicy } from './bootstrap-policy.js';
import type { RbacKinds } from './resolver.js';
import { covers } from './rules.js';

export const bootstrapIdentity: ControllerIdentity = {
  user: { username: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] },
  userAgent: 'svc-apiserver/rbac-bootstrap',
};

export type ReconcileOp = 'none' | 'create' | 'update' | 'recreate' | 'protected';

export interface Reconciled<T> {
  op: ReconcileOp;
  object: T;
}

const isProtected = (o: ApiObject): boolean => o.metadata.annotations?.[AUTOUPDATE_ANNOTATION] === 'false';

/** Labels and annotations the existing object lacks are added; its own values win. */
function mergeMeta(existing: ApiObject, expected: ApiObject): boolean {
  let changed = false;
  for (const field of ['labels', 'annotations'] as const) {
    const want = expected.metadata[field] ?? {};
    const have = (existing.metadata[field] ??= {});
    for (const [k, v] of Object.entries(want)) {
      if (Object.hasOwn(have, k)) continue;
      have[k] = v;
      changed = true;
    }
  }
  return changed;
}

/** Upstream's reconciliation of a ClusterRole without removal of extra permissions. */
export function reconcileClusterRole(existing: RoleObject | undefined, expected: RoleObject): Reconciled<RoleObject> {
  if (!existing) return { op: 'create', object: structuredClone(expected) };
  if (isProtected(existing)) return { op: 'protected', object: existing };
  const result = structuredClone(existing);
  let changed = mergeMeta(result, expected);
  const { missing } = covers((existing.rules ?? []) as PolicyRule[], (expected.rules ?? []) as PolicyRule[]);
  if (missing.length) {
    result.rules = [...(result.rules ?? []), ...missing];
    changed = true;
  }
  const wantSelectors = expected.aggregationRule?.clusterRoleSelectors ?? [];
  if (!expected.aggregationRule && result.aggregationRule) {
    // not an aggregated role by default: the aggregation goes
    delete result.aggregationRule;
    changed = true;
  } else if (expected.aggregationRule) {
    const have = (result.aggregationRule ??= {}).clusterRoleSelectors ?? [];
    const missingSelectors = wantSelectors.filter((w) => !have.some((h) => jsonEqual(h, w)));
    if (missingSelectors.length || !existing.aggregationRule) {
      result.aggregationRule.clusterRoleSelectors = [...have, ...missingSelectors];
      changed = true;
    }
  }
  return { op: changed ? 'update' : 'none', object: result };
}

/** Upstream's reconciliation of a ClusterRoleBinding without removal of extra subjects. */
export function reconcileClusterRoleBinding(existing: BindingObject | undefined, expected: BindingObject): Reconciled<BindingObject> {
  if (!existing) return { op: 'create', object: structuredClone(expected) };
  if (isProtected(existing)) return { op: 'protected', object: existing };
  const result = structuredClone(existing);
  let changed = mergeMeta(result, expected);
  const refChanged = !jsonEqual(existing.roleRef, expected.roleRef);
  if (refChanged) result.roleRef = structuredClone(expected.roleRef);
  const have = result.subjects ?? [];
  const missing = (expected.subjects ?? []).filter((w) => !have.some((h) => h.kind === w.kind && h.name === w.name && (h.namespace ?? '') === (w.namespace ?? '') && (h.apiGroup ?? '') === (w.apiGroup ?? '')));
  if (missing.length) {
    result.subjects = [...have, ...missing];
    changed = true;
  }
  if (refChanged) return { op: 'recreate', object: result };
  return { op: changed ? 'update' : 'none', object: result };
}

/** Attempts of one write that meets another writer's (a server or acceptor starting beside this one). */
const RECONCILE_ATTEMPTS = 5;

/**
 * Runs a write, retrying a conflict (or an object created or deleted meanwhile) with the change
 * rebuilt from the newer object, once the listers hold every write acknowledged so far (`fresh`).
 */
async function withRetry(attempt: () => Promise<void>, fresh: () => unknown): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (e) {
      if (!(e instanceof StatusError) || (e.code !== 409 && e.code !== 404) || i >= RECONCILE_ATTEMPTS) throw e;
      await fresh();
    }
  }
}

/** Brings the stored default policy up to `policy`; throws when a write fails (the hook then fails). */
export async function reconcileBootstrapPolicy(client: RegistryClient, listers: Listers, kinds: RbacKinds, policy: BootstrapPolicy, fresh: () => unknown = () => undefined): Promise<void> {
  const as = client.as(bootstrapIdentity);
  const roles = listers.for<RoleObject>(kinds.clusterRoles);
  const bindings = listers.for<BindingObject>(kinds.clusterRoleBindings);
  const strip = <T extends ApiObject>(o: T): T => {
    const out = structuredClone(o);
    delete out.metadata.managedFields;
    return out;
  };

  const syncRole = async (want: RoleObject): Promise<void> => {
    const have = roles.get('', want.metadata.name!);
    const r = reconcileClusterRole(have ? strip(have as RoleObject) : undefined, want);
    if (r.op === 'create') await as.create(kinds.clusterRoles, r.object);
    else if (r.op === 'update') await as.update(kinds.clusterRoles, r.object);
  };
  const syncBinding = async (want: BindingObject): Promise<void> => {
    const have = bindings.get('', want.metadata.name!);
    const r = reconcileClusterRoleBinding(have ? strip(have as BindingObject) : undefined, want);
    if (r.op === 'create') await as.create(kinds.clusterRoleBindings, r.object);
    else if (r.op === 'update') await as.update(kinds.clusterRoleBindings, r.object);
    else if (r.op === 'recreate') {
      await as.delete(kinds.clusterRoleBindings, '', want.metadata.name!);
      const fresh = structuredClone(r.object);
      delete fresh.metadata.resourceVersion;
      delete fresh.metadata.uid;
      delete fresh.metadata.creationTimestamp;
      await as.create(kinds.clusterRoleBindings, fresh);
    }
  };
  // one batch per kind: the writes commit together instead of one sync each
  await Promise.all(policy.clusterRoles.map((r) => withRetry(() => syncRole(r), fresh)));
  await Promise.all(policy.clusterRoleBindings.map((b) => withRetry(() => syncBinding(b), fresh)));
}
