/**
 * MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding (admissionregistration.svc.io/v1alpha1,
 * cluster-scoped; alpha: served only with the MutatingAdmissionPolicy gate on and the version turned
 * on by --runtime-config). A policy's mutations are CEL expressions producing either an apply
 * configuration (`Object{spec: Object.spec{...}}`, merged into the object as server-side apply
 * merges) or a list of JSON patch operations (`JSONPatch{op: 'add', path: ..., value: ...}`); its
 * bindings say where it applies and with which parameters. Defaults and validation as upstream's
 * v1alpha1 (expressions compiled at write time); generation bumps on spec changes.
 */
import { type FieldError, fieldErrors, GoLiteral } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { invalidEach, isDNS1123Subdomain } from '../../api/validation.js';
import { CelCompileError, compilePolicyExpression, policyEnvironment, type ReturnTypes, variableDecls } from '../../admission/policy/cel.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';
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
import { isCELIdentifier, PARAMS_READ_CHECK, type ParamKind, paramKindColumn, paramKindSchema, validateParamKind, type Variable, variableSchema } from './validatingadmissionpolicies.js';
import { type ParamRef, paramRefSchema, validateParamRef } from './validatingadmissionpolicybindings.js';

const NS = 'io.svc.api.admissionregistration.v1alpha1';
export const MUTATING_ADMISSION_POLICY_GATE = 'MutatingAdmissionPolicy';

export interface Mutation {
  patchType?: string;
  applyConfiguration?: { expression?: string } | null;
  jsonPatch?: { expression?: string } | null;
}

export interface MutatingAdmissionPolicySpec {
  paramKind?: ParamKind | null;
  matchConstraints?: MatchResources | null;
  variables?: Variable[];
  mutations?: Mutation[];
  failurePolicy?: string;
  matchConditions?: MatchCondition[];
  reinvocationPolicy?: string;
}

export interface MutatingAdmissionPolicy extends ApiObject {
  spec: MutatingAdmissionPolicySpec;
}

export interface MutatingAdmissionPolicyBinding extends ApiObject {
  spec: { policyName?: string; paramRef?: ParamRef | null; matchResources?: MatchResources | null };
}

export const patchTypes: readonly string[] = ['ApplyConfiguration', 'JSONPatch'];
export const reinvocationPolicies: readonly string[] = ['Never', 'IfNeeded'];
/** Only creates and updates (and connects) can be mutated: DELETE is refused in a mutating policy's rules. */
const mutatingOperations: readonly string[] = ['*', 'CONNECT', 'CREATE', 'UPDATE'];

function validateMutableOperations(m: MatchResources, path: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const r of m.resourceRules ?? []) for (const op of r.operations ?? []) if (!mutatingOperations.includes(op)) errs.push(fieldErrors.notSupported(path, op, mutatingOperations));
  return errs;
}

const expressionHolder = (name: string, what: string) =>
  s.struct(`${NS}.${name}`, { expression: s.string({ description: what }) }, { ptr: true, typeDescription: what });

export const mutatingAdmissionPolicySchema = objectSchema(
  `${NS}.MutatingAdmissionPolicy`,
  {
    spec: s.struct(
      `${NS}.MutatingAdmissionPolicySpec`,
      {
        paramKind: s.field(paramKindSchema, { ptr: true, description: 'The kind of the parameter objects bindings name.' }),
        matchConstraints: s.field(matchResourcesSchema, { ptr: true, description: 'The requests the policy cares about (resourceRules required).' }),
        variables: s.list(variableSchema, { listType: 'atomic', description: 'Variables the other expressions read as `variables.<name>`.' }),
        mutations: s.list(
          s.struct(
            `${NS}.Mutation`,
            {
              patchType: s.string({ always: true, description: 'ApplyConfiguration or JSONPatch.' }),
              applyConfiguration: expressionHolder('ApplyConfiguration', 'A CEL expression producing an apply configuration (Object{...}) merged into the object.'),
              jsonPatch: expressionHolder('JSONPatch', 'A CEL expression producing JSON patch operations (a list of JSONPatch{...}).'),
            },
            { required: ['patchType'], typeDescription: 'One mutation.' },
          ),
          { listType: 'atomic', description: 'The mutations, applied in order.' },
        ),
        failurePolicy: s.string({ ptr: true, description: 'Fail (the default) or Ignore: what an error does.' }),
        matchConditions: matchConditionsField('CEL conditions the request must meet for the mutations to run (at most 64).'),
        reinvocationPolicy: s.string({ description: 'Never or IfNeeded (required): whether the policy runs again when later admission changed the object.' }),
      },
      { description: 'What the policy changes and when.', typeDescription: 'A mutating policy\'s match constraints, parameters and mutations.' },
    ),
  },
  [],
  'A policy of CEL mutations applied to writes where its bindings say.',
);

