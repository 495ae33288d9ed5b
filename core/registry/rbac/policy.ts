/**
 * What the four rbac.authorization.svc.io/v1 kinds share: the PolicyRule, Subject, RoleRef and
 * AggregationRule shapes (schemas in Go field order with upstream's JSON tags and atomic markers),
 * their TypeScript types, upstream's defaults (the group of a roleRef and of User/Group subjects) and
 * upstream's validation rules (ValidatePolicyRule, ValidateRoleBindingSubject, the roleRef checks).
 * Names of all four kinds are path segments.
 */
import { type FieldError, fieldErrors, GoLiteral } from '../../api/field-errors.js';
import { upstreamSpelling } from '../../api/group-aliases.js';
import { metadataNameColumn, validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import { labelSelectorFromObject, type LabelSelectorObject, validateLabelSelector } from '../../api/selectors.js';
import type { ApiObject } from '../../api/types.js';
import { goQuote, invalidEach, isValidLabelValue, isValidPathSegmentName, nameIsDNSSubdomain } from '../../api/validation.js';
import { labelSelectorSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { TableColumn } from '../resource-type.js';

export const RBAC_GROUP = 'rbac.authorization.svc.io';
/** The same group as upstream's clients spell it (kubectl create rolebinding, charts): accepted, stored as RBAC_GROUP. */
export const RBAC_GROUP_UPSTREAM = upstreamSpelling(RBAC_GROUP)!;
export const RBAC_PROTOBUF_PACKAGE = 'svc.io.api.rbac.v1';
const RBAC = 'io.svc.api.rbac.v1';
/** The write check every RBAC kind declares (escalation prevention, registered on the main thread). */
export const ESCALATION_CHECK = 'rbac-escalation';

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface Subject {
  kind: string;
  apiGroup?: string;
  name: string;
  namespace?: string;
}

export interface RoleRef {
  apiGroup: string;
  kind: string;
  name: string;
}

export interface AggregationRule {
  clusterRoleSelectors?: LabelSelectorObject[];
}

export interface RoleObject extends ApiObject {
  rules?: PolicyRule[] | null;
  aggregationRule?: AggregationRule;
}

export interface BindingObject extends ApiObject {
  subjects?: Subject[];
  roleRef: RoleRef;
}

// ---------------------------------------------------------------------------------------------
// Schemas

export const policyRuleSchema = s.struct(
  `${RBAC}.PolicyRule`,
  {
    verbs: s.list(s.string(), {
      always: true,
      listType: 'atomic',
      description: 'Verbs the rule allows (get, list, watch, create, update, patch, delete, deletecollection, or others such as bind, escalate, impersonate); * is every verb.',
    }),
    apiGroups: s.list(s.string(), {
      listType: 'atomic',
      description: 'API groups of the resources, "" for the core group; * is every group. Required for resource rules.',
    }),
    resources: s.list(s.string(), {
      listType: 'atomic',
      description: 'Resources as named in URLs; <resource>/<subresource> for a subresource, */<subresource> for that subresource of any resource; * is every resource.',
    }),
    resourceNames: s.list(s.string(), { listType: 'atomic', description: 'Names of the objects the rule is limited to; empty means any object.' }),
    nonResourceURLs: s.list(s.string(), {
      listType: 'atomic',
      description: 'Paths outside the resource API (such as /healthz) the rule allows; a trailing * matches any rest. Only in ClusterRoles, never with resources.',
    }),
  },
  { required: ['verbs'], typeDescription: 'One grant: the verbs allowed on some resources, or on some non-resource paths.' },
);

export const subjectSchema = s.struct(
  `${RBAC}.Subject`,
  {
    kind: s.string({ always: true, description: 'User, Group or ServiceAccount.' }),
    apiGroup: s.string({ description: `${RBAC_GROUP} for User and Group subjects (the default), empty for ServiceAccount.` }),
    name: s.string({ always: true, description: 'Name of the user, group or service account (case-sensitive).' }),
    namespace: s.string({ description: 'Namespace of a ServiceAccount subject; in a RoleBinding it defaults to the binding\'s namespace.' }),
  },
  { required: ['kind', 'name'], mapType: 'atomic', typeDescription: 'Who a binding grants its role to: a user, a group or a service account.' },
);

export const roleRefSchema = s.struct(
  `${RBAC}.RoleRef`,
  {
    apiGroup: s.string({ always: true, description: `Group of the role: ${RBAC_GROUP} (the default).` }),
    kind: s.string({ always: true, description: 'Role or ClusterRole (a ClusterRoleBinding takes only ClusterRole).' }),
    name: s.string({ always: true, description: 'Name of the role.' }),
  },
  { required: ['apiGroup', 'kind', 'name'], mapType: 'atomic', typeDescription: 'The role a binding grants. It cannot be changed: delete and recreate the binding instead.' },
);

export const rulesField = (what: string) =>
  s.list(policyRuleSchema, { always: true, listType: 'atomic', description: `Permissions ${what} grants; there are no deny rules.` });

export const aggregationRuleSchema = s.struct(
  `${RBAC}.AggregationRule`,
  {
    clusterRoleSelectors: s.list(labelSelectorSchema, {
      listType: 'atomic',
      description: 'Label selectors of the ClusterRoles whose rules are gathered into this one; any match is enough.',
    }),
  },
  { typeDescription: 'Makes a ClusterRole the union of other ClusterRoles: a controller keeps its rules equal to theirs.' },
);

export const bindingFields = (scope: string) => ({
  subjects: s.list(subjectSchema, { listType: 'atomic', description: `Users, groups and service accounts the role is granted to ${scope}.` }),
  roleRef: s.field(roleRefSchema, { description: 'The role granted. Immutable: a change is refused; delete and recreate the binding instead.' }),
});

// ---------------------------------------------------------------------------------------------
// Defaults

/** Upstream's spelling of our group, in fields that name it, becomes ours (what is stored is always ours). */
const canonicalGroup = (g: string | undefined): string | undefined => (g === RBAC_GROUP_UPSTREAM ? RBAC_GROUP : g);

/** roleRef.apiGroup and the apiGroup of User and Group subjects default to the RBAC group, as upstream's defaults. */
export function defaultBinding(obj: ApiObject): void {
  const b = obj as BindingObject;
  const ref = (b.roleRef ??= { apiGroup: '', kind: '', name: '' });
  ref.apiGroup = canonicalGroup(ref.apiGroup) || RBAC_GROUP;
  for (const subject of b.subjects ?? []) {
    const g = canonicalGroup(subject.apiGroup);
    if (g) subject.apiGroup = g;
    else if (subject.kind === 'User' || subject.kind === 'Group') subject.apiGroup = RBAC_GROUP;
  }
}

// ---------------------------------------------------------------------------------------------
// Validation

/** Path-segment names for every RBAC object (upstream's ValidateRBACName). */
export const rbacNameRule = 'path-segment' as const;

/** Upstream's ValidatePolicyRule: verbs required; URLs only in cluster rules and never with resources; resource rules need groups and resources. */
export function validatePolicyRule(rule: PolicyRule, namespaced: boolean, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!rule.verbs?.length) errs.push(fieldErrors.required(`${path}.verbs`, 'verbs must contain at least one value'));
  const urls = rule.nonResourceURLs ?? [];
  if (urls.length > 0) {
    const urlValue = new GoLiteral(`[]string{${urls.map(goQuote).join(', ')}}`);
    if (namespaced) errs.push(fieldErrors.invalid(`${path}.nonResourceURLs`, urlValue, 'namespaced rules cannot apply to non-resource URLs'));
    if (rule.apiGroups?.length || rule.resources?.length || rule.resourceNames?.length) {
      errs.push(fieldErrors.invalid(`${path}.nonResourceURLs`, urlValue, 'rules cannot apply to both regular resources and non-resource URLs'));
    }
    return errs;
  }
  if (!rule.apiGroups?.length) errs.push(fieldErrors.required(`${path}.apiGroups`, 'resource rules must supply at least one api group'));
  if (!rule.resources?.length) errs.push(fieldErrors.required(`${path}.resources`, 'resource rules must supply at least one resource'));
  return errs;
}

export function validateRules(rules: readonly PolicyRule[] | null | undefined, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  (rules ?? []).forEach((r, i) => errs.push(...validatePolicyRule(r, namespaced, `rules[${i}]`)));
  return errs;
}

/** Whether any selector of the rule has a label value the current rules reject (kept on update, as upstream allows). */
export function hasInvalidSelectorValues(rule: AggregationRule | undefined): boolean {
  for (const sel of rule?.clusterRoleSelectors ?? []) {
    for (const e of sel.matchExpressions ?? []) if ((e.values ?? []).some((v) => isValidLabelValue(v).length > 0)) return true;
  }
  return false;
}

/** Upstream's aggregationRule checks: at least one selector, each a valid label selector. */
export function validateAggregationRule(rule: AggregationRule | undefined, allowInvalidLabelValue: boolean): FieldError[] {
  if (!rule) return [];
  const errs: FieldError[] = [];
  const selectors = rule.clusterRoleSelectors ?? [];
  if (selectors.length === 0) {
    errs.push(fieldErrors.required('aggregationRule.clusterRoleSelectors', 'at least one clusterRoleSelector required if aggregationRule is non-nil'));
  }
  selectors.forEach((sel, i) => {
    const p = `aggregationRule.clusterRoleSelectors[${i}]`;
    errs.push(...validateLabelSelector(sel, p, { allowInvalidLabelValueInSelector: allowInvalidLabelValue }));
    try {
      labelSelectorFromObject(sel);
    } catch {
      // Go prints the nil selector it failed to build as the string "null"
      errs.push(fieldErrors.invalid(p, 'null', 'invalid label selector.'));
    }
  });
  return errs;
}

/** Upstream's ValidateRoleBindingSubject. */
export function validateSubject(subject: Subject, namespaced: boolean, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!subject.name) errs.push(fieldErrors.required(`${path}.name`, ''));
  switch (subject.kind) {
    case 'ServiceAccount':
      if (subject.name) errs.push(...invalidEach(`${path}.name`, subject.name, nameIsDNSSubdomain(subject.name, false)));
      if (subject.apiGroup) errs.push(fieldErrors.notSupported(`${path}.apiGroup`, subject.apiGroup, ['']));
      if (!namespaced && !subject.namespace) errs.push(fieldErrors.required(`${path}.namespace`, ''));
      break;
    case 'User':
    case 'Group':
      if (subject.apiGroup !== RBAC_GROUP) errs.push(fieldErrors.notSupported(`${path}.apiGroup`, subject.apiGroup ?? '', [RBAC_GROUP]));
      break;
    default:
      errs.push(fieldErrors.notSupported(`${path}.kind`, subject.kind ?? '', ['ServiceAccount', 'User', 'Group']));
  }
  return errs;
}

