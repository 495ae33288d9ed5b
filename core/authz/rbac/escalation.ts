/**
 * Escalation prevention (spec rule 8), as upstream's RBAC storage does it: a Role or ClusterRole is
 * written only by a caller who already holds every permission in it in the same scope (the role's
 * namespace, or the cluster) or may `escalate` roles/clusterroles; setting or keeping an
 * aggregationRule needs full authority; a binding is written only by a caller who may `bind` the
 * role it names (in the binding's namespace, by name, so resourceNames can limit it) or holds every
 * permission of that role. system:masters is exempt, and so is an update that changes only the
 * fields the garbage collector needs (owner references, finalizers). Refusals are 403s naming the
 * missing permissions in upstream's compact form; nothing is stored.
 *
 * Where it runs: the check needs the authorizer (escalate / bind decisions, which any mode may make)
 * and the caller's RBAC rules (the resolver's indexes over listers); both live on the main thread and
 * pool workers cannot see them. Copying the caller's rules and decisions into each task would not do:
 * the `bind` decision depends on the roleRef, which is known only once the body is decoded, merged
 * (patch, apply) and validated in the worker. So writes of the RBAC kinds run on the main thread's own
 * registry (ResourceType.writeCheck; RegistryClient routes them), which calls this check with the
 * final object of every create, update, patch and apply, dry runs included, after validation and
 * before the store, on each attempt of the update loop. RBAC writes are rare; the pool keeps every
 * other kind.
 */
import { errors } from '../../api/status.js';
import type { ApiObject, UserInfo } from '../../api/types.js';
import { jsonEqual } from '../../api/validation.js';
import type { CheckedWrite, WriteCheck } from '../../registry/context.js';
import type { BindingObject, PolicyRule, RoleObject, RoleRef } from '../../registry/rbac/policy.js';
import { groupResourceOf, type ResourceType } from '../../registry/resource-type.js';
import type { Attributes, Authorizer } from '../authorizer.js';
import { aggregate, plural, type RbacRuleResolver } from './resolver.js';
import { covers, describeMissing, goQuotedList, type Rule } from './rules.js';

/** Group whose members may write any RBAC object (upstream's EscalationAllowed). */
const PRIVILEGED_GROUP = 'system:masters';

/** What the aggregationRule needs: every verb on every resource and every non-resource URL. */
const FULL_AUTHORITY: PolicyRule[] = [
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'] },
  { verbs: ['*'], nonResourceURLs: ['*'] },
];

export interface EscalationDeps {
  /** The caller's RBAC rules (upstream checks coverage against RBAC's rules whatever the modes). */
  resolver: RbacRuleResolver;
  /** The whole authorizer chain, for the escalate and bind verbs. */
  authorizer: () => Authorizer;
}

/** An update that changes only owner references, finalizers or managed fields (upstream's IsOnlyMutatingGCFields). */
export function onlyGcFieldsChanged(next: ApiObject, old: ApiObject): boolean {
  const strip = (o: ApiObject): ApiObject => {
    const { ownerReferences: _o, finalizers: _f, managedFields: _m, selfLink: _s, resourceVersion: _r, ...meta } = o.metadata;
    return { ...o, metadata: meta };
  };
  return jsonEqual(strip(next), strip(old));
}

async function allowed(authz: Authorizer, a: Attributes): Promise<boolean> {
  return (await authz.authorize(a)).decision === 'allow';
}

const attributes = (user: UserInfo, verb: string, group: string, resource: string, namespace: string, name: string): Attributes => ({
  user,
  verb,
  isResourceRequest: true,
  path: '',
  namespace,
  apiGroup: group,
  apiVersion: '*',
  resource,
  subresource: '',
  name,
});

/** Forbidden unless the caller's RBAC rules in `namespace` cover `rules` (upstream's ConfirmNoEscalation). */
function confirmNoEscalation(d: EscalationDeps, rt: ResourceType, name: string, user: UserInfo, namespace: string, rules: readonly Rule[], message?: string): void {
  const owner = d.resolver.rulesFor(user, namespace);
  const { covered, missing } = covers(owner.rules, rules);
  if (covered) return;
  if (message) throw errors.forbidden(groupResourceOf(rt), name, message);
  let msg = `user ${JSON.stringify(user.username)} (groups=${goQuotedList(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${describeMissing(missing)}`;
  if (owner.errors.length) msg += `; resolution errors: [${aggregate(owner.errors)}]`;
  throw errors.forbidden(groupResourceOf(rt), name, msg);
}

async function checkRole(d: EscalationDeps, w: CheckedWrite): Promise<void> {
  const namespace = w.rt.namespaced ? w.namespace : '';
  // the name is the request's: empty on POST, so resourceNames cannot grant escalate for a create
  if (await allowed(d.authorizer(), attributes(w.user, 'escalate', w.rt.group, w.rt.plural, namespace, w.name))) return;
  if (w.old && onlyGcFieldsChanged(w.object, w.old)) return;
  const role = w.object as RoleObject;
  const name = w.object.metadata.name ?? '';
  confirmNoEscalation(d, w.rt, name, w.user, namespace, role.rules ?? []);
  // an aggregationRule can gather anything, so setting (or keeping) one needs full authority
  if (role.aggregationRule || (w.old as RoleObject | undefined)?.aggregationRule) {
    confirmNoEscalation(d, w.rt, name, w.user, namespace, FULL_AUTHORITY, 'must have cluster-admin privileges to use the aggregationRule');
  }
}

async function checkBinding(d: EscalationDeps, w: CheckedWrite): Promise<void> {
  if (w.old && onlyGcFieldsChanged(w.object, w.old)) return;
  const namespace = w.rt.namespaced ? w.namespace : '';
  const ref = (w.object as BindingObject).roleRef as RoleRef;
  const name = w.object.metadata.name ?? '';
  const roleResource = ref.kind === 'Role' ? 'roles' : ref.kind === 'ClusterRole' ? 'clusterroles' : '';
  // `bind` is asked in the binding's namespace and by the role's name, so a grant can be narrowed to some roles
  if (roleResource && (await allowed(d.authorizer(), attributes(w.user, 'bind', ref.apiGroup, roleResource, namespace, ref.name)))) return;
  const r = d.resolver.roleRefRules(ref, namespace, plural);
  if ('error' in r) throw errors.forbidden(groupResourceOf(w.rt), name, r.error);
  confirmNoEscalation(d, w.rt, name, w.user, namespace, r.rules);
}

/** The write check the RBAC kinds declare (ESCALATION_CHECK). */
export function escalationCheck(d: EscalationDeps): WriteCheck {
  return (w) => {
    if (w.user.groups.includes(PRIVILEGED_GROUP)) return;
    switch (w.rt.kind) {
      case 'Role':
      case 'ClusterRole':
        return checkRole(d, w);
      case 'RoleBinding':
      case 'ClusterRoleBinding':
        return checkBinding(d, w);
      default:
        throw errors.internal(new Error(`no escalation rules for kind ${w.rt.kind}`));
    }
  };
}
