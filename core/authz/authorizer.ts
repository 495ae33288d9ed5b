/**
 * Authorization: may this user do this? Authorizers answer allow, deny or no-opinion; a chain asks
 * them in order and the first allow or deny decides; if all have no opinion, the request is denied.
 * The zero value of a decision is deny. Authorizers that can say what a user may do list it as rules
 * (`rulesFor`, for SelfSubjectRulesReview and escalation checks); a chain joins its members' lists.
 */
import { isPromise, type MaybePromise } from '../api/maybe-async.js';
import {
  type FieldRequirement,
  type LabelRequirement,
  parseFieldSelector,
  parseLabelSelector,
  SelectorParseError,
} from '../api/selectors.js';
import type { UserInfo } from '../api/types.js';

export type Decision = 'deny' | 'allow' | 'no-opinion';

/**
 * Requirements of a request's field and label selectors (list, watch and deletecollection, as
 * upstream's AuthorizeWithSelectors passes them). Parsed only when an authorizer asks: most
 * authorizers never look, and most requests have no selector.
 */
export interface SelectorAttributes {
  fieldRequirements(): ParsedRequirements<FieldRequirement>;
  labelRequirements(): ParsedRequirements<LabelRequirement>;
}

export interface ParsedRequirements<R> {
  requirements: readonly R[];
  /** Why the selector could not be (fully) parsed; the requirements may then be partial or empty. */
  error?: string;
}

export interface Attributes {
  /** Who asks: name, uid, groups and extra, as authentication (or a review) gave them. */
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
  /** Present only when the request has a field or label selector. */
  selectors?: SelectorAttributes;
}

export interface AuthorizerDecision {
  decision: Decision;
  reason: string;
  /** Why the authorizer could not evaluate the request (a webhook that failed...): SubjectAccessReview's evaluationError. */
  error?: string;
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
  /** The authorizer's type when it differs from its name (members of --authorization-config: type Webhook, name its own). */
  readonly type?: string;
  authorize(a: Attributes): MaybePromise<AuthorizerDecision>;
  /** The rules this authorizer grants `user` in `namespace` ('' for cluster-wide only), when it can list them. */
  rulesFor?(user: UserInfo, namespace: string): MaybePromise<RulesResult>;
  /** Releases what it holds (connections, timers, file watches) when the server stops. */
  close?(): void;
}

const NO_OPINION: AuthorizerDecision = { decision: 'no-opinion', reason: '' };
const NO_RULES: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false };

