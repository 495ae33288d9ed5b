/**
 * ResourceQuota (core/v1, namespaced, short name `quota`): hard limits on what a namespace may hold
 * (spec.hard, optionally narrowed by scopes or a scope selector) and the usage observed against them
 * (status.hard and status.used, kept by the resourcequota controller and charged by the ResourceQuota
 * admission plugin through the status subresource). A create starts with an empty status; ordinary
 * writes keep the stored status and status writes keep the stored spec. Rules and messages follow
 * upstream's ValidateResourceQuota* functions and the resourcequota strategy; quantities are decoded
 * (and refused) by the schema's quantity format, which stores them in canonical form.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn, validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import { Quantity, type ResourceList } from '../../api/quantity.js';
import type { ApiObject } from '../../api/types.js';
import { isQualifiedName } from '../../api/validation.js';
import {
  isIntegerResourceName,
  isStandardQuotaResourceName,
  isStandardResourceName,
  type ResourceQuotaObject,
  type ScopedResourceSelectorRequirement,
} from '../../quota/resources.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType, SubresourceType } from '../resource-type.js';

type ResourceQuota = ApiObject & ResourceQuotaObject;

const CORE = 'io.svc.api.core.v1';

export const QUOTA_SCOPES = ['Terminating', 'NotTerminating', 'BestEffort', 'NotBestEffort', 'PriorityClass', 'CrossNamespacePodAffinity', 'VolumeAttributesClass'] as const;
const STANDARD_SCOPES: ReadonlySet<string> = new Set(QUOTA_SCOPES);

const resourceList = (description: string) => s.map(s.quantity(), { description });

const scopedRequirementSchema = s.struct(
  `${CORE}.ScopedResourceSelectorRequirement`,
  {
    scopeName: s.string({ always: true, description: 'The scope the selector applies to (Terminating, BestEffort, PriorityClass, ...).' }),
    operator: s.string({ always: true, description: "How the scope relates to the values: In, NotIn, Exists or DoesNotExist." }),
    values: s.list(s.string(), {
      listType: 'atomic',
      description: 'Values for In and NotIn (at least one); empty for Exists and DoesNotExist.',
    }),
  },
  { required: ['scopeName', 'operator'], typeDescription: 'One scope requirement: a scope name, an operator and possibly values.' },
);

export const resourceQuotaSchema = objectSchema(
  `${CORE}.ResourceQuota`,
  {
    spec: s.struct(
      `${CORE}.ResourceQuotaSpec`,
      {
        hard: resourceList('Upper bounds of use per resource name: count/<resource>[.<group>], pods, configmaps, secrets, requests.cpu, ...'),
        scopes: s.list(s.string(), {
          listType: 'atomic',
          description: 'Filters every object measured by the quota; an object must match each scope to count.',
        }),
        scopeSelector: s.struct(
          `${CORE}.ScopeSelector`,
          {
            matchExpressions: s.list(scopedRequirementSchema, { listType: 'atomic', description: 'Requirements an object must meet, ANDed.' }),
          },
          {
            ptr: true,
            mapType: 'atomic',
            description: 'A selector over scopes that objects must match to be counted, in addition to scopes.',
            typeDescription: 'Scope requirements, all of which must hold.',
          },
        ),
      },
      { description: 'The limits the quota sets.', typeDescription: 'Hard limits and the scopes they apply to.' },
    ),
    status: s.struct(
      `${CORE}.ResourceQuotaStatus`,
      {
        hard: resourceList('The limits being enforced (a copy of spec.hard once the controller has seen it).'),
        used: resourceList('Current observed use of each limited resource in the namespace.'),
      },
      { description: 'The limits enforced and the use observed. Changed only through the status subresource.', typeDescription: 'Enforced limits and observed use.' },
    ),
  },
  [],
  'Limits on the total of objects and resources a namespace may hold, with the use observed against them.',
);

export const NOT_INTEGER = 'must be an integer';
export const NEGATIVE = 'must be greater than or equal to 0';
export const NOT_QUOTA_RESOURCE = 'must be a standard resource for quota';
export const NOT_STANDARD_RESOURCE = 'must be a standard resource type or fully qualified';

/** upstream's ValidateResourceQuotaResourceName. */
function validateResourceName(name: string, path: string): FieldError[] {
  const errs = isQualifiedName(name).map((m) => fieldErrors.invalid(path, name, m));
  if (name.includes('/')) return errs;
  if (!errs.length && !isStandardResourceName(name)) errs.push(fieldErrors.invalid(path, name, NOT_STANDARD_RESOURCE));
  if (!isStandardQuotaResourceName(name)) errs.push(fieldErrors.invalid(path, name, NOT_QUOTA_RESOURCE));
  return errs;
}

