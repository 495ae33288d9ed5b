/**
 * RBAC rule semantics, pure: whether a rule allows a request (verbs, API groups in either spelling,
 * resources including
 * `<resource>/<subresource>` and `*\/<subresource>`, resource names, non-resource URLs with a
 * trailing `*`), whether one set of rules covers another (escalation checks: every permission broken
 * down to one verb, group, resource and name, and each piece covered by some owner rule), and the
 * compact text upstream uses to name missing permissions in a Forbidden message.
 */
import type { Attributes } from '../authorizer.js';
import type { DeepReadonly } from '../../registry/lister.js';
import type { PolicyRule } from '../../registry/rbac/policy.js';
import { canonicalSpelling } from '../../api/group-aliases.js';
import { goQuote } from '../../api/validation.js';

/** A rule as read from a lister (shared, read-only). */
export type Rule = DeepReadonly<PolicyRule>;

export const ALL = '*';

const has = (list: readonly string[] | undefined, v: string): boolean => list !== undefined && list.includes(v);

export const verbMatches = (r: Rule, verb: string): boolean => r.verbs.some((v) => v === ALL || v === verb);

/**
 * Whether a rule's group names `group`, the canonical group of the request (requests under an upstream
 * alias are mapped before authorization): upstream manifests name `storage.k8s.io` where this server
 * serves `storage.svc.io`, and such a rule grants both spellings. A group of someone else's spelled
 * `*.k8s.io` (a custom resource's own) is only ever matched as written.
 */
export const groupNames = (ruleGroup: string, group: string): boolean => ruleGroup === group || canonicalSpelling(ruleGroup) === group;

export const apiGroupMatches = (r: Rule, group: string): boolean => (r.apiGroups ?? []).some((g) => g === ALL || groupNames(g, group));

/** `resource` or `resource/subresource`; a rule's `*` matches all, `*\/sub` matches that subresource of any resource. */
export function resourceMatches(r: Rule, combined: string, subresource: string): boolean {
  for (const res of r.resources ?? []) {
    if (res === ALL || res === combined) return true;
    if (subresource && res.length === subresource.length + 2 && res.startsWith('*/') && res.endsWith(subresource)) return true;
  }
  return false;
}

/** No names in the rule: any object; otherwise only those named (so never a list or a create). */
export const resourceNameMatches = (r: Rule, name: string): boolean => !r.resourceNames?.length || r.resourceNames.includes(name);

export function nonResourceURLMatches(r: Rule, path: string): boolean {
  for (const url of r.nonResourceURLs ?? []) {
    if (url === ALL || url === path) return true;
    if (url.endsWith('*') && path.startsWith(url.replace(/\*+$/, ''))) return true;
  }
  return false;
}

/** Whether `r` allows the request described by `a` (upstream's RuleAllows). */
export function ruleAllows(a: Attributes, r: Rule): boolean {
  if (!a.isResourceRequest) return verbMatches(r, a.verb) && nonResourceURLMatches(r, a.path);
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  return verbMatches(r, a.verb) && apiGroupMatches(r, a.apiGroup) && resourceMatches(r, combined, a.subresource) && resourceNameMatches(r, a.name);
}

// ---------------------------------------------------------------------------------------------
// Coverage (escalation checks)

/** One rule per verb x group x resource x name (and per verb x URL): the pieces coverage is decided on. */
export function breakdownRule(r: Rule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const group of r.apiGroups ?? []) {
    for (const resource of r.resources ?? []) {
      for (const verb of r.verbs) {
        if (r.resourceNames?.length) for (const name of r.resourceNames) out.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [name] });
        else out.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
      }
    }
  }
  for (const url of r.nonResourceURLs ?? []) for (const verb of r.verbs) out.push({ nonResourceURLs: [url], verbs: [verb] });
  return out;
}

/**
 * Whether an owner's group grants every request group a wanted rule's group does (the group as written
 * and its canonical spelling): an owner's `storage.k8s.io` covers a wanted `storage.svc.io`, while a
 * wanted `x.k8s.io` needs the owner to name `x.k8s.io` itself, since a request may carry that group as
 * written (a custom resource group of that spelling). The default roles name both spellings.
 */