export const mutatingAdmissionPolicyBindingSchema = objectSchema(
  `${NS}.MutatingAdmissionPolicyBinding`,
  {
    spec: s.struct(
      `${NS}.MutatingAdmissionPolicyBindingSpec`,
      {
        policyName: s.string({ description: 'The MutatingAdmissionPolicy bound.' }),
        paramRef: s.field(paramRefSchema, { ptr: true, description: 'The parameters.' }),
        matchResources: s.field(matchResourcesSchema, { ptr: true, description: "Narrows the requests the policy's matchConstraints cover." }),
      },
      { description: 'The policy, its parameters and its scope.', typeDescription: 'A binding of a MutatingAdmissionPolicy.' },
    ),
  },
  [],
  'Binds a MutatingAdmissionPolicy to requests, with parameters.',
);

function compileErrors(path: string, expression: string, returns: ReturnTypes, env: ReturnType<typeof policyEnvironment>): FieldError[] {
  try {
    compilePolicyExpression(env, expression, returns);
    return [];
  } catch (e) {
    if (e instanceof CelCompileError) return [fieldErrors.invalid(path, expression, e.message)];
    return [fieldErrors.internal(path, e as Error)];
  }
}

export function validateMutatingPolicySpec(spec: MutatingAdmissionPolicySpec): FieldError[] {
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
    errs.push(...validateMutableOperations(spec.matchConstraints, `${path}.matchConstraints.resourceRules.operations`));
  }
  const base = { params: hasParams, authorizer: true, mutating: true };
  const condEnv = policyEnvironment({ ...base, variables: [] });
  errs.push(...validateMatchConditions(spec.matchConditions, `${path}.matchConditions`, (expr, p) => compileErrors(p, expr, 'bool', condEnv)));
  const varErrors = new Map<number, CelCompileError>();
  const decls = variableDecls(base, spec.variables ?? [], (i, e) => varErrors.set(i, e));
  (spec.variables ?? []).forEach((v, i) => {
    const p = `${path}.variables[${i}]`;
    if (!(v.name ?? '').trim()) errs.push(fieldErrors.required(`${p}.name`, 'name is not specified'));
    else if (!isCELIdentifier(v.name!)) errs.push(fieldErrors.invalid(`${p}.name`, v.name, 'name is not a valid CEL identifier'));
    if (!(v.expression ?? '').trim()) errs.push(fieldErrors.required(`${p}.expression`, 'expression is not specified'));
    else if (varErrors.has(i)) errs.push(fieldErrors.invalid(`${p}.expression`, v.expression, varErrors.get(i)!.message));
  });
  const env = policyEnvironment({ ...base, variables: decls });
  const mutations = spec.mutations ?? [];
  if (mutations.length === 0) errs.push(fieldErrors.required(`${path}.mutations`, 'mutations must contain at least one item'));
  mutations.forEach((m, i) => {
    const p = `${path}.mutations[${i}]`;
    const type = m.patchType ?? '';
    if (!type) {
      errs.push(fieldErrors.required(`${p}.patchType`));
      return;
    }
    if (!patchTypes.includes(type)) {
      errs.push(fieldErrors.notSupported(`${p}.patchType`, type, patchTypes));
      return;
    }
    const [own, other, ownField, otherField] = type === 'ApplyConfiguration' ? [m.applyConfiguration, m.jsonPatch, 'applyConfiguration', 'jsonPatch'] : [m.jsonPatch, m.applyConfiguration, 'jsonPatch', 'applyConfiguration'];
    if (own == null) errs.push(fieldErrors.required(`${p}.${ownField}`, `must be specified when patchType is ${type}`));
    else {
      const expr = own.expression ?? '';
      if (!expr.trim()) errs.push(fieldErrors.required(`${p}.${ownField}.expression`));
      else errs.push(...compileErrors(`${p}.${ownField}.expression`, expr, type === 'ApplyConfiguration' ? 'object' : 'patches', env));
    }
    if (other != null) errs.push(fieldErrors.invalid(`${p}.${otherField}`, new GoLiteral(`{${otherField}}`), `must not be specified when patchType is ${type}`));
  });
  if (spec.reinvocationPolicy == null) errs.push(fieldErrors.required(`${path}.reinvocationPolicy`));
  else if (!reinvocationPolicies.includes(spec.reinvocationPolicy)) errs.push(fieldErrors.notSupported(`${path}.reinvocationPolicy`, spec.reinvocationPolicy, reinvocationPolicies));
  return errs;
}

