/**
 * APIService (apiregistration.svc.io/v1, cluster-scoped): one group version of the API and who serves
 * it: this server (no spec.service: "Local") or an extension API server reached through a service
 * reference, to which the aggregator (core/aggregator/) proxies the group version's requests. The
 * name must be `<version>.<group>` (`v1.` for the core group). The Available condition in status is
 * written by the availability controller through the status subresource. Rules and messages follow
 * upstream's kube-aggregator validation and strategy; the table is upstream's (Name, Service,
 * Available, Age).
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn, validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { invalidEach, isDNS1035Label, isDNS1123Subdomain, isValidPathSegmentName } from '../../api/validation.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType, SubresourceType } from '../resource-type.js';

const NS = 'io.svc.kube-aggregator.pkg.apis.apiregistration.v1';
export const APIREGISTRATION_GROUP = 'apiregistration.svc.io';

export interface ServiceReference {
  namespace?: string;
  name?: string;
  port?: number;
}

export interface APIServiceCondition {
  type: string;
  status: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface APIServiceSpec {
  service?: ServiceReference | null;
  group?: string;
  version?: string;
  insecureSkipTLSVerify?: boolean;
  caBundle?: string;
  groupPriorityMinimum?: number;
  versionPriority?: number;
}

export interface APIService extends ApiObject {
  spec: APIServiceSpec;
  status?: { conditions?: APIServiceCondition[] };
}

/** The condition the aggregator routes by. */
export const AVAILABLE = 'Available';
const CONDITION_STATUSES = ['True', 'False', 'Unknown'];

export const apiServiceSchema = objectSchema(
  `${NS}.APIService`,
  {
    spec: s.struct(
      `${NS}.APIServiceSpec`,
      {
        service: s.struct(
          `${NS}.ServiceReference`,
          {
            namespace: s.string({ description: 'Namespace of the service.' }),
            name: s.string({ description: 'Name of the service.' }),
            port: s.int32({ ptr: true, description: 'Port of the service the extension server listens on (1-65535); 443 when unset.' }),
          },
          { ptr: true, description: 'The service of the extension API server; unset: this group version is served by this server (Local).', typeDescription: 'A reference to a service by namespace, name and port.' },
        ),
        group: s.string({ description: 'The API group this server hosts.' }),
        version: s.string({ description: 'The API version this server hosts, e.g. "v1".' }),
        insecureSkipTLSVerify: s.boolean({ description: 'Skips verifying the extension server\'s certificate. Strongly discouraged: use caBundle.' }),
        caBundle: s.bytes({ description: 'PEM bundle (base64 in JSON) the extension server\'s serving certificate must chain to; the host\'s roots when unset.' }),
        groupPriorityMinimum: s.int32({ always: true, description: 'The least priority of the group in discovery: higher first (20 before 10), then by name. 1-20000.' }),
        versionPriority: s.int32({ always: true, description: 'The order of this version within its group: higher first, then kube-like version order. 1-1000.' }),
      },
      { description: 'Where and how to reach the server of this group version.', typeDescription: 'Information for locating and communicating with a server.' },
    ),
    status: s.struct(
      `${NS}.APIServiceStatus`,
      {
        conditions: s.list(
          s.struct(
            `${NS}.APIServiceCondition`,
            {
              type: s.string({ always: true, description: 'The condition type (Available).' }),
              status: s.string({ always: true, description: 'True, False or Unknown.' }),
              lastTransitionTime: s.time({ description: 'When the status last changed.' }),
              reason: s.string({ description: 'One-word CamelCase reason of the last transition.' }),
              message: s.string({ description: 'Human-readable detail of the last transition.' }),
            },
            { required: ['type', 'status'], typeDescription: 'The state of an APIService at a point in time.' },
          ),
          { listType: 'map', listMapKeys: ['type'], patchStrategy: 'merge', patchMergeKey: 'type', description: 'The current state of the APIService.' },
        ),
      },
      { description: 'What is observed of the server. Changed only through the status subresource.', typeDescription: 'Derived information about an API server.' },
    ),
  },
  [],
  'A server for one group version of the API: this server (Local) or an extension API server behind a service.',
);

