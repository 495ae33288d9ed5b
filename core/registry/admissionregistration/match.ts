/**
 * The admissionregistration pieces webhooks and policies share (upstream's admissionregistration/v1
 * Rule, RuleWithOperations, NamedRuleWithOperations, MatchResources, MatchCondition): their schemas,
 * defaults, field validation with upstream's wording, and matching a write against them.
 *
 * Matching follows upstream's rules matcher and generic policy matcher: a rule matches on operation,
 * group, version, `resource/subresource` (each may be `*`; `x/*` any subresource of x, `*\/y` the
 * subresource y of anything) and scope; resourceNames narrow a named rule; excludeResourceRules win
 * over resourceRules; the namespace selector looks at the namespace's labels (a Namespace's own labels
 * for namespaces; cluster-scoped objects always pass); the object selector at the labels of the new or
 * the old object. Groups in rules may be spelled `<name>.k8s.io`: they stand for `<name>.svc.io`.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { canonicalSpelling } from '../../api/group-aliases.js';
import { labelSelectorFromObject, type LabelSelectorObject, validateLabelSelector } from '../../api/selectors.js';
import type { ApiObject } from '../../api/types.js';
import { invalidEach, isQualifiedName, isValidPathSegmentName } from '../../api/validation.js';
import { labelSelectorSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

export const ADMISSIONREGISTRATION_GROUP = 'admissionregistration.svc.io';
const NS = 'io.svc.api.admissionregistration.v1';

// ---------------------------------------------------------------------------------------------
// Types

export type RuleOperation = '*' | 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface Rule {
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

export interface RuleWithOperations extends Rule {
  operations?: string[];
}

export interface NamedRuleWithOperations extends RuleWithOperations {
  resourceNames?: string[];
}

export interface MatchResources {
  namespaceSelector?: LabelSelectorObject | null;
  objectSelector?: LabelSelectorObject | null;
  resourceRules?: NamedRuleWithOperations[];
  excludeResourceRules?: NamedRuleWithOperations[];
  matchPolicy?: string;
}

export interface MatchCondition {
  name?: string;
  expression?: string;
}

export const supportedOperations: readonly string[] = ['*', 'CONNECT', 'CREATE', 'DELETE', 'UPDATE'];
export const supportedScopes: readonly string[] = ['*', 'Cluster', 'Namespaced'];
export const supportedMatchPolicies: readonly string[] = ['Equivalent', 'Exact'];
export const supportedFailurePolicies: readonly string[] = ['Fail', 'Ignore'];
export const MAX_MATCH_CONDITIONS = 64;

// ---------------------------------------------------------------------------------------------
// Schemas

const strings = (description: string) => s.list(s.string(), { listType: 'atomic', description });

const ruleFields = () => ({
  apiGroups: strings("The API groups the rule covers; '' is the core group, '*' all groups (then the only entry)."),
  apiVersions: strings("The API versions the rule covers; '*' all versions (then the only entry)."),
  resources: strings("The resources the rule covers: 'pods', 'pods/log' (a subresource), 'pods/*', '*/scale', '*' (every resource, no subresources) or '*/*'."),
  scope: s.string({ ptr: true, description: "Cluster, Namespaced or '*' (the default): which objects by scope the rule covers." }),
});

const operationsField = () => strings("CREATE, UPDATE, DELETE, CONNECT, or '*' for all (then the only entry).");

export const ruleWithOperationsSchema = s.struct(`${NS}.RuleWithOperations`, { operations: operationsField(), ...ruleFields() }, {
  typeDescription: 'Operations and resources a rule covers: it matches a request when every part matches.',
});

export const namedRuleWithOperationsSchema = s.struct(
  `${NS}.NamedRuleWithOperations`,
  {
    resourceNames: strings('Names of the objects the rule is limited to; empty: every object.'),
    operations: operationsField(),
    ...ruleFields(),
  },
  { mapType: 'atomic', typeDescription: 'A rule with operations, optionally limited to named objects.' },
);

export const matchResourcesSchema = s.struct(
  `${NS}.MatchResources`,
  {
    namespaceSelector: s.field(labelSelectorSchema, { ptr: true, description: "Which namespaces' objects are covered, by the namespace's labels; cluster-scoped objects other than namespaces are always covered. Default: every namespace." }),
    objectSelector: s.field(labelSelectorSchema, { ptr: true, description: 'Which objects are covered by their labels (the new or the old object). Default: every object.' }),
    resourceRules: s.list(namedRuleWithOperationsSchema, { listType: 'atomic', description: 'The operations on resources covered: any rule matching is enough.' }),
    excludeResourceRules: s.list(namedRuleWithOperationsSchema, { listType: 'atomic', description: 'Operations on resources never covered, whatever resourceRules say.' }),
    matchPolicy: s.string({ ptr: true, description: 'Exact: only the listed group versions; Equivalent (the default): also a request to another version of a listed resource.' }),
  },
  { mapType: 'atomic', typeDescription: 'Which requests are covered: by resource rules, namespace and object labels.' },
);

export const matchConditionSchema = s.struct(
  `${NS}.MatchCondition`,
  {
    name: s.string({ always: true, description: 'Identifies the condition (a qualified name, unique in its list).' }),
    expression: s.string({ always: true, description: 'A CEL expression that must evaluate to a bool: the request is covered only when every condition is true.' }),
  },
  { required: ['name', 'expression'], typeDescription: 'A CEL condition the request must meet to be covered.' },
);

export const matchConditionsField = (description: string) =>
  s.list(matchConditionSchema, { listType: 'map', listMapKeys: ['name'], patchStrategy: 'merge', patchMergeKey: 'name', description });

// ---------------------------------------------------------------------------------------------
// Defaults (upstream's SetDefaults_Rule and SetDefaults_MatchResources)

export function defaultRule(r: Rule | undefined): void {
  if (r && typeof r === 'object') r.scope ??= '*';
}

export function defaultMatchResources(m: MatchResources | undefined): void {
  if (!m || typeof m !== 'object') return;
  m.namespaceSelector ??= {};
  m.objectSelector ??= {};
  m.matchPolicy ??= 'Equivalent';
  for (const r of m.resourceRules ?? []) defaultRule(r);
  for (const r of m.excludeResourceRules ?? []) defaultRule(r);
}

// ---------------------------------------------------------------------------------------------
// Validation (upstream's validateRuleWithOperations, validateNamedRuleWithOperations, validateMatchResources, validateMatchConditions)

const hasWildcard = (l: readonly string[]): boolean => l.includes('*');

function validateResources(resources: readonly string[], path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (resources.length === 0) errs.push(fieldErrors.required(path));
  const wildSub = new Set<string>();
  const wildRes = new Set<string>();
  let doubleWild = false;
  let singleWild = false;
  let plain = false;
  resources.forEach((rs, i) => {
    if (rs === '') {
      errs.push(fieldErrors.required(`${path}[${i}]`));
      return;
    }
    if (rs === '*/*') doubleWild = true;
    if (rs === '*') singleWild = true;
    const slash = rs.indexOf('/');
    if (slash < 0) {
      plain = rs !== '*';
      return;
    }
    const res = rs.slice(0, slash);
    const sub = rs.slice(slash + 1);
    if (wildSub.has(res)) errs.push(fieldErrors.invalid(`${path}[${i}]`, rs, `if '${res}/*' is present, must not specify ${rs}`));
    if (wildRes.has(sub)) errs.push(fieldErrors.invalid(`${path}[${i}]`, rs, `if '*/${sub}' is present, must not specify ${rs}`));
    if (sub === '*') wildSub.add(res);
    if (res === '*') wildRes.add(sub);
  });
  if (resources.length > 1 && doubleWild) errs.push(fieldErrors.invalid(path, resources, "if '*/*' is present, must not specify other resources"));
  if (singleWild && plain) errs.push(fieldErrors.invalid(path, resources, "if '*' is present, must not specify other resources without subresources"));
  return errs;
}