/** upstream's ValidateResourceQuantityValue (the text already parsed when it was decoded). */
function validateQuantity(name: string, text: string, path: string): FieldError[] {
  const v = Quantity.tryParse(text);
  if (!v) return [fieldErrors.invalid(path, text, 'must be a valid resource quantity')];
  const errs: FieldError[] = [];
  if (v.sign() < 0) errs.push(fieldErrors.invalid(path, v.toString(), NEGATIVE));
  if (isIntegerResourceName(name) && v.milliValue() % 1000n !== 0n) errs.push(fieldErrors.invalid(path, v.toString(), NOT_INTEGER));
  return errs;
}

function validateList(list: ResourceList | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(list ?? {})) {
    const p = `${path}[${k}]`;
    errs.push(...validateResourceName(k, p), ...validateQuantity(k, v, p));
  }
  return errs;
}

const POD_OBJECT_COUNT = new Set(['pods']);
const POD_COMPUTE = new Set(['cpu', 'memory', 'limits.cpu', 'limits.memory', 'requests.cpu', 'requests.memory']);

/** upstream's IsResourceQuotaScopeValidForResource. */
function scopeValidFor(scope: string, resource: string): boolean {
  switch (scope) {
    case 'Terminating':
    case 'NotTerminating':
    case 'NotBestEffort':
    case 'PriorityClass':
    case 'CrossNamespacePodAffinity':
      return POD_OBJECT_COUNT.has(resource) || POD_COMPUTE.has(resource);
    case 'BestEffort':
      return POD_OBJECT_COUNT.has(resource);
    case 'VolumeAttributesClass':
      return resource === 'persistentvolumeclaims' || resource === 'requests.storage';
    default:
      return true;
  }
}

const CONFLICTING_PAIRS: readonly (readonly [string, string])[] = [
  ['BestEffort', 'NotBestEffort'],
  ['Terminating', 'NotTerminating'],
];

const sortedKeys = (list: ResourceList | undefined): string[] => Object.keys(list ?? {}).sort();

function validateScopes(rq: ResourceQuota): FieldError[] {
  const scopes = rq.spec?.scopes ?? [];
  if (!scopes.length) return [];
  const errs: FieldError[] = [];
  const hard = sortedKeys(rq.spec?.hard);
  for (const scope of scopes) {
    if (!STANDARD_SCOPES.has(scope)) errs.push(fieldErrors.invalid('spec.scopes', scopes, 'unsupported scope'));
    for (const k of hard) if (isStandardQuotaResourceName(k) && !scopeValidFor(scope, k)) errs.push(fieldErrors.invalid('spec.scopes', scopes, 'unsupported scope applied to resource'));
  }
  for (const [a, b] of CONFLICTING_PAIRS) if (scopes.includes(a) && scopes.includes(b)) errs.push(fieldErrors.invalid('spec.scopes', scopes, 'conflicting scopes'));
  return errs;
}

const SCOPES_NEEDING_EXISTS = new Set(['BestEffort', 'NotBestEffort', 'Terminating', 'NotTerminating', 'CrossNamespacePodAffinity', 'VolumeAttributesClass']);

