/**
 * ValidatingAdmissionPolicyBinding (admissionregistration.svc.io/v1, cluster-scoped): binds a
 * ValidatingAdmissionPolicy to the requests its matchResources cover, with parameters (paramRef) and
 * what a failed validation does (validationActions: Deny, Warn, Audit). Validation as upstream's
 * ValidateValidatingAdmissionPolicyBinding; generation bumps on spec changes.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import { type LabelSelectorObject, labelSelectorFromObject, validateLabelSelector } from '../../api/selectors.js';
import type { ApiObject } from '../../api/types.js';
import { invalidEach, isDNS1123Subdomain, isValidPathSegmentName } from '../../api/validation.js';
import { labelSelectorSchema, objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';
import { PARAMS_READ_CHECK } from './validatingadmissionpolicies.js';
import { ADMISSIONREGISTRATION_GROUP, defaultMatchResources, type MatchResources, matchResourcesSchema, validateMatchResources } from './match.js';

const NS = 'io.svc.api.admissionregistration.v1';

export interface ParamRef {
  name?: string;
  namespace?: string;
  selector?: LabelSelectorObject | null;
  parameterNotFoundAction?: string | null;
}

export interface ValidatingAdmissionPolicyBindingSpec {
  policyName?: string;
  paramRef?: ParamRef | null;
  matchResources?: MatchResources | null;
  validationActions?: string[];
}

export interface ValidatingAdmissionPolicyBinding extends ApiObject {
  spec: ValidatingAdmissionPolicyBindingSpec;
}

export const validationActions: readonly string[] = ['Audit', 'Deny', 'Warn'];

export const paramRefSchema = s.struct(
  `${NS}.ParamRef`,
  {
    name: s.string({ description: 'The name of the one parameter object (exclusive with selector).' }),
    namespace: s.string({ description: "The parameter objects' namespace (namespaced paramKinds); empty: the request's namespace." }),
    selector: s.field(labelSelectorSchema, { ptr: true, description: 'Selects several parameter objects by label: the policy is evaluated once per object (exclusive with name).' }),
    parameterNotFoundAction: s.string({ ptr: true, description: 'Allow or Deny: what happens when no parameter object is found.' }),
  },
  { mapType: 'atomic', typeDescription: 'Which objects are the parameters of a binding.' },
);

export const validatingAdmissionPolicyBindingSchema = objectSchema(
  `${NS}.ValidatingAdmissionPolicyBinding`,
  {
    spec: s.struct(
      `${NS}.ValidatingAdmissionPolicyBindingSpec`,
      {
        policyName: s.string({ description: 'The ValidatingAdmissionPolicy bound (a binding of a missing policy does nothing).' }),
        paramRef: s.field(paramRefSchema, { ptr: true, description: "The parameters: required when the policy has a paramKind." }),
        matchResources: s.field(matchResourcesSchema, { ptr: true, description: "Narrows the requests the policy's matchConstraints cover." }),
        validationActions: s.list(s.string(), { listType: 'set', description: 'What a failed validation does: Deny (refuse), Warn (a warning to the client), Audit (an audit annotation); Deny and Warn exclude each other.' }),
      },
      { description: 'The policy, its parameters, its scope and its enforcement.', typeDescription: 'A binding of a ValidatingAdmissionPolicy.' },
    ),
  },
  [],
  'Binds a ValidatingAdmissionPolicy to requests, with parameters and enforcement actions.',
);

function defaults(obj: ApiObject): void {
  const b = obj as ValidatingAdmissionPolicyBinding;
  if (!b.spec || typeof b.spec !== 'object') b.spec = {};
  if (b.spec.matchResources) defaultMatchResources(b.spec.matchResources);
}

export function validateParamRef(pr: ParamRef | null | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!pr) return errs;
  const name = pr.name ?? '';
  if (name) {
    errs.push(...invalidEach(`${path}.name`, name, isValidPathSegmentName(name)));
    if (pr.selector != null) errs.push(fieldErrors.forbidden(`${path}.name`, 'name and selector are mutually exclusive'));
  }
  if (pr.selector != null) {
    errs.push(...validateLabelSelector(pr.selector, `${path}.selector`));
    if (name) errs.push(fieldErrors.forbidden(`${path}.selector`, 'name and selector are mutually exclusive'));
  }
  if (!name && pr.selector == null) errs.push(fieldErrors.required(path, 'one of name or selector must be specified'));
  const action = pr.parameterNotFoundAction;
  if (action == null || action === '') errs.push(fieldErrors.required(`${path}.parameterNotFoundAction`));
  else if (action !== 'Deny' && action !== 'Allow') errs.push(fieldErrors.notSupported(`${path}.parameterNotFoundAction`, action, ['Deny', 'Allow']));
  return errs;
}

function validateActions(actions: readonly string[], path: string): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  actions.forEach((a, i) => {
    if (!validationActions.includes(a)) errs.push(fieldErrors.notSupported(`${path}[${i}]`, a, validationActions));
    if (seen.has(a)) errs.push(fieldErrors.duplicate(`${path}[${i}]`, a));
    seen.add(a);
  });
  if (seen.has('Deny') && seen.has('Warn'))
    errs.push(fieldErrors.invalid(path, actions, 'must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)'));
  if (seen.size === 0) errs.push(fieldErrors.required(path, 'at least one validation action is required'));
  return errs;
}

export function validateBindingSpec(spec: ValidatingAdmissionPolicyBindingSpec): FieldError[] {
  const errs: FieldError[] = [];
  const policy = spec.policyName ?? '';
  if (!policy) errs.push(fieldErrors.required('spec.policyName'));
  else errs.push(...invalidEach('spec.policyName', policy, isDNS1123Subdomain(policy)));
  errs.push(...validateParamRef(spec.paramRef, 'spec.paramRef'));
  // upstream reports these at `spec.matchResouces` (sic)
  errs.push(...validateMatchResources(spec.matchResources ?? undefined, 'spec.matchResouces'));
  errs.push(...validateActions(spec.validationActions ?? [], 'spec.validationActions'));
  return errs;
}

const spec = (o: ApiObject): ValidatingAdmissionPolicyBindingSpec => (o as ValidatingAdmissionPolicyBinding).spec ?? {};

/** How upstream's printer shows a paramRef: `<unset>`, `namespace/name`, `name`, or `*` with a selector. */
function paramRefCell(pr: ParamRef | null | undefined): string {
  if (!pr) return '<unset>';
  const what = pr.name || (pr.selector ? labelSelectorFromObject(pr.selector).toString() || '*' : '');
  return pr.namespace ? `${pr.namespace}/${what}` : what;
}