export function validateRule(r: Rule, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const groups = r.apiGroups ?? [];
  const versions = r.apiVersions ?? [];
  if (groups.length === 0) errs.push(fieldErrors.required(`${path}.apiGroups`));
  if (groups.length > 1 && hasWildcard(groups)) errs.push(fieldErrors.invalid(`${path}.apiGroups`, groups, "if '*' is present, must not specify other API groups"));
  if (versions.length === 0) errs.push(fieldErrors.required(`${path}.apiVersions`));
  if (versions.length > 1 && hasWildcard(versions)) errs.push(fieldErrors.invalid(`${path}.apiVersions`, versions, "if '*' is present, must not specify other API versions"));
  versions.forEach((v, i) => {
    if (v === '') errs.push(fieldErrors.required(`${path}.apiVersions[${i}]`));
  });
  errs.push(...validateResources(r.resources ?? [], `${path}.resources`));
  if (r.scope != null && !supportedScopes.includes(r.scope)) errs.push(fieldErrors.notSupported(`${path}.scope`, r.scope, supportedScopes));
  return errs;
}

export function validateRuleWithOperations(r: RuleWithOperations, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const ops = r.operations ?? [];
  if (ops.length === 0) errs.push(fieldErrors.required(`${path}.operations`));
  if (ops.length > 1 && hasWildcard(ops)) errs.push(fieldErrors.invalid(`${path}.operations`, ops, "if '*' is present, must not specify other operations"));
  ops.forEach((op, i) => {
    if (!supportedOperations.includes(op)) errs.push(fieldErrors.notSupported(`${path}.operations[${i}]`, op, supportedOperations));
  });
  errs.push(...validateRule(r, path));
  return errs;
}

