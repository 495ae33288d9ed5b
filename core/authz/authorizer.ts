/**
 * Authorization: may this user do this? Authorizers answer allow, deny or no-opinion; a chain asks
 * them in order and the first allow or deny decides; if all have no opinion, the request is denied.
 * The zero value of a decision is deny.
 */
import { isPromise, type MaybePromise } from '../api/maybe-async.js';
import type { UserInfo } from '../api/types.js';

export type Decision = 'deny' | 'allow' | 'no-opinion';

export interface Attributes {
  user: UserInfo;
  verb: string;
  isResourceRequest: boolean;
  path: string;
  namespace: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  name: string;
}

export interface AuthorizerDecision {
  decision: Decision;
  reason: string;
}

/** A rule as RBAC writes it (rbac.authorization.svc.io/v1 PolicyRule). */
export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** What a user may do in a namespace, as far as an authorizer can tell (SelfSubjectRulesReview). */
export interface RulesResult {
  resourceRules: { verbs: string[]; apiGroups?: string[]; resources?: string[]; resourceNames?: string[] }[];
  nonResourceRules: { verbs: string[]; nonResourceURLs?: string[] }[];
  /** Some authorizer could not list its rules (webhooks, ABAC...), so the list may be short. */
  incomplete: boolean;
  evaluationError?: string;
}

export interface Authorizer {
  readonly name: string;
  authorize(a: Attributes): MaybePromise<AuthorizerDecision>;
  /** The rules this authorizer grants `user` in `namespace` ('' for cluster-wide only), when it can list them. */
  rulesFor?(user: UserInfo, namespace: string): MaybePromise<RulesResult>;
}

const NO_OPINION: AuthorizerDecision = { decision: 'no-opinion', reason: '' };

/** Asks each authorizer in order; the first that allows or denies decides. */
export function chain(authorizers: readonly Authorizer[]): Authorizer {
  /** Asks from index `i` on; stays synchronous until an authorizer returns a promise. */
  const askFrom = (a: Attributes, i: number, reasons: string[]): MaybePromise<AuthorizerDecision> => {
    for (; i < authorizers.length; i++) {
      const d = authorizers[i]!.authorize(a);
      if (isPromise(d)) {
        const next = i + 1;
        return d.then((v) => (v.decision !== 'no-opinion' ? v : askFrom(a, next, v.reason ? [...reasons, v.reason] : reasons)));
      }
      if (d.decision !== 'no-opinion') return d;
      if (d.reason) reasons.push(d.reason);
    }
    return reasons.length ? { decision: 'no-opinion', reason: reasons.join('\n') } : NO_OPINION;
  };
  return { name: 'chain', authorize: (a) => askFrom(a, 0, []) };
}

/** Members of these groups are allowed everything, before any other authorizer is asked. */
export function privilegedGroups(groups: readonly string[]): Authorizer {
  const set = new Set(groups);
  const allow: AuthorizerDecision = { decision: 'allow', reason: '' };
  return { name: 'privileged-groups', authorize: (a) => (a.user.groups.some((g) => set.has(g)) ? allow : NO_OPINION) };
}

export function alwaysAllow(): Authorizer {
  const allow: AuthorizerDecision = { decision: 'allow', reason: '' };
  return { name: 'AlwaysAllow', authorize: () => allow };
}

export function alwaysDeny(): Authorizer {
  const deny: AuthorizerDecision = { decision: 'deny', reason: 'Everything is forbidden.' };
  return { name: 'AlwaysDeny', authorize: () => deny };
}

/** Upstream's 403 text: `User "u" cannot get resource "configmaps" in API group "" in the namespace "ns"`. */
export function forbiddenMessage(a: Attributes): string {
  if (!a.isResourceRequest) return `User ${JSON.stringify(a.user.username)} cannot ${a.verb} path ${JSON.stringify(a.path)}`;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const base = `User ${JSON.stringify(a.user.username)} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.apiGroup)}`;
  return a.namespace ? `${base} in the namespace ${JSON.stringify(a.namespace)}` : `${base} at the cluster scope`;
}