const groupCovers = (owner: string, wanted: string): boolean => groupNames(owner, wanted) && groupNames(owner, canonicalSpelling(wanted));

const hasAll = (set: readonly string[] | undefined, want: readonly string[] | undefined): boolean => (want ?? []).every((w) => has(set, w));

function resourcesCovered(owner: readonly string[] | undefined, wanted: readonly string[] | undefined): boolean {
  if (has(owner, ALL) || hasAll(owner, wanted)) return true;
  for (const path of wanted ?? []) {
    if (has(owner, path)) continue;
    const slash = path.indexOf('/');
    if (slash < 0 || !has(owner, `*/${path.slice(slash + 1)}`)) return false;
  }
  return true;
}

const urlCovers = (owner: string, path: string): boolean => owner === path || (owner.endsWith('*') && path.startsWith(owner.replace(/\*+$/, '')));

const urlsCovered = (owner: readonly string[] | undefined, wanted: readonly string[] | undefined): boolean =>
  (wanted ?? []).every((path) => (owner ?? []).some((o) => urlCovers(o, path)));

/** Whether `owner` grants everything `sub` (one broken-down piece) does. */
export function ruleCovers(owner: Rule, sub: Rule): boolean {
  const verbs = has(owner.verbs, ALL) || hasAll(owner.verbs, sub.verbs);
  const groups = has(owner.apiGroups, ALL) || (sub.apiGroups ?? []).every((g) => (owner.apiGroups ?? []).some((o) => groupCovers(o, g)));
  const names = sub.resourceNames?.length ? !owner.resourceNames?.length || hasAll(owner.resourceNames, sub.resourceNames) : !owner.resourceNames?.length;
  return verbs && groups && resourcesCovered(owner.resources, sub.resources) && names && urlsCovered(owner.nonResourceURLs, sub.nonResourceURLs);
}

/** Whether `owner` covers every rule of `wanted`; the pieces it does not cover. */
export function covers(owner: readonly Rule[], wanted: readonly Rule[]): { covered: boolean; missing: PolicyRule[] } {
  const missing: PolicyRule[] = [];
  for (const rule of wanted) {
    for (const piece of breakdownRule(rule)) if (!owner.some((o) => ruleCovers(o, piece))) missing.push(piece);
  }
  return { covered: missing.length === 0, missing };
}

/**
 * Joins pieces that differ only by verb (one group, one resource, at most one name, nothing else),
 * as upstream's CompactRules does for the missing-permission list.
 */
export function compactRules(rules: readonly Rule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const simple = new Map<string, PolicyRule>();
  for (const r of rules) {
    const isSimple = !r.nonResourceURLs?.length && (r.resourceNames?.length ?? 0) <= 1 && r.apiGroups?.length === 1 && r.resources?.length === 1;
    if (!isSimple) {
      out.push(structuredClone(r) as PolicyRule);
      continue;
    }
    const key = JSON.stringify([r.apiGroups![0], r.resources![0], r.resourceNames?.[0] ?? null]);
    const seen = simple.get(key);
    if (seen) seen.verbs.push(...r.verbs);
    else simple.set(key, structuredClone(r) as PolicyRule);
  }
  return [...out, ...simple.values()];
}

const goList = (values: readonly string[]): string => `[${values.map(goQuote).join(' ')}]`;

/** Upstream's CompactString: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`. */
export function compactString(r: Rule): string {
  const parts: string[] = [];
  if (r.apiGroups?.length) parts.push(`APIGroups:${goList(r.apiGroups)}`);
  if (r.resources?.length) parts.push(`Resources:${goList(r.resources)}`);
  if (r.nonResourceURLs?.length) parts.push(`NonResourceURLs:${goList(r.nonResourceURLs)}`);
  if (r.resourceNames?.length) parts.push(`ResourceNames:${goList(r.resourceNames)}`);
  if (r.verbs.length) parts.push(`Verbs:${goList(r.verbs)}`);
  return `{${parts.join(', ')}}`;
}

/** Go's %q of a []string: `["a" "b"]`. */
export const goQuotedList = goList;

/** The missing permissions as upstream lists them: compacted, one per line, sorted. */
export function describeMissing(missing: readonly Rule[]): string {
  const lines = [...new Set(compactRules(missing).map(compactString))];
  lines.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return lines.join('\n');
}
