/**
 * Quota's vocabulary, shared by the ResourceQuota kind, its controller and its admission plugin:
 * which resource names a quota may name (upstream's standard, quota and integer resource sets),
 * ResourceList arithmetic on quantity texts (add, mask, compare, print sorted), and the object-count
 * evaluators: every served namespaced kind counts towards `count/<plural>.<group>` (`count/<plural>`
 * in the core group) and, for the core kinds upstream counts by object, towards their short name
 * (`configmaps`, `secrets`, ...). A `count/` name may spell a group `<name>.k8s.io`; it counts the
 * same kind as its served `<name>.svc.io` spelling.
 *
 * Compute resources (cpu, memory, requests.*, limits.*, storage) are valid names but have no evaluator
 * on this server (it serves no pods or claims): as upstream without an evaluator, they stay untracked.
 */
import { canonicalSpelling } from '../api/group-aliases.js';
import { Quantity, type ResourceList } from '../api/quantity.js';
import { isQualifiedName } from '../api/validation.js';
import type { ResourceType } from '../registry/resource-type.js';

export const RESOURCE_CPU = 'cpu';
export const RESOURCE_MEMORY = 'memory';

/** upstream's standardResources: names valid without a prefix anywhere a ResourceList is. */
const STANDARD_RESOURCES = new Set([
  'cpu',
  'memory',
  'ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'pods',
  'resourcequotas',
  'services',
  'replicationcontrollers',
  'secrets',
  'configmaps',
  'persistentvolumeclaims',
  'storage',
  'requests.storage',
  'services.nodeports',
  'services.loadbalancers',
]);

/** upstream's standardQuotaResources: unprefixed names the quota system tracks. */
const STANDARD_QUOTA_RESOURCES = new Set([
  'cpu',
  'memory',
  'ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.storage',
  'requests.ephemeral-storage',
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'pods',
  'resourcequotas',
  'services',
  'replicationcontrollers',
  'secrets',
  'persistentvolumeclaims',
  'configmaps',
  'services.nodeports',
  'services.loadbalancers',
]);

/** Resources measured in whole numbers (upstream's integerResources). */
const INTEGER_RESOURCES = new Set([
  'pods',
  'resourcequotas',
  'services',
  'replicationcontrollers',
  'secrets',
  'configmaps',
  'persistentvolumeclaims',
  'services.nodeports',
  'services.loadbalancers',
]);

const REQUESTS_PREFIX = 'requests.';

const isHugePages = (name: string): boolean => name.startsWith('hugepages-') || name.startsWith(`${REQUESTS_PREFIX}hugepages-`);
export const isStandardResourceName = (name: string): boolean => STANDARD_RESOURCES.has(name) || isHugePages(name);
export const isStandardQuotaResourceName = (name: string): boolean => STANDARD_QUOTA_RESOURCES.has(name) || isHugePages(name);

/** Unprefixed names, and names in the project's own (or upstream's) `<brand>.io/` namespace. */
const isNativeResource = (name: string): boolean => !name.includes('/') || name.includes('svc.io/') || name.includes('kubernetes.io/');

/** upstream's IsExtendedResourceName: a prefixed name outside the native namespace (so `count/...` too). */
export function isExtendedResourceName(name: string): boolean {
  if (isNativeResource(name) || name.startsWith(REQUESTS_PREFIX)) return false;
  return isQualifiedName(REQUESTS_PREFIX + name).length === 0;
}

export const isIntegerResourceName = (name: string): boolean => INTEGER_RESOURCES.has(name) || isExtendedResourceName(name);

// ---- ResourceList arithmetic --------------------------------------------------------------------

const q = (v: string | undefined): Quantity => (v === undefined ? Quantity.zero() : (Quantity.tryParse(v) ?? Quantity.zero()));

/** a + b, key by key (upstream's quota.Add: keys of either). */
export function addLists(a: Readonly<ResourceList>, b: Readonly<ResourceList>): ResourceList {
  const out: ResourceList = {};
  for (const [k, v] of Object.entries(a)) out[k] = b[k] === undefined ? v : q(v).add(q(b[k])).toString();
  for (const [k, v] of Object.entries(b)) if (!(k in a)) out[k] = v;
  return out;
}

/** The entries of `list` named in `names`. */
export function maskList(list: Readonly<ResourceList> | undefined, names: Iterable<string>): ResourceList {
  const out: ResourceList = {};
  if (!list) return out;
  for (const n of names) if (list[n] !== undefined) out[n] = list[n];
  return out;
}

/** Whether every entry of `a` is at most its entry in `b` (an entry `b` lacks counts as allowed); the names that exceed. */
export function lessThanOrEqual(a: Readonly<ResourceList>, b: Readonly<ResourceList>): { ok: boolean; exceeded: string[] } {
  const exceeded: string[] = [];
  for (const [k, v] of Object.entries(a)) {
    const limit = b[k];
    if (limit === undefined) continue;
    if (q(v).cmp(q(limit)) > 0) exceeded.push(k);
  }
  return { ok: exceeded.length === 0, exceeded };
}

