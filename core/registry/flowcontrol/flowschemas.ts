/**
 * FlowSchema (flowcontrol.apiserver.svc.io/v1, cluster-scoped): which requests (subjects and the
 * resource or non-resource rules they act under) go to which priority level, in order of
 * matchingPrecedence, and how they are divided into flows (ByUser, ByNamespace). Its status holds the
 * `Dangling` condition, kept by the priority-and-fairness controller (core/flowcontrol/). Validation
 * and defaulting are upstream's (pkg/apis/flowcontrol/validation, v1 defaults); the mandatory schemas
 * (exempt, catch-all) must keep their fixed spec, as upstream.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { isDNS1123Label, isDNS1123Subdomain, jsonEqual } from '../../api/validation.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType, SubresourceType } from '../resource-type.js';
import { mandatoryFlowSchemas } from '../../flowcontrol/bootstrap.js';

export const FLOWCONTROL_GROUP = 'flowcontrol.apiserver.svc.io';
const FC = 'io.svc.api.flowcontrol.v1';

export interface Subject {
  kind: string;
  user?: { name: string };
  group?: { name: string };
  serviceAccount?: { namespace: string; name: string };
}

export interface ResourcePolicyRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  clusterScope?: boolean;
  namespaces?: string[];
}

export interface NonResourcePolicyRule {
  verbs: string[];
  nonResourceURLs: string[];
}

export interface PolicyRulesWithSubjects {
  subjects: Subject[];
  resourceRules?: ResourcePolicyRule[];
  nonResourceRules?: NonResourcePolicyRule[];
}

export interface FlowSchemaSpec {
  priorityLevelConfiguration: { name: string };
  matchingPrecedence?: number;
  distinguisherMethod?: { type: string };
  rules?: PolicyRulesWithSubjects[];
}

export interface FlowControlCondition {
  type?: string;
  status?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface FlowSchema extends ApiObject {
  spec: FlowSchemaSpec;
  status?: { conditions?: FlowControlCondition[] };
}

/** upstream's FlowSchemaDefaultMatchingPrecedence and the range allowed. */
export const DEFAULT_MATCHING_PRECEDENCE = 1000;
export const MAX_MATCHING_PRECEDENCE = 10000;
export const DISTINGUISHER_METHODS = ['ByNamespace', 'ByUser'] as const;
export const SUBJECT_KINDS = ['Group', 'ServiceAccount', 'User'] as const;
/** `*` as a verb, group, resource, namespace, name or URL matches every one. */
export const WILDCARD = '*';
/** The verbs a rule may name besides `*` (upstream's supportedVerbs). */
export const SUPPORTED_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'proxy', 'update', 'watch'] as const;
const NS_ERR_INTRO = "each member of this list must be '*' or a DNS-1123 label; ";

export const conditionSchema = (name: string) =>
  s.struct(
    `${FC}.${name}`,
    {
      type: s.string({ description: 'The type of the condition (Dangling for a FlowSchema).' }),
      status: s.string({ description: 'True, False or Unknown.' }),
      lastTransitionTime: s.time({ description: 'When the status last changed.' }),
      reason: s.string({ description: 'A CamelCase reason for the last transition.' }),
      message: s.string({ description: 'A human-readable message about the last transition.' }),
    },
    { typeDescription: 'One observation of the object\'s state.' },
  );

/** The status of both flowcontrol kinds: conditions keyed by type (`<Kind>Status`, `<Kind>Condition`). */
export const conditionsStatusSchema = (kind: string, t: { conditions: string; status: string; type: string }) =>
  s.struct(
    `${FC}.${kind}Status`,
    {
      conditions: s.list(conditionSchema(`${kind}Condition`), { listType: 'map', listMapKeys: ['type'], patchStrategy: 'merge', patchMergeKey: 'type', description: t.conditions }),
    },
    { description: t.status, typeDescription: t.type },
  );

const stringList = (description: string) => s.list(s.string(), { listType: 'set', description });

