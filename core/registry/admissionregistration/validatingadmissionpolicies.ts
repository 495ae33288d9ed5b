/**
 * ValidatingAdmissionPolicy (admissionregistration.svc.io/v1, cluster-scoped): CEL validations of
 * writes, applied where a ValidatingAdmissionPolicyBinding binds them (core/admission/policy/). The
 * defaults, the validation (expressions compiled at write time, refused with upstream's detail), the
 * status subresource (written by the type-checking controller) and the generation bump on spec
 * changes follow upstream's admissionregistration v1 defaults, validation and strategy.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { invalidEach, isDNS1035Label, isDNS1123Subdomain, isQualifiedName, jsonEqual } from '../../api/validation.js';
import { CelCompileError, compilePolicyExpression, policyEnvironment, type ReturnTypes, variableDecls, type VariableDecl } from '../../admission/policy/cel.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType, SubresourceType, TableColumn } from '../resource-type.js';
import {
  ADMISSIONREGISTRATION_GROUP,
  defaultMatchResources,
  type MatchCondition,
  matchConditionsField,
  type MatchResources,
  matchResourcesSchema,
  supportedFailurePolicies,
  validateMatchConditions,
  validateMatchResources,
} from './match.js';

const NS = 'io.svc.api.admissionregistration.v1';

export interface ParamKind {
  apiVersion?: string;
  kind?: string;
}

export interface Validation {
  expression?: string;
  message?: string;
  reason?: string;
  messageExpression?: string;
}

export interface AuditAnnotation {
  key?: string;
  valueExpression?: string;
}

export interface Variable {
  name?: string;
  expression?: string;
}

export interface ExpressionWarning {
  fieldRef: string;
  warning: string;
}

export interface PolicyCondition {
  type: string;
  status: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface ValidatingAdmissionPolicySpec {
  paramKind?: ParamKind | null;
  matchConstraints?: MatchResources | null;
  validations?: Validation[];
  failurePolicy?: string;
  auditAnnotations?: AuditAnnotation[];
  matchConditions?: MatchCondition[];
  variables?: Variable[];
}

export interface ValidatingAdmissionPolicy extends ApiObject {
  spec: ValidatingAdmissionPolicySpec;
  status?: {
    observedGeneration?: number;
    typeChecking?: { expressionWarnings?: ExpressionWarning[] } | null;
    conditions?: PolicyCondition[];
  };
}

/**
 * The write check (ResourceType.writeCheck) both kinds declare: naming parameters needs `get` on them
 * (core/admission/policy/write-check.ts, registered on the main thread).
 */
export const PARAMS_READ_CHECK = 'admissionregistration-params';

export const supportedValidationReasons: readonly string[] = ['Forbidden', 'Invalid', 'RequestEntityTooLarge'];
const MAX_AUDIT_ANNOTATIONS = 20;
const MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH = 5 * 1024;

export const paramKindSchema = s.struct(
  `${NS}.ParamKind`,
  {
    apiVersion: s.string({ description: 'The group/version of the kind of the parameter objects (`v1` for the core group).' }),
    kind: s.string({ description: 'The kind of the parameter objects.' }),
  },
  { mapType: 'atomic', typeDescription: 'The kind of the objects a policy is parameterized by.' },
);

export const variableSchema = s.struct(
  `${NS}.Variable`,
  {
    name: s.string({ always: true, description: 'The variable is read as `variables.<name>` (a CEL identifier).' }),
    expression: s.string({ always: true, description: 'A CEL expression computing the value; evaluated lazily, at most once per request.' }),
  },
  { required: ['name', 'expression'], typeDescription: 'A named CEL expression the other expressions may read.' },
);

const conditionSchema = s.struct(
  'io.svc.apimachinery.pkg.apis.meta.v1.Condition',
  {
    type: s.string({ always: true, description: 'The condition type in CamelCase.' }),
    status: s.string({ always: true, description: 'True, False or Unknown.' }),
    observedGeneration: s.int64({ description: 'The generation the condition was set for.' }),
    lastTransitionTime: s.time({ always: true, description: 'When the status last changed.' }),
    reason: s.string({ always: true, description: 'Machine-readable reason (CamelCase).' }),
    message: s.string({ always: true, description: 'Human-readable detail.' }),
  },
  { required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'], typeDescription: 'One observation of the object\'s state.' },
);