export const validatingAdmissionPolicyBindings: ResourceType = {
  group: ADMISSIONREGISTRATION_GROUP,
  version: 'v1',
  protobufPackage: 'svc.io.api.admissionregistration.v1',
  kind: 'ValidatingAdmissionPolicyBinding',
  plural: 'validatingadmissionpolicybindings',
  singular: 'validatingadmissionpolicybinding',
  namespaced: false,
  categories: ['api-extensions'],
  schema: validatingAdmissionPolicyBindingSchema,
  writeCheck: PARAMS_READ_CHECK,
  defaults,
  validateCreate: (obj) => validateBindingSpec(spec(obj)),
  validateUpdate: (next) => validateBindingSpec(spec(next)),
  generationOf: (obj) => (obj as ValidatingAdmissionPolicyBinding).spec,
  tableColumns: [
    metadataNameColumn,
    { name: 'PolicyName', type: 'string', description: 'PolicyName references a ValidatingAdmissionPolicy name which the ValidatingAdmissionPolicyBinding binds to.', cell: (o) => spec(o).policyName ?? '' },
    { name: 'ParamRef', type: 'string', description: 'ParamRef specifies the parameter resource used to configure the admission control policy.', cell: (o) => paramRefCell(spec(o).paramRef) },
    metadataAgeColumn,
  ],
};