const subjectSchema = s.struct(
  `${FC}.Subject`,
  {
    kind: s.string({ always: true, description: 'User, Group or ServiceAccount: which of the other fields is set.' }),
    user: s.struct(`${FC}.UserSubject`, { name: s.string({ always: true, description: 'The user name, or "*" for every user.' }) }, { ptr: true, required: ['name'], description: 'The user, when kind is User.', typeDescription: 'A user.' }),
    group: s.struct(`${FC}.GroupSubject`, { name: s.string({ always: true, description: 'The group name, or "*" for every group.' }) }, { ptr: true, required: ['name'], description: 'The group, when kind is Group.', typeDescription: 'A group.' }),
    serviceAccount: s.struct(
      `${FC}.ServiceAccountSubject`,
      {
        namespace: s.string({ always: true, description: 'The namespace of the service account.' }),
        name: s.string({ always: true, description: 'The name of the service account, or "*" for all in the namespace.' }),
      },
      { ptr: true, required: ['namespace', 'name'], description: 'The service account, when kind is ServiceAccount.', typeDescription: 'A service account.' },
    ),
  },
  { required: ['kind'], typeDescription: 'Who a request comes from: a user, a group or a service account.' },
);

export const flowSchemaSchema = objectSchema(
  `${FC}.FlowSchema`,
  {
    spec: s.struct(
      `${FC}.FlowSchemaSpec`,
      {
        priorityLevelConfiguration: s.struct(
          `${FC}.PriorityLevelConfigurationReference`,
          { name: s.string({ always: true, description: 'The name of the priority level the matching requests are served at.' }) },
          { always: true, required: ['name'], description: 'The priority level matching requests go to.', typeDescription: 'A reference to a priority level.' },
        ),
        matchingPrecedence: s.int32({ description: 'Order among FlowSchemas: the lowest that matches wins (1 to 10000, default 1000).' }),
        distinguisherMethod: s.struct(
          `${FC}.FlowDistinguisherMethod`,
          { type: s.string({ always: true, description: 'ByUser or ByNamespace.' }) },
          { ptr: true, required: ['type'], description: 'How matching requests are divided into flows; absent: one flow.', typeDescription: 'How requests are divided into flows.' },
        ),
        rules: s.list(
          s.struct(
            `${FC}.PolicyRulesWithSubjects`,
            {
              subjects: s.list(subjectSchema, { listType: 'atomic', description: 'Who the rules apply to (at least one).' }),
              resourceRules: s.list(
                s.struct(
                  `${FC}.ResourcePolicyRule`,
                  {
                    verbs: stringList('Verbs matched, or "*".'),
                    apiGroups: stringList('API groups matched, or "*".'),
                    resources: stringList('Resources (and resource/subresource) matched, or "*".'),
                    clusterScope: s.boolean({ description: 'Whether requests that name no namespace match.' }),
                    namespaces: stringList('Namespaces matched, or "*".'),
                  },
                  { required: ['verbs', 'apiGroups', 'resources'], typeDescription: 'A rule over resource requests.' },
                ),
                { listType: 'atomic', description: 'Rules over resource requests.' },
              ),
              nonResourceRules: s.list(
                s.struct(
                  `${FC}.NonResourcePolicyRule`,
                  { verbs: stringList('Verbs matched, or "*".'), nonResourceURLs: stringList('URL paths matched: exact, a "/prefix/*" glob, or "*".') },
                  { required: ['verbs', 'nonResourceURLs'], typeDescription: 'A rule over non-resource requests.' },
                ),
                { listType: 'atomic', description: 'Rules over non-resource requests.' },
              ),
            },
            { required: ['subjects'], typeDescription: 'Rules that match a request when its subject and its action both match.' },
          ),
          { listType: 'atomic', description: 'A request matches the FlowSchema when it matches one of these.' },
        ),
      },
      { required: ['priorityLevelConfiguration'], description: 'What the FlowSchema matches and where it sends it.', typeDescription: 'The specification of a FlowSchema.' },
    ),
    status: conditionsStatusSchema('FlowSchema', { conditions: 'The current state of the FlowSchema (Dangling).', status: 'The current state of the FlowSchema.', type: 'The state of a FlowSchema.' }),
  },
  [],
  'Which requests go to which priority level, and how they are divided into flows.',
);