export const validatingAdmissionPolicySchema = objectSchema(
  `${NS}.ValidatingAdmissionPolicy`,
  {
    spec: s.struct(
      `${NS}.ValidatingAdmissionPolicySpec`,
      {
        paramKind: s.field(paramKindSchema, { ptr: true, description: 'The kind of the parameter objects bindings name; absent: the policy takes no parameters (and `params` is undeclared).' }),
        matchConstraints: s.field(matchResourcesSchema, { ptr: true, description: 'The requests the policy cares about (resourceRules required); a binding narrows them further.' }),
        validations: s.list(
          s.struct(
            `${NS}.Validation`,
            {
              expression: s.string({ always: true, description: 'A CEL expression that must be true for the request to be admitted.' }),
              message: s.string({ description: 'The message when the expression is false (one line).' }),
              reason: s.string({ ptr: true, description: 'Forbidden, Invalid (the default) or RequestEntityTooLarge: the status of a refusal.' }),
              messageExpression: s.string({ description: 'A CEL expression computing the message (a string); the message or the expression is used when it fails.' }),
            },
            { required: ['expression'], typeDescription: 'One CEL validation.' },
          ),
          { listType: 'atomic', description: 'The CEL validations: all must be true.' },
        ),
        failurePolicy: s.string({ ptr: true, description: 'What an error (a CEL runtime error, a misconfigured binding, a missing parameter) does: Fail (the default) refuses, Ignore admits.' }),
        auditAnnotations: s.list(
          s.struct(
            `${NS}.AuditAnnotation`,
            {
              key: s.string({ always: true, description: 'The annotation is `<policy name>/<key>` in the audit event.' }),
              valueExpression: s.string({ always: true, description: 'A CEL expression computing the value (a string; null or empty: no annotation).' }),
            },
            { required: ['key', 'valueExpression'], typeDescription: 'An audit annotation a policy adds.' },
          ),
          { listType: 'atomic', description: 'Audit annotations added to the request\'s audit event (at most 20).' },
        ),
        matchConditions: matchConditionsField('CEL conditions the request must meet for the validations to run (at most 64).'),
        variables: s.list(variableSchema, { listType: 'atomic', description: 'Variables the other expressions read as `variables.<name>`.' }),
      },
      { description: 'What the policy checks and when.', typeDescription: 'A policy\'s match constraints, parameters and CEL expressions.' },
    ),
    status: s.struct(
      `${NS}.ValidatingAdmissionPolicyStatus`,
      {
        observedGeneration: s.int64({ description: 'The generation the type check looked at.' }),
        typeChecking: s.struct(
          `${NS}.TypeChecking`,
          {
            expressionWarnings: s.list(
              s.struct(
                `${NS}.ExpressionWarning`,
                {
                  fieldRef: s.string({ always: true, description: 'The path of the expression (`spec.validations[0].expression`).' }),
                  warning: s.string({ always: true, description: 'What the type check found, per kind checked.' }),
                },
                { required: ['fieldRef', 'warning'], typeDescription: 'A type-checking warning about one expression.' },
              ),
              { listType: 'atomic', description: 'Expressions that do not type-check against the matched kinds.' },
            ),
          },
          { ptr: true, description: 'The result of type-checking the expressions.', typeDescription: 'Type-checking results.' },
        ),
        conditions: s.list(conditionSchema, { listType: 'map', listMapKeys: ['type'], description: 'Observations of the policy\'s state.' }),
      },
      { description: 'What the type-checking controller found.', typeDescription: 'The observed state of a policy.' },
    ),
  },
  [],
  'A policy of CEL validations applied to writes where its bindings say.',
);

