/**
 * SubjectAccessReview specs and authorization attributes, both ways: what a webhook is sent (and its
 * match conditions see) for a request, and what a review asks the authorizer. Field selector
 * requirements travel as `In` / `NotIn` with one value, label selector requirements as `In`, `NotIn`,
 * `Exists`, `DoesNotExist`; requirements without such a form are left out, which only widens the
 * question (requirements narrow a request), as upstream does.
 */
import { type FieldRequirement, type LabelRequirement, labelSelectorFromObject, parseFieldSelector, parseLabelSelector } from '../api/selectors.js';
import type { UserInfo } from '../api/types.js';
import { type Attributes, selectorsFrom, type SelectorAttributes } from './authorizer.js';

export interface SelectorRequirementSpec {
  key: string;
  operator: string;
  values?: string[];
}

export interface SelectorSpec {
  rawSelector?: string;
  requirements?: SelectorRequirementSpec[];
}

export interface ResourceAttributesSpec {
  namespace?: string;
  verb?: string;
  group?: string;
  version?: string;
  resource?: string;
  subresource?: string;
  name?: string;
  fieldSelector?: SelectorSpec;
  labelSelector?: SelectorSpec;
}

export interface NonResourceAttributesSpec {
  path?: string;
  verb?: string;
}

/** authorization.svc.io/v1 SubjectAccessReviewSpec. */
export interface SubjectAccessReviewSpec {
  resourceAttributes?: ResourceAttributesSpec;
  nonResourceAttributes?: NonResourceAttributesSpec;
  user?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  uid?: string;
}

/** Go's omitempty for the string fields of an attributes struct. */
function compact<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== '' && v !== undefined) out[k] = v;
  return out as T;
}

function fieldRequirementSpecs(reqs: readonly FieldRequirement[]): SelectorRequirementSpec[] {
  return reqs.map((r) => ({ key: r.field, operator: r.operator === '=' ? 'In' : 'NotIn', values: [r.value] }));
}

const labelOperators: Readonly<Record<string, string>> = { '=': 'In', '==': 'In', in: 'In', '!=': 'NotIn', notin: 'NotIn', exists: 'Exists', '!': 'DoesNotExist' };

function labelRequirementSpecs(reqs: readonly LabelRequirement[]): SelectorRequirementSpec[] {
  const out: SelectorRequirementSpec[] = [];
  for (const r of reqs) {
    const operator = labelOperators[r.operator];
    if (!operator) continue; // gt / lt have no form here: dropping a requirement only widens the question
    const spec: SelectorRequirementSpec = { key: r.key, operator };
    if (r.values.length) spec.values = [...r.values];
    out.push(spec);
  }
  return out;
}

/** The v1 spec for a request, as upstream's webhook authorizer builds it (selectors only when `withSelectors`). */
export function specFromAttributes(a: Attributes, withSelectors: boolean): SubjectAccessReviewSpec {
  const spec: SubjectAccessReviewSpec = {};
  if (a.isResourceRequest) {
    const ra: ResourceAttributesSpec = compact({
      namespace: a.namespace,
      verb: a.verb,
      group: a.apiGroup,
      version: a.apiVersion,
      resource: a.resource,
      subresource: a.subresource,
      name: a.name,
    });
    if (withSelectors && a.selectors) {
      const fields = fieldRequirementSpecs(a.selectors.fieldRequirements().requirements);
      if (fields.length) ra.fieldSelector = { requirements: fields };
      const labels = labelRequirementSpecs(a.selectors.labelRequirements().requirements);
      if (labels.length) ra.labelSelector = { requirements: labels };
    }
    spec.resourceAttributes = ra;
  } else {
    spec.nonResourceAttributes = compact({ path: a.path, verb: a.verb });
  }
  const u = a.user;
  if (u.username) spec.user = u.username;
  if (u.groups.length) spec.groups = [...u.groups];
  if (u.extra && Object.keys(u.extra).length) spec.extra = u.extra;
  if (u.uid) spec.uid = u.uid;
  return spec;
}

/**
 * `request` for match conditions: every string field present (empty when unset), as upstream converts
 * the spec; the selector parts only when an expression reads them.
 */