/** upstream's v1 defaulting: matchingPrecedence 0 (unset) is 1000. */
function defaults(obj: ApiObject): void {
  const spec = (obj as FlowSchema).spec;
  if (!spec) return;
  if (!spec.matchingPrecedence) spec.matchingPrecedence = DEFAULT_MATCHING_PRECEDENCE;
}

const hasWildcard = (xs: readonly string[]): boolean => xs.includes(WILDCARD);

/** upstream's ValidateNonResourceURLPath. */
function nonResourceURLPathError(path: string): string | undefined {
  if (path === '') return 'must not be empty';
  if (path === '/') return undefined;
  if (!path.startsWith('/')) return 'must start with slash';
  if (path.includes(' ')) return 'must not contain white-space';
  if (path.includes('//')) return 'must not contain double slash';
  const stars = path.split('*').length - 1;
  if (stars > 1 || (stars === 1 && !path.endsWith('/*'))) return 'wildcard can only do suffix glob matching';
  return undefined;
}

function validateSubject(sub: Subject, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const forbid = (field: 'user' | 'group' | 'serviceAccount', kind: string): void => {
    if (sub[field] != null) errs.push(fieldErrors.forbidden(`${path}.${field}`, `${field} is forbidden when subject kind is not '${kind}'`));
  };
  switch (sub.kind) {
    case 'ServiceAccount': {
      const sa = sub.serviceAccount;
      if (!sa) errs.push(fieldErrors.required(`${path}.serviceAccount`, "serviceAccount is required when subject kind is 'ServiceAccount'"));
      else {
        if (!sa.name) errs.push(fieldErrors.required(`${path}.serviceAccount.name`));
        else if (sa.name !== WILDCARD) for (const m of isDNS1123Subdomain(sa.name)) errs.push(fieldErrors.invalid(`${path}.serviceAccount.name`, sa.name, m));
        if (!sa.namespace) errs.push(fieldErrors.required(`${path}.serviceAccount.namespace`, 'must specify namespace for service account'));
        else for (const m of isDNS1123Label(sa.namespace)) errs.push(fieldErrors.invalid(`${path}.serviceAccount.namespace`, sa.namespace, m));
      }
      forbid('user', 'User');
      forbid('group', 'Group');
      break;
    }
    case 'User':
      if (!sub.user) errs.push(fieldErrors.required(`${path}.user`, "user is required when subject kind is 'User'"));
      else if (!sub.user.name) errs.push(fieldErrors.required(`${path}.user.name`));
      forbid('serviceAccount', 'ServiceAccount');
      forbid('group', 'Group');
      break;
    case 'Group':
      if (!sub.group) errs.push(fieldErrors.required(`${path}.group`, "group is required when subject kind is 'Group'"));
      else if (!sub.group.name) errs.push(fieldErrors.required(`${path}.group.name`));
      forbid('serviceAccount', 'ServiceAccount');
      forbid('user', 'User');
      break;
    default:
      errs.push(fieldErrors.notSupported(`${path}.kind`, sub.kind, SUBJECT_KINDS));
  }
  return errs;
}

function validateVerbs(verbs: readonly string[], path: string): FieldError[] {
  if (!verbs.length) return [fieldErrors.required(`${path}.verbs`, 'verbs must contain at least one value')];
  if (hasWildcard(verbs)) return verbs.length > 1 ? [fieldErrors.invalid(`${path}.verbs`, verbs, "if '*' is present, must not specify other verbs")] : [];
  return verbs.every((v) => (SUPPORTED_VERBS as readonly string[]).includes(v)) ? [] : [fieldErrors.notSupported(`${path}.verbs`, verbs, SUPPORTED_VERBS)];
}

