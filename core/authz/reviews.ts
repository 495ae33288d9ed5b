/**
 * Review handlers of authorization.svc.io: the access reviews ask the server's own authorizer chain
 * (system:masters bypass included) and answer in status; the rules review asks the chain's rule
 * listing. Specs are validated as upstream validates them (exactly one of resourceAttributes and
 * nonResourceAttributes, a user or groups for SubjectAccessReview, empty metadata, well-formed
 * selector requirements, a LocalSubjectAccessReview about its own namespace); a bad spec is 422.
 */
import { type FieldError, fieldErrors } from '../api/field-errors.js';
import { then } from '../api/maybe-async.js';
import { errors } from '../api/status.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import { isQualifiedName, isValidLabelValue } from '../api/validation.js';
import { resourceId } from '../registry/context.js';
import { localSubjectAccessReviews } from '../registry/authorization/localsubjectaccessreviews.js';
import { selfSubjectAccessReviews } from '../registry/authorization/selfsubjectaccessreviews.js';
import { selfSubjectRulesReviews } from '../registry/authorization/selfsubjectrulesreviews.js';
import { subjectAccessReviews } from '../registry/authorization/subjectaccessreviews.js';
import type { VirtualHandler } from '../request/routes.js';
import type { Authorizer, AuthorizerDecision, RulesResult } from './authorizer.js';
import { attributesFromSpec, type SelectorSpec, type SubjectAccessReviewSpec } from './sar.js';

export interface ReviewDeps {
  authorizer: Authorizer;
  /** Upstream's AuthorizeWithSelectors: the selectors of resourceAttributes are passed on. */
  withSelectors: boolean;
}

const GROUP = 'authorization.svc.io';
type Spec = SubjectAccessReviewSpec;

const specOf = (review: ApiObject): Spec => (review.spec ?? {}) as Spec;

// ---------------------------------------------------------------------------------------------
// Validation

function validateRequirement(r: { key?: string; operator?: string; values?: string[] }, at: string, labels: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const values = r.values ?? [];
  const key = r.key ?? '';
  switch (r.operator) {
    case 'In':
    case 'NotIn':
      if (labels && values.length === 0) errs.push(fieldErrors.required(`${at}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
      if (!labels && values.length !== 1) errs.push(fieldErrors.required(`${at}.values`, "must have one element when `operator` is 'In' or 'NotIn'"));
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length > 0) errs.push(fieldErrors.forbidden(`${at}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
      break;
    default:
    // operators this server does not know are allowed, so newer clients can still ask (as upstream)
  }
  if (labels) {
    for (const m of isQualifiedName(key)) errs.push(fieldErrors.invalid(`${at}.key`, key, m));
    values.forEach((v, j) => {
      for (const m of isValidLabelValue(v)) errs.push(fieldErrors.invalid(`${at}.values[${j}]`, v, m));
    });
  } else if (key === '') errs.push(fieldErrors.required(`${at}.key`, 'must be specified'));
  return errs;
}

function validateSelector(sel: SelectorSpec | undefined, at: string, labels: boolean): FieldError[] {
  if (!sel) return [];
  const errs: FieldError[] = [];
  const reqs = sel.requirements ?? [];
  if (sel.rawSelector && reqs.length) errs.push(fieldErrors.invalid(`${at}.rawSelector`, sel.rawSelector, 'may not specified at the same time as requirements'));
  if (!sel.rawSelector && reqs.length === 0) errs.push(fieldErrors.required(`${at}.requirements`, `when ${at} is specified, requirements or rawSelector is required`));
  reqs.forEach((r, i) => errs.push(...validateRequirement(r, `${at}.requirements[${i}]`, labels)));
  return errs;
}

/** Exactly one kind of attributes, and well-formed selectors. */
function validateAttributes(spec: Spec): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.resourceAttributes && spec.nonResourceAttributes) {
    errs.push(fieldErrors.invalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'cannot be specified in combination with resourceAttributes'));
  }
  if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
    errs.push(fieldErrors.invalid('spec.resourceAttributes', null, 'exactly one of nonResourceAttributes or resourceAttributes must be specified'));
  }
  const ra = spec.resourceAttributes;
  if (ra) {
    errs.push(...validateSelector(ra.fieldSelector, 'spec.resourceAttributes.fieldSelector', false));
    errs.push(...validateSelector(ra.labelSelector, 'spec.resourceAttributes.labelSelector', true));
  }
  return errs;
}

/** Whether metadata holds anything but managed fields (and the namespace, where allowed). */
function metadataErrors(review: ApiObject, allowNamespace: boolean, message: string): FieldError[] {
  const m = review.metadata ?? {};
  const set = Object.entries(m).filter(([k, v]) => {
    if (k === 'managedFields' || (allowNamespace && k === 'namespace')) return false;
    if (v === undefined || v === null || v === '' || v === 0) return false;
    return !(typeof v === 'object' && Object.keys(v).length === 0);
  });
  return set.length ? [fieldErrors.invalid('metadata', m, message)] : [];
}