function defaults(obj: ApiObject): void {
  const p = obj as ValidatingAdmissionPolicy;
  if (!p.spec || typeof p.spec !== 'object') p.spec = {};
  p.spec.failurePolicy ??= 'Fail';
  if (p.spec.matchConstraints) defaultMatchResources(p.spec.matchConstraints);
}

/** upstream's CEL identifier rule for variable names. */
const CEL_IDENT = /^[_a-zA-Z][_a-zA-Z0-9]*$/;
const CEL_RESERVED = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while']);
export const isCELIdentifier = (name: string): boolean => CEL_IDENT.test(name) && !CEL_RESERVED.has(name);

/** A compile failure as a field error (upstream's convertCELErrorToValidationError). */
function compileErrors(path: string, expression: string, fn: () => unknown): FieldError[] {
  try {
    fn();
    return [];
  } catch (e) {
    if (e instanceof CelCompileError) return [fieldErrors.invalid(path, expression, e.message)];
    return [fieldErrors.internal(path, e as Error)];
  }
}

export function validateParamKind(pk: ParamKind, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const av = pk.apiVersion ?? '';
  if (!av) errs.push(fieldErrors.required(`${path}.apiVersion`));
  else {
    const slashes = av.split('/').length - 1;
    if (slashes > 1) errs.push(fieldErrors.invalid(`${path}.apiVersion`, av, `unexpected GroupVersion string: ${av}`));
    else {
      const [group, version] = slashes === 0 ? ['', av] : (av.split('/') as [string, string]);
      if (group) {
        const ge = isDNS1123Subdomain(group);
        if (ge.length) errs.push(fieldErrors.invalid(`${path}.apiVersion`, group, ge.join(',')));
      }
      if (!version) errs.push(fieldErrors.invalid(`${path}.apiVersion`, av, 'version must be specified'));
      else {
        const ve = isDNS1035Label(version);
        if (ve.length) errs.push(fieldErrors.invalid(`${path}.apiVersion`, version, ve.join(',')));
      }
    }
  }
  const kind = pk.kind ?? '';
  if (!kind) errs.push(fieldErrors.required(`${path}.kind`));
  else {
    const ke = isDNS1035Label(kind.toLowerCase());
    if (ke.length) errs.push(fieldErrors.invalid(`${path}.kind`, kind, `may have mixed case, but should otherwise match: ${ke.join(',')}`));
  }
  return errs;
}

/** Which parts of the spec to check (an update skips match conditions that did not change, as upstream). */
interface SpecOptions {
  checkMatchConditions: boolean;
}