export function validateNamedRuleWithOperations(r: NamedRuleWithOperations, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  (r.resourceNames ?? []).forEach((n, i) => {
    errs.push(...invalidEach(`${path}.resourceNames[${i}]`, n, isValidPathSegmentName(n)));
    if (seen.has(n)) errs.push(fieldErrors.duplicate(`${path}.resourceNames[${i}]`, n));
    seen.add(n);
  });
  errs.push(...validateRuleWithOperations(r, path));
  return errs;
}

/** A MatchResources (policies' matchConstraints, bindings' matchResources); absent is valid. */
export function validateMatchResources(m: MatchResources | undefined | null, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!m) return errs;
  if (m.matchPolicy == null) errs.push(fieldErrors.required(`${path}.matchPolicy`));
  else if (!supportedMatchPolicies.includes(m.matchPolicy)) errs.push(fieldErrors.notSupported(`${path}.matchPolicy`, m.matchPolicy, supportedMatchPolicies));
  if (m.namespaceSelector == null) errs.push(fieldErrors.required(`${path}.namespaceSelector`));
  else errs.push(...validateLabelSelector(m.namespaceSelector, `${path}.namespaceSelector`));
  if (m.objectSelector == null) errs.push(fieldErrors.required(`${path}.objectSelector`));
  else errs.push(...validateLabelSelector(m.objectSelector, `${path}.objectSelector`));
  (m.resourceRules ?? []).forEach((r, i) => errs.push(...validateNamedRuleWithOperations(r, `${path}.resourceRules[${i}]`)));
  (m.excludeResourceRules ?? []).forEach((r, i) => errs.push(...validateNamedRuleWithOperations(r, `${path}.excludeResourceRules[${i}]`)));
  return errs;
}

/**
 * Match conditions: at most 64, names qualified and unique, expressions present; `compile` checks an
 * expression (trimmed) and returns the field errors of one that does not compile.
 */