/** Go's aggregate error text: one error as is, several in brackets. */
function aggregateErrors(errs: readonly string[]): string {
  return errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`;
}

/** What the chain collected from the members that had no opinion. */
function noOpinion(reasons: string[], errs: string[]): AuthorizerDecision {
  if (!reasons.length && !errs.length) return NO_OPINION;
  const d: AuthorizerDecision = { decision: 'no-opinion', reason: reasons.join('\n') };
  if (errs.length) d.error = aggregateErrors(errs);
  return d;
}

export type DecisionObserver = (z: Authorizer, decision: 'allowed' | 'denied') => void;

/**
 * Told of every terminal decision a chain member makes (apiserver_authorization_decisions_total).
 * Process-wide, as upstream's legacy registry: each running server adds its observer.
 */
export const decisionObservers = new Set<DecisionObserver>();

function decided(z: Authorizer, d: AuthorizerDecision): AuthorizerDecision {
  if (decisionObservers.size) for (const o of decisionObservers) o(z, d.decision === 'allow' ? 'allowed' : 'denied');
  return d;
}

/** Asks each authorizer in order; the first that allows or denies decides (with its own reason and error). */
export function chain(authorizers: readonly Authorizer[]): Authorizer {
  /** Asks from index `i` on; stays synchronous until an authorizer returns a promise. */
  const askFrom = (a: Attributes, i: number, reasons: string[], errs: string[]): MaybePromise<AuthorizerDecision> => {
    for (; i < authorizers.length; i++) {
      const d = authorizers[i]!.authorize(a);
      if (isPromise(d)) {
        const next = i + 1;
        const z = authorizers[i]!;
        return d.then((v) => {
          if (v.decision !== 'no-opinion') return decided(z, v);
          if (v.reason) reasons.push(v.reason);
          if (v.error) errs.push(v.error);
          return askFrom(a, next, reasons, errs);
        });
      }
      if (d.decision !== 'no-opinion') return decided(authorizers[i]!, d);
      if (d.reason) reasons.push(d.reason);
      if (d.error) errs.push(d.error);
    }
    return noOpinion(reasons, errs);
  };
  return {
    name: 'chain',
    authorize: (a) => askFrom(a, 0, [], []),
    rulesFor: (user, ns) => joinRules(authorizers, user, ns),
    close: () => {
      for (const z of authorizers) z.close?.();
    },
  };
}

/** Every member's rules, one list; incomplete when a member cannot list (or says its list is short). */
function joinRules(authorizers: readonly Authorizer[], user: UserInfo, namespace: string): MaybePromise<RulesResult> {
  const parts = authorizers.map((z) => (z.rulesFor ? z.rulesFor(user, namespace) : { ...NO_RULES, incomplete: true }));
  const join = (results: RulesResult[]): RulesResult => {
    const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false };
    const errs: string[] = [];
    for (const r of results) {
      out.resourceRules.push(...r.resourceRules);
      out.nonResourceRules.push(...r.nonResourceRules);
      if (r.incomplete) out.incomplete = true;
      if (r.evaluationError) errs.push(r.evaluationError);
    }
    if (errs.length) out.evaluationError = aggregateErrors(errs);
    return out;
  };
  return parts.some(isPromise) ? Promise.all(parts).then(join) : join(parts as RulesResult[]);
}

/** Members of these groups are allowed everything, before any other authorizer is asked. */
export function privilegedGroups(groups: readonly string[]): Authorizer {
  const set = new Set(groups);
  const allow: AuthorizerDecision = { decision: 'allow', reason: '' };
  // as upstream, the bypass lists no rules of its own: the cluster-admin binding shows them
  return { name: 'privileged-groups', authorize: (a) => (a.user.groups.some((g) => set.has(g)) ? allow : NO_OPINION), rulesFor: () => NO_RULES };
}

export function alwaysAllow(): Authorizer {
  const allow: AuthorizerDecision = { decision: 'allow', reason: '' };
  const everything: RulesResult = {
    resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
    nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
    incomplete: false,
  };
  return { name: 'AlwaysAllow', authorize: () => allow, rulesFor: () => structuredClone(everything) };
}

export function alwaysDeny(): Authorizer {
  const deny: AuthorizerDecision = { decision: 'deny', reason: 'Everything is forbidden.' };
  return { name: 'AlwaysDeny', authorize: () => deny, rulesFor: () => NO_RULES };
}

/** Upstream's 403 text: `User "u" cannot get resource "configmaps" in API group "" in the namespace "ns"`. */
export function forbiddenMessage(a: Attributes): string {
  if (!a.isResourceRequest) return `User ${JSON.stringify(a.user.username)} cannot ${a.verb} path ${JSON.stringify(a.path)}`;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const base = `User ${JSON.stringify(a.user.username)} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.apiGroup)}`;
  return a.namespace ? `${base} in the namespace ${JSON.stringify(a.namespace)}` : `${base} at the cluster scope`;
}

/** Read-only verbs (upstream's Attributes.IsReadOnly). */
export const isReadOnly = (a: Attributes): boolean => a.verb === 'get' || a.verb === 'list' || a.verb === 'watch';

// ---------------------------------------------------------------------------------------------
// Selector attributes

/** Parses on first use and remembers the answer. */
function once<T>(f: () => T): () => T {
  let done = false;
  let v: T;
  return () => {
    if (!done) {
      v = f();
      done = true;
    }
    return v;
  };
}

const parseErr = (e: unknown): string => (e instanceof SelectorParseError ? e.message : String((e as Error)?.message ?? e));

/** Selectors from a request's `fieldSelector` / `labelSelector` query values (undefined when neither is there). */
export function selectorsFromQuery(fieldSelector: string | null, labelSelector: string | null): SelectorAttributes | undefined {
  if (!fieldSelector && !labelSelector) return undefined;
  return selectorsFrom(
    () => (fieldSelector ? parseFieldSelector(fieldSelector).requirements : []),
    () => (labelSelector ? parseLabelSelector(labelSelector).requirements : []),
  );
}

/** Selectors from two parsers; a parser that throws yields no requirements and its error. */
export function selectorsFrom(fields: () => readonly FieldRequirement[], labels: () => readonly LabelRequirement[]): SelectorAttributes {
  const attempt = <R>(f: () => readonly R[]) =>
    once((): ParsedRequirements<R> => {
      try {
        return { requirements: f() };
      } catch (e) {
        return { requirements: [], error: parseErr(e) };
      }
    });
  return { fieldRequirements: attempt(fields), labelRequirements: attempt(labels) };
}