function validateScopeSelector(rq: ResourceQuota): FieldError[] {
  const sel = rq.spec?.scopeSelector;
  if (!sel) return [];
  const errs: FieldError[] = [];
  const path = 'spec.scopeSelector.matchExpressions';
  const hard = sortedKeys(rq.spec?.hard);
  const seen = new Set<string>();
  for (const req of sel.matchExpressions ?? ([] as ScopedResourceSelectorRequirement[])) {
    const scope = req.scopeName ?? '';
    const op = req.operator ?? '';
    const values = req.values ?? [];
    if (!STANDARD_SCOPES.has(scope)) errs.push(fieldErrors.invalid(`${path}.scopeName`, scope, 'unsupported scope'));
    for (const k of hard) if (isStandardQuotaResourceName(k) && !scopeValidFor(scope, k)) errs.push(fieldErrors.invalid(path, sel, 'unsupported scope applied to resource'));
    if (SCOPES_NEEDING_EXISTS.has(scope) && op !== 'Exists') {
      errs.push(
        fieldErrors.invalid(
          `${path}.operator`,
          op,
          "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
        ),
      );
    }
    switch (op) {
      case 'In':
      case 'NotIn':
        if (!values.length) errs.push(fieldErrors.required(`${path}.values`, "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"));
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length) errs.push(fieldErrors.invalid(`${path}.values`, values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"));
        break;
      default:
        errs.push(fieldErrors.invalid(`${path}.operator`, op, 'not a valid selector operator'));
    }
    seen.add(scope);
  }
  for (const [a, b] of CONFLICTING_PAIRS) if (seen.has(a) && seen.has(b)) errs.push(fieldErrors.invalid(path, rq.spec?.scopes ?? null, 'conflicting scopes'));
  return errs;
}

function validateSpec(rq: ResourceQuota): FieldError[] {
  return [...validateList(rq.spec?.hard, 'spec.hard'), ...validateScopes(rq), ...validateScopeSelector(rq)];
}

function validateStatus(rq: ResourceQuota): FieldError[] {
  return [...validateList(rq.status?.hard, 'status.hard'), ...validateList(rq.status?.used, 'status.used')];
}

function validateCreate(obj: ApiObject): FieldError[] {
  const rq = obj as ResourceQuota;
  return [...validateBuiltinFinalizerNames(obj.metadata), ...validateSpec(rq), ...validateStatus(rq)];
}

function validateUpdate(next: ApiObject, old: ApiObject): FieldError[] {
  const rq = next as ResourceQuota;
  const errs = [...validateBuiltinFinalizerNames(next.metadata), ...validateSpec(rq)];
  const now = new Set(rq.spec?.scopes ?? []);
  const before = new Set((old as ResourceQuota).spec?.scopes ?? []);
  if (now.size !== before.size || [...now].some((x) => !before.has(x))) errs.push(fieldErrors.invalid('spec.scopes', rq.spec?.scopes ?? null, 'field is immutable'));
  return errs;
}

const statusSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    (next as ResourceQuota).spec = (old as ResourceQuota).spec ?? {};
  },
  validateUpdate(next) {
    return [...validateBuiltinFinalizerNames(next.metadata), ...validateStatus(next as ResourceQuota)];
  },
};

/** `<name>: <used>/<hard>` for each enforced resource, sorted; limits.* in the second column (upstream's printer). */
function usageColumns(obj: ApiObject): { request: string; limit: string } {
  const st = (obj as ResourceQuota).status ?? {};
  const request: string[] = [];
  const limit: string[] = [];
  for (const name of Object.keys(st.hard ?? {}).sort()) {
    const used = Quantity.tryParse(st.used?.[name] ?? '0') ?? Quantity.zero();
    const hard = Quantity.tryParse(st.hard![name]!) ?? Quantity.zero();
    const pieces = name.split('.');
    (pieces.length > 1 && pieces[0] === 'limits' ? limit : request).push(`${name}: ${used.toString()}/${hard.toString()}`);
  }
  return { request: request.join(', '), limit: limit.join(', ') };
}

export const resourceQuotas: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'ResourceQuota',
  plural: 'resourcequotas',
  singular: 'resourcequota',
  namespaced: true,
  shortNames: ['quota'],
  protobufPackage: 'svc.io.api.core.v1',
  schema: resourceQuotaSchema,

  prepareForCreate(obj) {
    (obj as ResourceQuota).status = {};
  },
  prepareForUpdate(next, old) {
    (next as ResourceQuota).status = (old as ResourceQuota).status ?? {};
  },
  validateCreate,
  validateUpdate,

  tableColumns: [
    metadataNameColumn,
    metadataAgeColumn,
    {
      name: 'Request',
      type: 'string',
      description: 'Request represents a minimum amount of cpu/memory that a container may consume.',
      cell: (obj) => usageColumns(obj).request,
    },
    {
      name: 'Limit',
      type: 'string',
      description: 'Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.',
      cell: (obj) => usageColumns(obj).limit,
    },
  ],
  subresources: { status: statusSubresource },
  resetFields: { '': ['status'], status: ['spec'] },
};