/** Same keys, equal quantities (upstream's quota.Equals). */
export function listsEqual(a: Readonly<ResourceList> | undefined, b: Readonly<ResourceList> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  for (const k of ka) {
    const other = b?.[k];
    if (other === undefined || q(a![k]).cmp(q(other)) !== 0) return false;
  }
  return true;
}

export function removeZeros(list: Readonly<ResourceList>): ResourceList {
  const out: ResourceList = {};
  for (const [k, v] of Object.entries(list)) if (!q(v).isZero()) out[k] = v;
  return out;
}

/** Names whose quantity is below zero. */
export const negativeNames = (list: Readonly<ResourceList>): string[] => Object.keys(list).filter((k) => q(list[k]).sign() < 0);

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** `name=quantity` joined by commas, sorted by name (upstream's prettyPrint). */
export function prettyPrint(list: Readonly<ResourceList>): string {
  return Object.keys(list)
    .sort(byCodeUnit)
    .map((k) => `${k}=${q(list[k]).toString()}`)
    .join(',');
}

export const prettyPrintNames = (names: Iterable<string>): string => [...names].sort(byCodeUnit).join(',');

// ---- object-count evaluators --------------------------------------------------------------------

/**
 * Core kinds upstream counts under their short name as well (the quota names pods, services and
 * persistentvolumeclaims have their own evaluators upstream; here, where those kinds are never served,
 * only the count matters).
 */
const CORE_ALIASES = new Set(['configmaps', 'secrets', 'resourcequotas', 'replicationcontrollers', 'services', 'persistentvolumeclaims', 'pods']);

/** Kinds quota never counts (upstream's ignored resources): events and every virtual kind (reviews). */
export function quotaIgnores(rt: ResourceType): boolean {
  if (rt.virtual || !rt.namespaced) return true;
  return rt.plural === 'events' && (rt.group === '' || rt.group === 'events.svc.io');
}

/** `count/<plural>` (core) or `count/<plural>.<group>`. */
export const objectCountName = (group: string, plural: string): string => (group ? `count/${plural}.${group}` : `count/${plural}`);

/** A quota resource name as the evaluators know it: `count/x.<name>.k8s.io` read as `count/x.<name>.svc.io`. */
export function canonicalQuotaName(name: string): string {
  if (!name.startsWith('count/')) return name;
  const rest = name.slice(6);
  const dot = rest.indexOf('.');
  if (dot < 0) return name;
  return `count/${rest.slice(0, dot)}.${canonicalSpelling(rest.slice(dot + 1))}`;
}

/** The (canonical) resource names one object of `rt` uses one of. */
export function countedNames(rt: Pick<ResourceType, 'group' | 'plural'>): string[] {
  const names = [objectCountName(rt.group, rt.plural)];
  if (rt.group === '' && CORE_ALIASES.has(rt.plural)) names.push(rt.plural);
  return names;
}

/** The names of `names` (as written in a quota) that objects of `rt` count towards. */
export function matchingResources(rt: Pick<ResourceType, 'group' | 'plural'>, names: Iterable<string>): string[] {
  const mine = countedNames(rt);
  const out: string[] = [];
  for (const n of names) if (mine.includes(canonicalQuotaName(n))) out.push(n);
  return out;
}

/** What one new object of `rt` uses, by the names of `names` it counts towards. */
export function objectUsage(rt: Pick<ResourceType, 'group' | 'plural'>, names: Iterable<string>): ResourceList {
  const out: ResourceList = {};
  for (const n of matchingResources(rt, names)) out[n] = '1';
  return out;
}

/** For a canonical name: the group and plural of the kind it counts (undefined for compute resources). */
export function countedKind(name: string): { group: string; plural: string } | undefined {
  const c = canonicalQuotaName(name);
  if (c.startsWith('count/')) {
    const rest = c.slice(6);
    const dot = rest.indexOf('.');
    return dot < 0 ? { group: '', plural: rest } : { group: rest.slice(dot + 1), plural: rest.slice(0, dot) };
  }
  return CORE_ALIASES.has(c) ? { group: '', plural: c } : undefined;
}

// ---- quota objects ------------------------------------------------------------------------------

export interface ScopedResourceSelectorRequirement {
  scopeName?: string;
  operator?: string;
  values?: string[];
}

export interface ResourceQuotaObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; namespace?: string; resourceVersion?: string; [k: string]: unknown };
  spec?: { hard?: ResourceList; scopes?: string[]; scopeSelector?: { matchExpressions?: ScopedResourceSelectorRequirement[] } };
  status?: { hard?: ResourceList; used?: ResourceList };
}

/** Scopes and scope selector expressions (upstream's getScopeSelectorsFromQuota). */
export function scopeSelectorsOf(quota: ResourceQuotaObject): ScopedResourceSelectorRequirement[] {
  return [...(quota.spec?.scopes ?? []).map((scopeName) => ({ scopeName, operator: 'Exists' })), ...(quota.spec?.scopeSelector?.matchExpressions ?? [])];
}