function invalid(kind: string, errs: FieldError[]): void {
  if (errs.length) throw errors.invalid({ group: GROUP, kind }, '', errs);
}

// ---------------------------------------------------------------------------------------------
// Answers

function statusOf(d: AuthorizerDecision): Record<string, unknown> {
  const status: Record<string, unknown> = { allowed: d.decision === 'allow' };
  if (d.decision === 'deny') status.denied = true;
  if (d.reason) status.reason = d.reason;
  if (d.error) status.evaluationError = d.error;
  return status;
}

/** The subject a SubjectAccessReview names. */
function subjectOf(spec: Spec): UserInfo {
  const u: UserInfo = { username: spec.user ?? '', groups: spec.groups ?? [] };
  if (spec.uid) u.uid = spec.uid;
  if (spec.extra && Object.keys(spec.extra).length) u.extra = spec.extra;
  return u;
}

const withoutEmpty = <T extends Record<string, unknown>>(o: T): T => {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (!(Array.isArray(v) && v.length === 0) && v !== undefined) out[k] = v;
  return out as T;
};

function rulesStatus(r: RulesResult): Record<string, unknown> {
  const status: Record<string, unknown> = {
    resourceRules: r.resourceRules.map((x) => ({ verbs: x.verbs, ...withoutEmpty({ apiGroups: x.apiGroups, resources: x.resources, resourceNames: x.resourceNames }) })),
    nonResourceRules: r.nonResourceRules.map((x) => ({ verbs: x.verbs, ...withoutEmpty({ nonResourceURLs: x.nonResourceURLs }) })),
    incomplete: r.incomplete,
  };
  if (r.evaluationError) status.evaluationError = r.evaluationError;
  return status;
}

export function accessReviewHandlers(d: ReviewDeps): Map<string, VirtualHandler> {
  const decide = (review: ApiObject, user: UserInfo, spec: Spec) =>
    then(d.authorizer.authorize(attributesFromSpec(user, spec, d.withSelectors)), (decision) => ({ ...review, status: statusOf(decision) }) as ApiObject);

  const subjectAccessReview: VirtualHandler = (review) => {
    const spec = specOf(review);
    const errs = validateAttributes(spec);
    if (!spec.user && !(spec.groups ?? []).length) errs.push(fieldErrors.invalid('spec.user', spec.user ?? '', 'at least one of user or group must be specified'));
    errs.push(...metadataErrors(review, false, 'must be empty'));
    invalid('SubjectAccessReview', errs);
    return decide(review, subjectOf(spec), spec);
  };

  const selfSubjectAccessReview: VirtualHandler = (review, s) => {
    const spec = specOf(review);
    invalid('SelfSubjectAccessReview', [...validateAttributes(spec), ...metadataErrors(review, false, 'must be empty')]);
    return decide(review, s.user, spec);
  };

  const localSubjectAccessReview: VirtualHandler = (review, _s, r) => {
    const meta = review.metadata;
    if (!meta.namespace) meta.namespace = r.namespace;
    else if (meta.namespace !== r.namespace) throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    const spec = specOf(review);
    const errs = validateAttributes(spec);
    if (!spec.user && !(spec.groups ?? []).length) errs.push(fieldErrors.invalid('spec.user', spec.user ?? '', 'at least one of user or group must be specified'));
    errs.push(...metadataErrors(review, true, 'must be empty except for namespace'));
    const ra = spec.resourceAttributes;
    if (ra && (ra.namespace ?? '') !== meta.namespace) errs.push(fieldErrors.invalid('spec.resourceAttributes.namespace', ra.namespace ?? '', 'must match metadata.namespace'));
    if (spec.nonResourceAttributes) errs.push(fieldErrors.invalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'disallowed on this kind of request'));
    invalid('LocalSubjectAccessReview', errs);
    return decide(review, subjectOf(spec), spec);
  };

  const selfSubjectRulesReview: VirtualHandler = (review, s) => {
    const namespace = ((review.spec ?? {}) as { namespace?: string }).namespace ?? '';
    if (!namespace) throw errors.badRequest('no namespace on request');
    const rules = d.authorizer.rulesFor ? d.authorizer.rulesFor(s.user, namespace) : { resourceRules: [], nonResourceRules: [], incomplete: true };
    // as upstream, the answer is a fresh object: the spec is not echoed
    return then(rules, (r) => ({ kind: review.kind, apiVersion: review.apiVersion, metadata: { creationTimestamp: null }, spec: {}, status: rulesStatus(r) }) as unknown as ApiObject);
  };

  return new Map<string, VirtualHandler>([
    [resourceId(subjectAccessReviews), subjectAccessReview],
    [resourceId(selfSubjectAccessReviews), selfSubjectAccessReview],
    [resourceId(localSubjectAccessReviews), localSubjectAccessReview],
    [resourceId(selfSubjectRulesReviews), selfSubjectRulesReview],
  ]);
}