export function validatePolicySpec(meta: ApiObject['metadata'], spec: ValidatingAdmissionPolicySpec, opts: SpecOptions = { checkMatchConditions: true }): FieldError[] {
  const errs: FieldError[] = [];
  const path = 'spec';
  if (spec.failurePolicy == null) errs.push(fieldErrors.required(`${path}.failurePolicy`));
  else if (!supportedFailurePolicies.includes(spec.failurePolicy)) errs.push(fieldErrors.notSupported(`${path}.failurePolicy`, spec.failurePolicy, supportedFailurePolicies));
  const hasParams = spec.paramKind != null;
  if (spec.paramKind) errs.push(...validateParamKind(spec.paramKind, `${path}.paramKind`));
  if (spec.matchConstraints == null) errs.push(fieldErrors.required(`${path}.matchConstraints`));
  else {
    errs.push(...validateMatchResources(spec.matchConstraints, `${path}.matchConstraints`));
    if (!(spec.matchConstraints.resourceRules ?? []).length) errs.push(fieldErrors.required(`${path}.matchConstraints.resourceRules`));
  }
  const condEnv = policyEnvironment({ params: hasParams, authorizer: true, variables: [] });
  if (opts.checkMatchConditions) {
    errs.push(...validateMatchConditions(spec.matchConditions, `${path}.matchConditions`, (expr, p) => compileErrors(p, expr, () => compilePolicyExpression(condEnv, expr, 'bool'))));
  }
  const variables = spec.variables ?? [];
  const varErrors = new Map<number, CelCompileError>();
  const decls: VariableDecl[] = variableDecls({ params: hasParams, authorizer: true }, variables, (i, e) => varErrors.set(i, e));
  variables.forEach((v, i) => {
    const p = `${path}.variables[${i}]`;
    if (!(v.name ?? '').trim()) errs.push(fieldErrors.required(`${p}.name`, 'name is not specified'));
    else if (!isCELIdentifier(v.name!)) errs.push(fieldErrors.invalid(`${p}.name`, v.name, 'name is not a valid CEL identifier'));
    if (!(v.expression ?? '').trim()) errs.push(fieldErrors.required(`${p}.expression`, 'expression is not specified'));
    else if (varErrors.has(i)) errs.push(fieldErrors.invalid(`${p}.expression`, v.expression, varErrors.get(i)!.message));
  });
  const env = (authorizer: boolean) => policyEnvironment({ params: hasParams, authorizer, variables: decls });
  const compileAs = (p: string, expression: string, returns: ReturnTypes, authorizer = true) => compileErrors(p, expression, () => compilePolicyExpression(env(authorizer), expression, returns));
  const validations = spec.validations ?? [];
  const audits = spec.auditAnnotations ?? [];
  if (validations.length === 0 && audits.length === 0) {
    errs.push(fieldErrors.required(`${path}.validations`, 'validations or auditAnnotations must contain at least one item'));
    errs.push(fieldErrors.required(`${path}.auditAnnotations`, 'validations or auditAnnotations must contain at least one item'));
    return errs;
  }
  validations.forEach((v, i) => {
    const p = `${path}.validations[${i}]`;
    const expr = v.expression ?? '';
    if (!expr.trim()) errs.push(fieldErrors.required(`${p}.expression`, 'expression is not specified'));
    else errs.push(...compileAs(`${p}.expression`, expr, 'bool'));
    const me = v.messageExpression ?? '';
    if (me.length > 0 && !me.trim()) errs.push(fieldErrors.invalid(`${p}.messageExpression`, me, 'must be non-empty if specified'));
    else if (me.trim()) errs.push(...compileAs(`${p}.messageExpression`, me, 'string', false));
    const msg = v.message ?? '';
    if (msg.length > 0 && !msg.trim()) errs.push(fieldErrors.invalid(`${p}.message`, msg, 'message must be non-empty if specified'));
    else if (/[\n\r]/.test(msg.trim())) errs.push(fieldErrors.invalid(`${p}.message`, msg, 'message must not contain line breaks'));
    if (v.reason != null && !supportedValidationReasons.includes(v.reason)) errs.push(fieldErrors.notSupported(`${p}.reason`, v.reason, supportedValidationReasons));
  });
  if (audits.length > MAX_AUDIT_ANNOTATIONS) errs.push(fieldErrors.invalid(`${path}.auditAnnotations`, audits, `must not have more than ${MAX_AUDIT_ANNOTATIONS} auditAnnotations`));
  const keys = new Set<string>();
  audits.forEach((a, i) => {
    const p = `${path}.auditAnnotations[${i}]`;
    const key = a.key ?? '';
    if (meta.name) errs.push(...invalidEach(`${p}.key`, `${meta.name}/${key}`, isQualifiedName(`${meta.name}/${key}`)));
    else errs.push(fieldErrors.invalid(`${p}.key`, key, 'requires metadata.name be non-empty'));
    const ve = (a.valueExpression ?? '').trim();
    if (!ve) errs.push(fieldErrors.required(`${p}.valueExpression`, 'valueExpression is not specified'));
    else if (ve.length > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH)
      errs.push(fieldErrors.required(`${p}.valueExpression`, `must not exceed ${MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH} bytes in length`));
    else
      errs.push(
        ...compileErrors(`${p}.valueExpression`, a.valueExpression!, () => compilePolicyExpression(env(true), ve, 'string-or-null')),
      );
    if (keys.has(key)) errs.push(fieldErrors.duplicate(`${p}.key`, key));
    keys.add(key);
  });
  return errs;
}