/** Upstream's binding validation: the roleRef's group, kind (`kinds` allowed) and name, then each subject. */
export function validateBinding(obj: ApiObject, kinds: readonly string[], namespaced: boolean): FieldError[] {
  const b = obj as BindingObject;
  const ref = b.roleRef ?? { apiGroup: '', kind: '', name: '' };
  const errs: FieldError[] = [...validateBuiltinFinalizerNames(obj.metadata)];
  if (ref.apiGroup !== RBAC_GROUP) errs.push(fieldErrors.notSupported('roleRef.apiGroup', ref.apiGroup ?? '', [RBAC_GROUP]));
  if (!kinds.includes(ref.kind)) errs.push(fieldErrors.notSupported('roleRef.kind', ref.kind ?? '', kinds));
  if (!ref.name) errs.push(fieldErrors.required('roleRef.name', ''));
  else errs.push(...invalidEach('roleRef.name', ref.name, isValidPathSegmentName(ref.name)));
  (b.subjects ?? []).forEach((subject, i) => errs.push(...validateSubject(subject, namespaced, `subjects[${i}]`)));
  return errs;
}

/** Go's %#v of a rbac.RoleRef, the value upstream prints when a roleRef change is refused. */
export function roleRefLiteral(ref: RoleRef | undefined): GoLiteral {
  const r = ref ?? { apiGroup: '', kind: '', name: '' };
  return new GoLiteral(`rbac.RoleRef{APIGroup:${goQuote(r.apiGroup ?? '')}, Kind:${goQuote(r.kind ?? '')}, Name:${goQuote(r.name ?? '')}}`);
}

