/**
 * The RBAC rule resolver: which rules apply to a user in a namespace, read from listers over the watch
 * cache (never the store), so a request costs a few map lookups however many roles and bindings exist.
 * Bindings are indexed by subject (`u:<user>` and `g:<group>`; a ServiceAccount subject is its user
 * name `system:serviceaccount:<ns>:<name>`, its namespace defaulting to a RoleBinding's own);
 * RoleBindings' index values carry their namespace. The indexes follow every change as the listers
 * apply it, so a new binding counts from the next request on.
 *
 * As upstream's resolver: ClusterRoleBindings first, then (for a namespace) its RoleBindings; a
 * RoleBinding may reference a ClusterRole, whose rules then apply in the binding's namespace only; a
 * binding to a missing role grants nothing and is reported as an error.
 */
import type { UserInfo } from '../../api/types.js';
import type { DeepReadonly, Lister, Listers } from '../../registry/lister.js';
import type { BindingObject, RoleObject, RoleRef, Subject } from '../../registry/rbac/policy.js';
import type { Rule } from './rules.js';
import { RBAC_GROUP } from '../../registry/rbac/policy.js';
import type { ResourceType } from '../../registry/resource-type.js';

type Binding = DeepReadonly<BindingObject>;

const SUBJECT_INDEX = 'rbac-subject';
const singular = (kind: 'Role' | 'ClusterRole'): string => kind.toLowerCase();
/** Plural resource names, as the registry's errors spell them. */
export const plural = (kind: 'Role' | 'ClusterRole'): string => `${kind.toLowerCase()}s`;
const SA_PREFIX = 'system:serviceaccount:';

/** The index key of one subject of a binding in `bindingNamespace` ('' for ClusterRoleBindings); undefined when it can match nobody. */
export function subjectKey(s: DeepReadonly<Subject>, bindingNamespace: string): string | undefined {
  switch (s.kind) {
    case 'User':
      return `u:${s.name}`;
    case 'Group':
      return `g:${s.name}`;
    case 'ServiceAccount': {
      const ns = s.namespace || bindingNamespace;
      return ns ? `u:${SA_PREFIX}${ns}:${s.name}` : undefined;
    }
    default:
      return undefined;
  }
}

/** Where a rule came from, worded as upstream's RBAC reasons (`RoleBinding "b/ns" of Role "r" to User "u"`). */
export interface RuleSource {
  binding: Binding;
  subject: DeepReadonly<Subject>;
}

export function describeSource(src: RuleSource): string {
  const b = src.binding;
  const ns = b.metadata.namespace ?? '';
  const s = src.subject;
  const subject = s.kind === 'ServiceAccount' ? `${s.kind} ${JSON.stringify(`${s.name}/${s.namespace || ns}`)}` : `${s.kind} ${JSON.stringify(s.name)}`;
  const what = ns ? `RoleBinding ${JSON.stringify(`${b.metadata.name}/${ns}`)}` : `ClusterRoleBinding ${JSON.stringify(b.metadata.name)}`;
  return `${what} of ${b.roleRef.kind} ${JSON.stringify(b.roleRef.name)} to ${subject}`;
}

/**
 * Visits the rules that apply; return false to stop. `err` reports a binding whose role is missing
 * (its rules are then absent).
 */
export type RuleVisitor = (src: RuleSource, rule: Rule | undefined, err: string | undefined) => boolean;

export interface RbacKinds {
  roles: ResourceType;
  clusterRoles: ResourceType;
  roleBindings: ResourceType;
  clusterRoleBindings: ResourceType;
}

export class RbacRuleResolver {
  private readonly roles: Lister<RoleObject>;
  private readonly clusterRoles: Lister<RoleObject>;
  private readonly roleBindings: Lister<BindingObject>;
  private readonly clusterRoleBindings: Lister<BindingObject>;

  constructor(listers: Listers, kinds: RbacKinds) {
    this.roles = listers.for<RoleObject>(kinds.roles);
    this.clusterRoles = listers.for<RoleObject>(kinds.clusterRoles);
    this.roleBindings = listers.for<BindingObject>(kinds.roleBindings);
    this.clusterRoleBindings = listers.for<BindingObject>(kinds.clusterRoleBindings);
    this.clusterRoleBindings.addIndex(SUBJECT_INDEX, (b) => subjectKeys(b, ''));
    this.roleBindings.addIndex(SUBJECT_INDEX, (b) => {
      const ns = b.metadata.namespace ?? '';
      return subjectKeys(b, ns).map((k) => `${ns}|${k}`);
    });
  }