export function celRequest(spec: SubjectAccessReviewSpec, fieldSelector: boolean, labelSelector: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { user: spec.user ?? '', groups: spec.groups ?? [], uid: spec.uid ?? '', extra: spec.extra ?? {} };
  const ra = spec.resourceAttributes;
  if (ra) {
    const r: Record<string, unknown> = {
      namespace: ra.namespace ?? '',
      verb: ra.verb ?? '',
      group: ra.group ?? '',
      version: ra.version ?? '',
      resource: ra.resource ?? '',
      subresource: ra.subresource ?? '',
      name: ra.name ?? '',
    };
    if (fieldSelector && ra.fieldSelector) r.fieldSelector = selectorValue(ra.fieldSelector);
    if (labelSelector && ra.labelSelector) r.labelSelector = selectorValue(ra.labelSelector);
    out.resourceAttributes = r;
  }
  const nra = spec.nonResourceAttributes;
  if (nra) out.nonResourceAttributes = { path: nra.path ?? '', verb: nra.verb ?? '' };
  return out;
}

function selectorValue(s: SelectorSpec): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (s.requirements?.length) out.requirements = s.requirements.map((r) => ({ key: r.key, operator: r.operator, values: r.values ?? [] }));
  if (s.rawSelector) out.rawSelector = s.rawSelector;
  return out;
}

/** Field requirements of a review's selector object (upstream's fieldSelectorAsSelector). */
function fieldRequirementsOf(specs: readonly SelectorRequirementSpec[]): FieldRequirement[] {
  return specs.map((r) => {
    const values = r.values ?? [];
    if (values.length > 1) throw new Error('fieldSelectors do not yet support multiple values');
    switch (r.operator) {
      case 'In':
      case 'NotIn':
        if (values.length !== 1) throw new Error(`fieldSelectors ${r.operator === 'In' ? 'in' : 'not in'} must have one value`);
        return { field: r.key, operator: r.operator === 'In' ? '=' : '!=', value: values[0]! };
      case 'Exists':
      case 'DoesNotExist':
        throw new Error(`fieldSelectors do not yet support ${r.operator}`);
      default:
        throw new Error(`${JSON.stringify(r.operator)} is not a valid field selector operator`);
    }
  });
}

/** A review's selectors as request selectors: requirements win over a raw selector, as upstream reads them. */
function selectorsOfSpec(ra: ResourceAttributesSpec): SelectorAttributes | undefined {
  const f = ra.fieldSelector;
  const l = ra.labelSelector;
  if (!f && !l) return undefined;
  return selectorsFrom(
    () => {
      if (f?.requirements?.length) return fieldRequirementsOf(f.requirements);
      return f?.rawSelector ? parseFieldSelector(f.rawSelector).requirements : [];
    },
    () => {
      if (l?.requirements?.length) return labelSelectorFromObject({ matchExpressions: l.requirements }).requirements;
      return l?.rawSelector ? parseLabelSelector(l.rawSelector).requirements : [];
    },
  );
}

/** The attributes a review asks about (upstream's ResourceAttributesFrom / NonResourceAttributesFrom). */
export function attributesFromSpec(user: UserInfo, spec: Pick<SubjectAccessReviewSpec, 'resourceAttributes' | 'nonResourceAttributes'>, withSelectors: boolean): Attributes {
  const ra = spec.resourceAttributes;
  if (ra) {
    const a: Attributes = {
      user,
      verb: ra.verb ?? '',
      isResourceRequest: true,
      path: '',
      namespace: ra.namespace ?? '',
      apiGroup: ra.group ?? '',
      // an unset version asks about every version
      apiVersion: ra.version || '*',
      resource: ra.resource ?? '',
      subresource: ra.subresource ?? '',
      name: ra.name ?? '',
    };
    const selectors = withSelectors ? selectorsOfSpec(ra) : undefined;
    if (selectors) a.selectors = selectors;
    return a;
  }
  const nra = spec.nonResourceAttributes ?? {};
  return { user, verb: nra.verb ?? '', isResourceRequest: false, path: nra.path ?? '', namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '' };
}