function validateResourceRule(rule: ResourcePolicyRule, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const verbs = rule.verbs ?? [];
  errs.push(...validateVerbs(verbs, path));
  const groups = rule.apiGroups ?? [];
  if (!groups.length) errs.push(fieldErrors.required(`${path}.apiGroups`, 'resource rules must supply at least one api group'));
  else if (hasWildcard(groups) && groups.length > 1) errs.push(fieldErrors.invalid(`${path}.apiGroups`, groups, "if '*' is present, must not specify other api groups"));
  const resources = rule.resources ?? [];
  if (!resources.length) errs.push(fieldErrors.required(`${path}.resources`, 'resource rules must supply at least one resource'));
  else if (hasWildcard(resources) && resources.length > 1) errs.push(fieldErrors.invalid(`${path}.resources`, resources, "if '*' is present, must not specify other resources"));
  const namespaces = rule.namespaces ?? [];
  if (!namespaces.length && !rule.clusterScope) errs.push(fieldErrors.required(`${path}.namespaces`, 'resource rules that are not cluster scoped must supply at least one namespace'));
  else if (hasWildcard(namespaces)) {
    if (namespaces.length > 1) errs.push(fieldErrors.invalid(`${path}.namespaces`, namespaces, "if '*' is present, must not specify other namespaces"));
  } else namespaces.forEach((ns, i) => errs.push(...isDNS1123Label(ns).map((m) => fieldErrors.invalid(`${path}.namespaces[${i}]`, ns, NS_ERR_INTRO + m))));
  return errs;
}

function validateNonResourceRule(rule: NonResourcePolicyRule, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const verbs = rule.verbs ?? [];
  errs.push(...validateVerbs(verbs, path));
  const urls = rule.nonResourceURLs ?? [];
  if (!urls.length) errs.push(fieldErrors.required(`${path}.nonResourceURLs`, 'nonResourceURLs must contain at least one value'));
  else if (hasWildcard(urls)) {
    if (urls.length > 1) errs.push(fieldErrors.invalid(`${path}.nonResourceURLs`, urls, "if '*' is present, must not specify other non-resource URLs"));
  } else
    urls.forEach((u, i) => {
      const m = nonResourceURLPathError(u);
      if (m) errs.push(fieldErrors.invalid(`${path}.nonResourceURLs[${i}]`, u, m));
    });
  return errs;
}

/** upstream's ValidateFlowSchemaSpec. */
export function validateFlowSchemaSpec(spec: FlowSchemaSpec, name: string, path = 'spec'): FieldError[] {
  const errs: FieldError[] = [];
  const prec = spec.matchingPrecedence ?? 0;
  if (prec <= 0) errs.push(fieldErrors.invalid(`${path}.matchingPrecedence`, prec, 'must be a positive value'));
  if (prec > MAX_MATCHING_PRECEDENCE) errs.push(fieldErrors.invalid(`${path}.matchingPrecedence`, prec, `must not be greater than ${MAX_MATCHING_PRECEDENCE}`));
  if (prec === 1 && name !== 'exempt') errs.push(fieldErrors.invalid(`${path}.matchingPrecedence`, prec, "only the schema named 'exempt' may have matchingPrecedence 1"));
  const dm = spec.distinguisherMethod;
  if (dm && !(DISTINGUISHER_METHODS as readonly string[]).includes(dm.type)) errs.push(fieldErrors.notSupported(`${path}.distinguisherMethod.type`, dm.type, DISTINGUISHER_METHODS));
  const pl = spec.priorityLevelConfiguration?.name ?? '';
  if (pl) errs.push(...isDNS1123Subdomain(pl).map((m) => fieldErrors.invalid(`${path}.priorityLevelConfiguration.name`, pl, m)));
  else errs.push(fieldErrors.required(`${path}.priorityLevelConfiguration.name`, 'must reference a priority level'));
  (spec.rules ?? []).forEach((rule, i) => {
    const rp = `${path}.rules[${i}]`;
    if ((rule.subjects ?? []).length) rule.subjects.forEach((sub, j) => errs.push(...validateSubject(sub, `${rp}.subjects[${j}]`)));
    else errs.push(fieldErrors.required(`${rp}.subjects`, 'subjects must contain at least one value'));
    if (!(rule.resourceRules ?? []).length && !(rule.nonResourceRules ?? []).length) errs.push(fieldErrors.required(rp, 'at least one of resourceRules and nonResourceRules has to be non-empty'));
    (rule.resourceRules ?? []).forEach((r, j) => errs.push(...validateResourceRule(r, `${rp}.resourceRules[${j}]`)));
    (rule.nonResourceRules ?? []).forEach((r, j) => errs.push(...validateNonResourceRule(r, `${rp}.nonResourceRules[${j}]`)));
  });
  return errs;
}