/** upstream's status validation: type-checking warnings need a fieldRef and a warning. */
function validateStatus(p: ValidatingAdmissionPolicy): FieldError[] {
  const errs: FieldError[] = [];
  (p.status?.typeChecking?.expressionWarnings ?? []).forEach((w, i) => {
    const path = `status.typeChecking.expressionWarnings[${i}]`;
    if (!w.warning) errs.push(fieldErrors.required(`${path}.warning`));
    if (!(w.fieldRef ?? '').trim()) errs.push(fieldErrors.required(`${path}.fieldRef`));
  });
  const types = new Set<string>();
  (p.status?.conditions ?? []).forEach((c, i) => {
    const path = `status.conditions[${i}]`;
    if (!c.type) errs.push(fieldErrors.required(`${path}.type`));
    else if (types.has(c.type)) errs.push(fieldErrors.duplicate(`${path}.type`, c.type));
    types.add(c.type);
    if (!['True', 'False', 'Unknown'].includes(c.status)) errs.push(fieldErrors.notSupported(`${path}.status`, c.status, ['False', 'True', 'Unknown']));
  });
  return errs;
}

const sameMatchConditions = (a: ValidatingAdmissionPolicy, b: ValidatingAdmissionPolicy): boolean =>
  jsonEqual(a.spec?.paramKind ?? null, b.spec?.paramKind ?? null) && jsonEqual(a.spec?.matchConditions ?? [], b.spec?.matchConditions ?? []);

const statusSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    (next as ValidatingAdmissionPolicy).spec = (old as ValidatingAdmissionPolicy).spec;
  },
  validateUpdate: (next) => validateStatus(next as ValidatingAdmissionPolicy),
};

const spec = (o: ApiObject): ValidatingAdmissionPolicySpec => (o as ValidatingAdmissionPolicy).spec ?? {};

/** upstream's ParamKind column of both policy kinds: `<apiVersion>/<kind>`, or `<unset>`. */
export const paramKindColumn: TableColumn = {
  name: 'ParamKind',
  type: 'string',
  description: 'ParamKind specifies the kind of resources used to parameterize this policy',
  cell: (o) => {
    const pk = (o as { spec?: { paramKind?: { apiVersion?: string; kind?: string } } }).spec?.paramKind;
    return pk ? `${pk.apiVersion ?? ''}/${pk.kind ?? ''}` : '<unset>';
  },
};

export const validatingAdmissionPolicies: ResourceType = {
  group: ADMISSIONREGISTRATION_GROUP,
  version: 'v1',
  protobufPackage: 'svc.io.api.admissionregistration.v1',
  kind: 'ValidatingAdmissionPolicy',
  plural: 'validatingadmissionpolicies',
  singular: 'validatingadmissionpolicy',
  namespaced: false,
  categories: ['api-extensions'],
  schema: validatingAdmissionPolicySchema,
  writeCheck: PARAMS_READ_CHECK,
  defaults,
  prepareForCreate(obj) {
    delete (obj as ValidatingAdmissionPolicy).status;
  },
  prepareForUpdate(next, old) {
    const p = next as ValidatingAdmissionPolicy;
    const prev = (old as ValidatingAdmissionPolicy).status;
    if (prev) p.status = structuredClone(prev);
    else delete p.status;
  },
  validateCreate: (obj) => validatePolicySpec(obj.metadata, spec(obj)),
  validateUpdate: (next, old) =>
    validatePolicySpec(next.metadata, spec(next), { checkMatchConditions: !sameMatchConditions(next as ValidatingAdmissionPolicy, old as ValidatingAdmissionPolicy) }),
  generationOf: (obj) => (obj as ValidatingAdmissionPolicy).spec,
  subresources: { status: statusSubresource },
  resetFields: { '': ['status'], status: ['spec'] },
  tableColumns: [
    metadataNameColumn,
    { name: 'Validations', type: 'integer', description: 'Validations is the number of CEL validations.', cell: (o) => (spec(o).validations ?? []).length },
    paramKindColumn,
    metadataAgeColumn,
  ],
};