/** upstream's ValidateAPIService: the name, group, version, priorities and the service reference. */
function validateSpec(a: APIService): FieldError[] {
  const spec = a.spec ?? {};
  const group = spec.group ?? '';
  const version = spec.version ?? '';
  const errs: FieldError[] = [];
  const name = a.metadata?.name ?? '';
  if (name && !isValidPathSegmentName(name).length && name !== `${version}.${group}`) {
    errs.push(fieldErrors.invalid('metadata.name', name, `must be \`spec.version+"."+spec.group\`: ${JSON.stringify(`${version}.${group}`)}`));
  }
  if (!group && version !== 'v1') errs.push(fieldErrors.required('spec.group', 'only v1 may have an empty group and it better be legacy kube'));
  if (group) errs.push(...invalidEach('spec.group', group, isDNS1123Subdomain(group)));
  errs.push(...invalidEach('spec.version', version, isDNS1035Label(version)));
  const gpm = spec.groupPriorityMinimum ?? 0;
  if (gpm <= 0 || gpm > 20000) errs.push(fieldErrors.invalid('spec.groupPriorityMinimum', gpm, 'must be positive and less than 20000'));
  const vp = spec.versionPriority ?? 0;
  if (vp <= 0 || vp > 1000) errs.push(fieldErrors.invalid('spec.versionPriority', vp, 'must be positive and less than 1000'));
  const caBytes = spec.caBundle ? Buffer.from(spec.caBundle, 'base64').byteLength : 0;
  if (!spec.service) {
    if (caBytes) errs.push(fieldErrors.invalid('spec.caBundle', `${caBytes} bytes`, 'local APIServices may not have a caBundle'));
    if (spec.insecureSkipTLSVerify) errs.push(fieldErrors.invalid('spec.insecureSkipTLSVerify', true, 'local APIServices may not have insecureSkipTLSVerify'));
    return errs;
  }
  if (!spec.service.namespace) errs.push(fieldErrors.required('spec.service.namespace', ''));
  if (!spec.service.name) errs.push(fieldErrors.required('spec.service.name', ''));
  const port = spec.service.port ?? 443;
  if (!Number.isInteger(port) || port < 1 || port > 65535) errs.push(fieldErrors.invalid('spec.service.port', port, 'port is not valid: must be between 1 and 65535, inclusive'));
  if (spec.insecureSkipTLSVerify && caBytes) errs.push(fieldErrors.invalid('spec.insecureSkipTLSVerify', true, 'may not be true if caBundle is present'));
  return errs;
}

function validateStatus(a: APIService): FieldError[] {
  const errs: FieldError[] = [];
  (a.status?.conditions ?? []).forEach((c, i) => {
    if (!CONDITION_STATUSES.includes(c.status)) errs.push(fieldErrors.notSupported(`status.conditions[${i}].status`, c.status, CONDITION_STATUSES));
  });
  return errs;
}

/** The Available condition of an APIService, if it has one. */
export function availableCondition(a: APIService): APIServiceCondition | undefined {
  return a.status?.conditions?.find((c) => c.type === AVAILABLE);
}

/** Whether requests for the APIService may be served (its Available condition is True). */
export const isAvailable = (a: APIService): boolean => availableCondition(a)?.status === 'True';

/** upstream's printer: True, or the status with its reason. */
function availableCell(obj: ApiObject): string {
  const c = availableCondition(obj as APIService);
  if (!c) return 'Unknown';
  if (c.status === 'True' || !c.reason) return c.status;
  return `${c.status} (${c.reason})`;
}

const statusSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    (next as APIService).spec = (old as APIService).spec;
  },
  validateUpdate(next) {
    return [...validateBuiltinFinalizerNames(next.metadata), ...validateStatus(next as APIService)];
  },
};

export const apiServices: ResourceType = {
  group: APIREGISTRATION_GROUP,
  version: 'v1',
  kind: 'APIService',
  plural: 'apiservices',
  singular: 'apiservice',
  namespaced: false,
  categories: ['api-extensions'],
  protobufPackage: 'svc.io.kube_aggregator.pkg.apis.apiregistration.v1',
  schema: apiServiceSchema,
  nameRule: 'path-segment',
  defaults(obj) {
    const svc = (obj as APIService).spec?.service;
    // upstream's v1 defaulting of the service port
    if (svc && svc.port === undefined) svc.port = 443;
  },
  prepareForCreate(obj) {
    (obj as APIService).status = {};
  },
  prepareForUpdate(next, old) {
    (next as APIService).status = (old as APIService).status ?? {};
  },
  validateCreate: (obj) => [...validateBuiltinFinalizerNames(obj.metadata), ...validateSpec(obj as APIService)],
  validateUpdate: (next) => [...validateBuiltinFinalizerNames(next.metadata), ...validateSpec(next as APIService)],
  tableColumns: [
    metadataNameColumn,
    {
      name: 'Service',
      type: 'string',
      description: 'The reference to the service that hosts this API endpoint.',
      cell: (obj) => {
        const svc = (obj as APIService).spec?.service;
        return svc ? `${svc.namespace ?? ''}/${svc.name ?? ''}` : 'Local';
      },
    },
    { name: 'Available', type: 'string', description: 'Whether this service is available.', cell: availableCell },
    metadataAgeColumn,
  ],
  subresources: { status: statusSubresource },
  resetFields: { '': ['status'], status: ['spec'] },
};