/** Binding update: the create rules, plus roleRef may not change (422: the binding must be recreated). */
export function validateBindingUpdate(next: ApiObject, old: ApiObject, kinds: readonly string[], namespaced: boolean): FieldError[] {
  const errs = validateBinding(next, kinds, namespaced);
  const a = (next as BindingObject).roleRef;
  const b = (old as BindingObject).roleRef;
  if (a?.apiGroup !== b?.apiGroup || a?.kind !== b?.kind || a?.name !== b?.name) errs.push(fieldErrors.invalid('roleRef', roleRefLiteral(a), 'cannot change roleRef'));
  return errs;
}

/** The Role/ClusterRole column of a binding: `<kind>/<name>`. */
export const roleRefCell = (obj: ApiObject): string => {
  const ref = (obj as BindingObject).roleRef;
  return `${ref?.kind ?? ''}/${ref?.name ?? ''}`;
};

/** Subjects of one kind, as upstream's wide binding columns show them (service accounts as namespace/name). */
export function subjectsCell(obj: ApiObject, kind: 'User' | 'Group' | 'ServiceAccount'): string {
  const out: string[] = [];
  for (const s of (obj as BindingObject).subjects ?? []) {
    if (s.kind !== kind) continue;
    out.push(kind === 'ServiceAccount' ? `${s.namespace ?? ''}/${s.name}` : s.name);
  }
  return out.join(', ');
}

/** Upstream's Role and ClusterRole columns: the name and the creation time as a date. */
export const roleColumns: readonly TableColumn[] = [
  metadataNameColumn,
  { name: 'Created At', type: 'date', description: 'When the role was created (metadata.creationTimestamp).', cell: (o) => o.metadata?.creationTimestamp ?? null },
];