function validateMutatingBindingSpec(spec: MutatingAdmissionPolicyBinding['spec']): FieldError[] {
  const errs: FieldError[] = [];
  const policy = spec.policyName ?? '';
  if (!policy) errs.push(fieldErrors.required('spec.policyName'));
  else errs.push(...invalidEach('spec.policyName', policy, isDNS1123Subdomain(policy)));
  errs.push(...validateParamRef(spec.paramRef, 'spec.paramRef'));
  if (spec.matchResources) {
    errs.push(...validateMatchResources(spec.matchResources, 'spec.matchResources'));
    errs.push(...validateMutableOperations(spec.matchResources, 'spec.matchResources.resourceRules.operations'));
  }
  return errs;
}

const pspec = (o: ApiObject): MutatingAdmissionPolicySpec => (o as MutatingAdmissionPolicy).spec ?? {};
const bspec = (o: ApiObject): MutatingAdmissionPolicyBinding['spec'] => (o as MutatingAdmissionPolicyBinding).spec ?? {};

export const mutatingAdmissionPolicies: ResourceType = {
  group: ADMISSIONREGISTRATION_GROUP,
  version: 'v1alpha1',
  protobufPackage: 'svc.io.api.admissionregistration.v1alpha1',
  kind: 'MutatingAdmissionPolicy',
  plural: 'mutatingadmissionpolicies',
  singular: 'mutatingadmissionpolicy',
  namespaced: false,
  categories: ['api-extensions'],
  schema: mutatingAdmissionPolicySchema,
  writeCheck: PARAMS_READ_CHECK,
  defaults(obj) {
    const p = obj as MutatingAdmissionPolicy;
    if (!p.spec || typeof p.spec !== 'object') p.spec = {};
    p.spec.failurePolicy ??= 'Fail';
    if (p.spec.matchConstraints) defaultMatchResources(p.spec.matchConstraints);
  },
  validateCreate: (obj) => validateMutatingPolicySpec(pspec(obj)),
  validateUpdate: (next) => validateMutatingPolicySpec(pspec(next)),
  generationOf: (obj) => (obj as MutatingAdmissionPolicy).spec,
  tableColumns: [
    metadataNameColumn,
    { name: 'Mutations', type: 'integer', description: 'Mutations is the number of mutations.', cell: (o) => (pspec(o).mutations ?? []).length },
    paramKindColumn,
    metadataAgeColumn,
  ],
};

export const mutatingAdmissionPolicyBindings: ResourceType = {
  group: ADMISSIONREGISTRATION_GROUP,
  version: 'v1alpha1',
  protobufPackage: 'svc.io.api.admissionregistration.v1alpha1',
  kind: 'MutatingAdmissionPolicyBinding',
  plural: 'mutatingadmissionpolicybindings',
  singular: 'mutatingadmissionpolicybinding',
  namespaced: false,
  categories: ['api-extensions'],
  schema: mutatingAdmissionPolicyBindingSchema,
  writeCheck: PARAMS_READ_CHECK,
  defaults(obj) {
    const b = obj as MutatingAdmissionPolicyBinding;
    if (!b.spec || typeof b.spec !== 'object') b.spec = {};
    if (b.spec.matchResources) defaultMatchResources(b.spec.matchResources);
  },
  validateCreate: (obj) => validateMutatingBindingSpec(bspec(obj)),
  validateUpdate: (next) => validateMutatingBindingSpec(bspec(next)),
  generationOf: (obj) => (obj as MutatingAdmissionPolicyBinding).spec,
  tableColumns: [
    metadataNameColumn,
    { name: 'PolicyName', type: 'string', description: 'PolicyName references a MutatingAdmissionPolicy name which the MutatingAdmissionPolicyBinding binds to.', cell: (o) => bspec(o).policyName ?? '' },
    {
      name: 'ParamRef',
      type: 'string',
      description: 'ParamRef specifies the parameter resource used to configure the admission control policy.',
      cell: (o) => {
        const pr = bspec(o).paramRef;
        return pr ? (pr.namespace ? `${pr.namespace}/${pr.name ?? ''}` : (pr.name ?? '')) : '<unset>';
      },
    },
    metadataAgeColumn,
  ],
};