export function validateMatchConditions(conds: readonly MatchCondition[] | undefined, path: string, compile: (expression: string, path: string) => FieldError[]): FieldError[] {
  const errs: FieldError[] = [];
  const list = conds ?? [];
  if (list.length > MAX_MATCH_CONDITIONS) errs.push(fieldErrors.tooMany(path, list.length, MAX_MATCH_CONDITIONS));
  const names = new Set<string>();
  list.forEach((c, i) => {
    const p = `${path}[${i}]`;
    const expr = (c.expression ?? '').trim();
    if (!expr) errs.push(fieldErrors.required(`${p}.expression`));
    else errs.push(...compile(expr, `${p}.expression`));
    const name = c.name ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`));
    else errs.push(...invalidEach(`${p}.name`, name, isQualifiedName(name)));
    if (name) {
      if (names.has(name)) errs.push(fieldErrors.duplicate(`${p}.name`, name));
      names.add(name);
    }
  });
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Matching

/** What a rule is matched against: one write as admission sees it. */
export interface MatchRequest {
  operation: string;
  /** Canonical group (svc.io spelling), version and plural of the resource. */
  group: string;
  version: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** Whether the resource is namespaced (for rule scopes). */
  namespaced: boolean;
}

export const matchRequestOf = (rt: ResourceType, operation: string, subresource: string, namespace: string, name: string): MatchRequest => ({
  operation,
  group: rt.group,
  version: rt.version,
  resource: rt.plural,
  subresource,
  namespace,
  name,
  namespaced: rt.namespaced,
});

const groupMatches = (groups: readonly string[] | undefined, group: string): boolean => (groups ?? []).some((g) => g === '*' || canonicalSpelling(g) === group);

function resourceMatches(resources: readonly string[] | undefined, resource: string, sub: string): boolean {
  for (const r of resources ?? []) {
    const slash = r.indexOf('/');
    const res = slash < 0 ? r : r.slice(0, slash);
    const rsub = slash < 0 ? '' : r.slice(slash + 1);
    if ((res === '*' || res === resource) && (rsub === '*' || rsub === sub)) return true;
  }
  return false;
}

function scopeMatches(scope: string | undefined, req: MatchRequest): boolean {
  switch (scope ?? '*') {
    case 'Cluster':
      return !req.namespaced;
    case 'Namespaced':
      return req.namespaced;
    default:
      return true;
  }
}

/** Whether a rule with operations covers the request (group, version and resource as given). */
export function ruleMatches(r: RuleWithOperations, req: MatchRequest): boolean {
  const ops = r.operations ?? [];
  if (!ops.includes('*') && !ops.includes(req.operation)) return false;
  if (!groupMatches(r.apiGroups, req.group)) return false;
  if (!(r.apiVersions ?? []).some((v) => v === '*' || v === req.version)) return false;
  if (!resourceMatches(r.resources, req.resource, req.subresource)) return false;
  return scopeMatches(r.scope, req);
}

export function namedRuleMatches(r: NamedRuleWithOperations, req: MatchRequest): boolean {
  if (!ruleMatches(r, req)) return false;
  const names = r.resourceNames ?? [];
  return names.length === 0 || names.includes(req.name);
}

/**
 * Whether any rule's operations, groups, resources and scope could cover `rt` (any version, any
 * name): the cheap pre-check admission's `handles` uses.
 */
export function rulesCouldMatch(rules: readonly RuleWithOperations[] | undefined, operation: string, rt: ResourceType, subresource: string): boolean {
  const req = matchRequestOf(rt, operation, subresource, rt.namespaced ? 'x' : '', '');
  for (const r of rules ?? []) {
    const ops = r.operations ?? [];
    if (!ops.includes('*') && !ops.includes(operation)) continue;
    if (!groupMatches(r.apiGroups, req.group)) continue;
    if (!resourceMatches(r.resources, req.resource, req.subresource)) continue;
    if (!scopeMatches(r.scope, req)) continue;
    return true;
  }
  return false;
}

/** The labels an object selector tests: the new object's, then the old one's (either may match). */
export function objectSelectorMatches(sel: LabelSelectorObject | null | undefined, object: ApiObject | undefined, oldObject: ApiObject | undefined): boolean {
  if (!sel) return true;
  const selector = labelSelectorFromObject(sel);
  if (selector.empty) return true;
  const labelsOf = (o: ApiObject | undefined) => (o?.metadata?.labels ?? {}) as Record<string, string>;
  return (object !== undefined && selector.matches(labelsOf(object))) || (oldObject !== undefined && selector.matches(labelsOf(oldObject)));
}

/** The policy kinds themselves: admission policies never act on them (upstream's isPolicyResource). */
const POLICY_RESOURCES = new Set(['validatingadmissionpolicies', 'validatingadmissionpolicybindings', 'mutatingadmissionpolicies', 'mutatingadmissionpolicybindings']);
export const isPolicyResource = (rt: Pick<ResourceType, 'group' | 'plural'>): boolean => rt.group === ADMISSIONREGISTRATION_GROUP && POLICY_RESOURCES.has(rt.plural);

/** Whether the write is on a Namespace itself (whose own labels the namespace selector tests). */
export const isNamespaceResource = (req: MatchRequest): boolean => req.group === '' && req.resource === 'namespaces';

/**
 * Whether the namespace selector covers the request. `namespaceLabels` reads a namespace's labels
 * (undefined when it does not exist). Cluster-scoped objects pass; a Namespace is judged by its own
 * labels (new or old).
 */
export function namespaceSelectorMatches(
  sel: LabelSelectorObject | null | undefined,
  req: MatchRequest,
  object: ApiObject | undefined,
  oldObject: ApiObject | undefined,
  namespaceLabels: (ns: string) => Record<string, string> | undefined,
): boolean {
  if (!sel) return true;
  const selector = labelSelectorFromObject(sel);
  if (selector.empty) return true;
  if (isNamespaceResource(req)) return objectSelectorMatches(sel, object, oldObject);
  if (!req.namespace) return true;
  return selector.matches(namespaceLabels(req.namespace) ?? {});
}

/** How a MatchResources matched: the resource (group, version, plural) the rules matched, for request.resource. */
export interface MatchedResource {
  group: string;
  version: string;
  resource: string;
}

export interface MatchInputs {
  req: MatchRequest;
  object: ApiObject | undefined;
  oldObject: ApiObject | undefined;
  namespaceLabels: (ns: string) => Record<string, string> | undefined;
  /**
   * Other served versions of the same group and resource (matchPolicy Equivalent): the versions a
   * rule may name for the request to count as matched.
   */
  equivalentVersions?: () => readonly string[];
}

/**
 * Whether a MatchResources covers the write: selectors, then the exclude rules, then the resource
 * rules (every request matches when `requireRules` is false and there are no rules: a binding's
 * matchResources narrows only what it names). Returns the matched resource, or undefined.
 */
export function matchResources(m: MatchResources | undefined, inputs: MatchInputs, requireRules: boolean): MatchedResource | undefined {
  const { req } = inputs;
  const exact: MatchedResource = { group: req.group, version: req.version, resource: req.resource };
  if (!m) return requireRules ? undefined : exact;
  if (!namespaceSelectorMatches(m.namespaceSelector, req, inputs.object, inputs.oldObject, inputs.namespaceLabels)) return undefined;
  if (!objectSelectorMatches(m.objectSelector, inputs.object, inputs.oldObject)) return undefined;
  if ((m.excludeResourceRules ?? []).some((r) => namedRuleMatches(r, req))) return undefined;
  const rules = m.resourceRules ?? [];
  if (rules.length === 0) return requireRules ? undefined : exact;
  if (rules.some((r) => namedRuleMatches(r, req))) return exact;
  if ((m.matchPolicy ?? 'Equivalent') === 'Equivalent' && inputs.equivalentVersions) {
    for (const v of inputs.equivalentVersions()) {
      if (v === req.version) continue;
      const alt = { ...req, version: v };
      if (rules.some((r) => namedRuleMatches(r, alt))) return { group: req.group, version: v, resource: req.resource };
    }
  }
  return undefined;
}
