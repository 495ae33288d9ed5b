/**
 * The RBAC authorization mode: allows a request when some rule bound to the user (directly, by a
 * group, or as a service account) allows it; otherwise it has no opinion (RBAC never denies), and the
 * reason names bindings whose role is missing, as upstream's does. Rules are read through the
 * resolver's indexes on every request; nothing is cached beyond the listers, so changes count at once.
 */
import type { UserInfo } from '../../api/types.js';
import type { Attributes, Authorizer, AuthorizerDecision, RulesResult } from '../authorizer.js';
import { aggregate, describeSource, type RbacRuleResolver } from './resolver.js';
import { ruleAllows } from './rules.js';

const NO_OPINION: AuthorizerDecision = { decision: 'no-opinion', reason: '' };

export function rbacAuthorizer(resolver: RbacRuleResolver): Authorizer {
  const authorize = (a: Attributes): AuthorizerDecision => {
    let allowedBy: string | undefined;
    let errors: string[] | undefined;
    resolver.visitRules(a.user, a.namespace, (src, rule, err) => {
      if (err) (errors ??= []).push(err);
      if (rule && ruleAllows(a, rule)) {
        allowedBy = describeSource(src);
        return false;
      }
      return true;
    });
    if (allowedBy !== undefined) return { decision: 'allow', reason: `RBAC: allowed by ${allowedBy}` };
    return errors ? { decision: 'no-opinion', reason: `RBAC: ${aggregate(errors)}` } : NO_OPINION;
  };

  const rulesFor = (user: UserInfo, namespace: string): RulesResult => {
    const { rules, errors } = resolver.rulesFor(user, namespace);
    const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false };
    for (const r of rules) {
      if (r.resources?.length) {
        const rr: RulesResult['resourceRules'][number] = { verbs: [...r.verbs] };
        if (r.apiGroups) rr.apiGroups = [...r.apiGroups];
        rr.resources = [...r.resources];
        if (r.resourceNames?.length) rr.resourceNames = [...r.resourceNames];
        out.resourceRules.push(rr);
      }
      if (r.nonResourceURLs?.length) out.nonResourceRules.push({ verbs: [...r.verbs], nonResourceURLs: [...r.nonResourceURLs] });
    }
    if (errors.length) out.evaluationError = aggregate(errors);
    return out;
  };

  return { name: 'RBAC', authorize, rulesFor };
}