  /**
   * The rules of the role a binding in `namespace` refers to, or why there are none. Missing roles are
   * named by `resourceWord` (the authorizer says `role`, as upstream's listers do; the registry's
   * escalation check says `roles`, as upstream's storage does).
   */
  roleRefRules(ref: DeepReadonly<RoleRef>, namespace: string, resourceWord: (kind: 'Role' | 'ClusterRole') => string = singular): { rules: readonly Rule[] } | { error: string } {
    if (ref.kind === 'ClusterRole') {
      const role = this.clusterRoles.get('', ref.name);
      return role ? { rules: role.rules ?? [] } : { error: `${resourceWord('ClusterRole')}.${RBAC_GROUP} ${JSON.stringify(ref.name)} not found` };
    }
    if (ref.kind === 'Role') {
      const role = namespace ? this.roles.get(namespace, ref.name) : undefined;
      return role ? { rules: role.rules ?? [] } : { error: `${resourceWord('Role')}.${RBAC_GROUP} ${JSON.stringify(ref.name)} not found` };
    }
    return { error: `unsupported role reference kind: ${JSON.stringify(ref.kind)}` };
  }

  /** Visits ClusterRoleBindings, then RoleBindings of `namespace` (when given), that name the user or one of its groups. */
  visitRules(user: UserInfo, namespace: string, visit: RuleVisitor): void {
    const keys = userKeys(user);
    const seen = new Set<Binding>();
    const visitBinding = (b: Binding, key: string, ns: string): boolean => {
      if (seen.has(b)) return true;
      seen.add(b);
      const subject = b.subjects?.find((s) => subjectKey(s, ns) === key);
      if (!subject) return true;
      const src: RuleSource = { binding: b, subject };
      const r = this.roleRefRules(b.roleRef, ns);
      if ('error' in r) return visit(src, undefined, r.error);
      for (const rule of r.rules) if (!visit(src, rule, undefined)) return false;
      return true;
    };
    for (const key of keys) {
      for (const b of this.clusterRoleBindings.byIndex(SUBJECT_INDEX, key)) if (!visitBinding(b, key, '')) return;
    }
    if (!namespace) return;
    for (const key of keys) {
      for (const b of this.roleBindings.byIndex(SUBJECT_INDEX, `${namespace}|${key}`)) if (!visitBinding(b, key, namespace)) return;
    }
  }

  /** Every rule that applies to the user in `namespace` ('' for cluster-wide bindings only), and the errors met. */
  rulesFor(user: UserInfo, namespace: string): { rules: Rule[]; errors: string[] } {
    const rules: Rule[] = [];
    const errors: string[] = [];
    this.visitRules(user, namespace, (_src, rule, err) => {
      if (rule) rules.push(rule);
      if (err) errors.push(err);
      return true;
    });
    return { rules, errors };
  }
}

function subjectKeys(b: Binding, bindingNamespace: string): string[] {
  const out: string[] = [];
  for (const s of b.subjects ?? []) {
    const k = subjectKey(s, bindingNamespace);
    if (k && !out.includes(k)) out.push(k);
  }
  return out;
}

/** The index keys a user matches: its name and each of its groups. */
function userKeys(user: UserInfo): string[] {
  const keys = [`u:${user.username}`];
  for (const g of user.groups) keys.push(`g:${g}`);
  return keys;
}

/** Go's aggregate error text: one error as is, several in brackets. */
export const aggregate = (errs: readonly string[]): string => (errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`);

/** One resolver (and one set of indexes) per set of listers. */
const resolvers = new WeakMap<Listers, RbacRuleResolver>();

export function rbacResolverFor(listers: Listers, kinds: RbacKinds): RbacRuleResolver {
  let r = resolvers.get(listers);
  if (!r) resolvers.set(listers, (r = new RbacRuleResolver(listers, kinds)));
  return r;
}

/** The four RBAC kinds among the served types; undefined when the group is not served (--runtime-config). */
export function rbacKindsOf(types: readonly ResourceType[]): RbacKinds | undefined {
  const find = (plural: string) => types.find((t) => t.group === RBAC_GROUP && t.plural === plural && !t.virtual);
  const roles = find('roles');
  const clusterRoles = find('clusterroles');
  const roleBindings = find('rolebindings');
  const clusterRoleBindings = find('clusterrolebindings');
  if (!roles || !clusterRoles || !roleBindings || !clusterRoleBindings) return undefined;
  return { roles, clusterRoles, roleBindings, clusterRoleBindings };
}