/** upstream's status validation of both kinds: each condition has a type, and no type twice. */
export function validateConditions(conditions: readonly FlowControlCondition[] | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  (conditions ?? []).forEach((c, i) => {
    if (seen.has(c.type ?? '')) errs.push(fieldErrors.duplicate(`${path}[${i}].type`, c.type));
    seen.add(c.type ?? '');
    if (!c.type) errs.push(fieldErrors.required(`${path}[${i}].type`, 'must not be empty'));
  });
  return errs;
}

function validateFlowSchema(obj: ApiObject): FieldError[] {
  const fs = obj as FlowSchema;
  const errs = validateFlowSchemaSpec(fs.spec ?? ({} as FlowSchemaSpec), fs.metadata?.name ?? '');
  const fixed = mandatoryFlowSchemas.find((m) => m.metadata.name === fs.metadata?.name)?.spec;
  if (fixed && !jsonEqual(normalizedSpec(fs.spec), normalizedSpec(fixed))) errs.push(fieldErrors.invalid('spec', fs.spec, `spec of '${fs.metadata?.name}' must equal the fixed value`));
  errs.push(...validateConditions(fs.status?.conditions, 'status.conditions'));
  return errs;
}

/** The spec with empty lists and false flags dropped, as Go's semantic equality sees nil and empty alike. */
export function normalizedSpec(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalizedSpec);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined || x === null || x === false || (Array.isArray(x) && x.length === 0)) continue;
      out[k] = normalizedSpec(x);
    }
    return out;
  }
  return v;
}

const statusSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    (next as FlowSchema).spec = (old as FlowSchema).spec;
  },
  validateUpdate: (next) => validateConditions((next as FlowSchema).status?.conditions, 'status.conditions'),
};

export const flowSchemas: ResourceType = {
  group: FLOWCONTROL_GROUP,
  version: 'v1',
  kind: 'FlowSchema',
  plural: 'flowschemas',
  singular: 'flowschema',
  namespaced: false,
  protobufPackage: 'svc.io.api.flowcontrol.v1',
  schema: flowSchemaSchema,
  defaults,
  prepareForCreate(obj) {
    delete (obj as FlowSchema).status;
  },
  prepareForUpdate(next, old) {
    const prev = (old as FlowSchema).status;
    if (prev) (next as FlowSchema).status = structuredClone(prev);
    else delete (next as FlowSchema).status;
  },
  validateCreate: validateFlowSchema,
  validateUpdate: validateFlowSchema,
  generationOf: (obj) => (obj as FlowSchema).spec,
  tableColumns: [
    metadataNameColumn,
    { name: 'PriorityLevel', type: 'string', description: '`name` is the name of the priority level configuration being referenced Required.', cell: (o) => (o as FlowSchema).spec?.priorityLevelConfiguration?.name ?? '' },
    {
      name: 'MatchingPrecedence',
      type: 'string',
      description:
        '`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.',
      cell: (o) => (o as FlowSchema).spec?.matchingPrecedence ?? 0,
    },
    {
      name: 'DistinguisherMethod',
      type: 'string',
      description: '`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.',
      cell: (o) => (o as FlowSchema).spec?.distinguisherMethod?.type ?? '<none>',
    },
    metadataAgeColumn,
    {
      name: 'MissingPL',
      type: 'string',
      description: 'indicates if the referenced priority level exists or not',
      cell: (o) => (o as FlowSchema).status?.conditions?.find((c) => c.type === 'Dangling')?.status ?? '?',
    },
  ],
  subresources: { status: statusSubresource },
  resetFields: { '': ['status'], status: ['spec'] },
};
