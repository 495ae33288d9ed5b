/**
 * CSIDriver (storage.svc.io/v1, cluster-scoped): how the cluster talks to one CSI volume driver.
 * Defaults, allowed values, the immutability of attachRequired and volumeLifecycleModes, the token
 * request rules and the generation bump on spec changes follow upstream's storage v1 defaults,
 * ValidateCSIDriver* and csidriver strategy; on top of the DNS-subdomain object name, the name (which
 * must equal the driver's own name) is limited to 63 characters as the spec requires.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn, validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { byteLength, jsonEqual, validateImmutableField } from '../../api/validation.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

export const CSI_DRIVER_NAME_MAX_LENGTH = 63;
export const FSGroupPolicy = { readWriteOnceWithFSType: 'ReadWriteOnceWithFSType', file: 'File', none: 'None' } as const;
const supportedFSGroupPolicies: readonly string[] = [FSGroupPolicy.file, FSGroupPolicy.none, FSGroupPolicy.readWriteOnceWithFSType];
export const VolumeLifecycleMode = { persistent: 'Persistent', ephemeral: 'Ephemeral' } as const;
const supportedLifecycleModes: readonly string[] = [VolumeLifecycleMode.persistent, VolumeLifecycleMode.ephemeral];
/** Token lifetimes the kubelet may request for a driver: 10 minutes to 2^32 seconds. */
const MIN_TOKEN_EXPIRATION_SECONDS = 600;
const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;

interface TokenRequest {
  audience?: string;
  expirationSeconds?: number;
}

interface CSIDriverSpec {
  attachRequired?: boolean;
  podInfoOnMount?: boolean;
  volumeLifecycleModes?: string[];
  storageCapacity?: boolean;
  fsGroupPolicy?: string;
  tokenRequests?: TokenRequest[];
  requiresRepublish?: boolean;
  seLinuxMount?: boolean;
}

interface CSIDriver extends ApiObject {
  spec?: CSIDriverSpec;
}

const STORAGE = 'io.svc.api.storage.v1';

// Descriptions follow the spec's CSIDriver tables, in this project's words.
const tokenRequestSchema = s.struct(
  `${STORAGE}.TokenRequest`,
  {
    audience: s.string({
      always: true,
      description: "Audience the token is for; empty means the API server's own audiences. Audiences must differ between entries.",
    }),
    expirationSeconds: s.int64({
      ptr: true,
      description: 'How long the token is valid, in seconds: at least 10 minutes, at most 2^32 seconds. Defaults as for any token request.',
    }),
  },
  { required: ['audience'], typeDescription: 'A service account token the driver is given on mount.' },
);

export const csiDriverSchema = objectSchema(
  `${STORAGE}.CSIDriver`,
  {
    spec: s.struct(
      `${STORAGE}.CSIDriverSpec`,
      {
        attachRequired: s.boolean({
          ptr: true,
          description: 'Whether volumes need an attach step: if so, the attach/detach controller waits for it before the volume is mounted. Default true. Immutable.',
        }),
        podInfoOnMount: s.boolean({
          ptr: true,
          description: 'When true, the pod name, namespace and UID, and whether the volume is ephemeral, are passed to the driver as volume context on mount. Default false.',
        }),
        volumeLifecycleModes: s.list(s.string(), {
          listType: 'set',
          description: 'Volume modes the driver supports: Persistent (assumed when empty) and Ephemeral (a volume declared inside a pod, living as long as the pod). Immutable.',
        }),
        storageCapacity: s.boolean({
          ptr: true,
          description: 'When true, scheduling takes into account the capacity the driver reports in CSIStorageCapacity objects. Default false; may be changed later.',
        }),
        fsGroupPolicy: s.string({
          ptr: true,
          description:
            "Whether the volume's ownership and permissions are changed to the pod's fsGroup on mount: ReadWriteOnceWithFSType (default: only with an fstype and a ReadWriteOnce access mode), File or None.",
        }),
        tokenRequests: s.list(tokenRequestSchema, {
          listType: 'atomic',
          description: 'Service account tokens the driver needs, one per audience; replaced as a whole on merge.',
        }),
        requiresRepublish: s.boolean({
          ptr: true,
          description: 'When true, the mount call is repeated periodically so contents such as tokens can be refreshed; running containers do not see new mount points. Default false.',
        }),
        seLinuxMount: s.boolean({
          ptr: true,
          description: "When true, the driver supports the '-o context' mount option, so each volume is mounted with a single SELinux context. Default false.",
        }),
      },
      { description: 'How the cluster works with the driver.', typeDescription: 'Settings of one CSI driver.' },
    ),
  },
  ['spec'],
  "A Container Storage Interface volume driver installed on the cluster: whether its volumes need attaching and what it is told on mount. The object's name is the driver's own name (at most 63 characters).",
);

function defaults(obj: ApiObject): void {
  const spec = ((obj as CSIDriver).spec ??= {});
  spec.attachRequired ??= true;
  spec.podInfoOnMount ??= false;
  spec.storageCapacity ??= false;
  spec.fsGroupPolicy ??= FSGroupPolicy.readWriteOnceWithFSType;
  if (!spec.volumeLifecycleModes?.length) spec.volumeLifecycleModes = [VolumeLifecycleMode.persistent];
  spec.requiresRepublish ??= false;
  // The SELinuxMountReadWriteOncePod gate is on (beta) in 1.32, so the field is defaulted and required.
  spec.seLinuxMount ??= false;
}

const required = (value: unknown, path: string): FieldError[] => (value == null ? [fieldErrors.required(path, '')] : []);

function validateTokenRequests(requests: readonly TokenRequest[], path: string): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  requests.forEach((req, i) => {
    const p = `${path}[${i}]`;
    const audience = req.audience ?? '';
    // Distinct audiences; at most one may be empty (the API server's own audiences).
    if (seen.has(audience)) {
      errs.push(fieldErrors.duplicate(`${p}.audience`, audience));
      return;
    }
    seen.add(audience);
    const exp = req.expirationSeconds;
    if (exp == null) return;
    if (exp < MIN_TOKEN_EXPIRATION_SECONDS) errs.push(fieldErrors.invalid(`${p}.expirationSeconds`, exp, 'may not specify a duration less than 10 minutes'));
    if (exp > MAX_TOKEN_EXPIRATION_SECONDS) errs.push(fieldErrors.invalid(`${p}.expirationSeconds`, exp, 'may not specify a duration larger than 2^32 seconds'));
  });
  return errs;
}

function validateSpec(spec: CSIDriverSpec): FieldError[] {
  const errs: FieldError[] = [];
  // upstream reports attachRequired at `attachedRequired`.
  errs.push(...required(spec.attachRequired, 'spec.attachedRequired'));
  errs.push(...required(spec.podInfoOnMount, 'spec.podInfoOnMount'));
  errs.push(...required(spec.storageCapacity, 'spec.storageCapacity'));
  if (spec.fsGroupPolicy != null && !supportedFSGroupPolicies.includes(spec.fsGroupPolicy)) {
    errs.push(fieldErrors.notSupported('spec.fsGroupPolicy', spec.fsGroupPolicy, supportedFSGroupPolicies));
  }
  errs.push(...validateTokenRequests(spec.tokenRequests ?? [], 'spec.tokenRequests'));
  for (const mode of spec.volumeLifecycleModes ?? []) {
    if (!supportedLifecycleModes.includes(mode)) errs.push(fieldErrors.notSupported('spec.volumeLifecycleModes', mode, supportedLifecycleModes));
  }
  errs.push(...required(spec.seLinuxMount, 'spec.seLinuxMount'));
  return errs;
}

/** The spec's driver-name limit, checked on top of the DNS-subdomain object name rule. */
function validateDriverName(obj: ApiObject): FieldError[] {
  const name = obj.metadata.name ?? '';
  return byteLength(name) > CSI_DRIVER_NAME_MAX_LENGTH ? [fieldErrors.tooLong('metadata.name', name, CSI_DRIVER_NAME_MAX_LENGTH)] : [];
}

/**
 * The spec's name rule: alphanumerics (either case) at both ends, dashes, dots and alphanumerics
 * between; the 63-character limit is checked with the other create rules.
 */
const CSI_DRIVER_NAME = /^[a-zA-Z0-9]([-.a-zA-Z0-9]*[a-zA-Z0-9])?$/;
const CSI_DRIVER_PREFIX = /^[a-zA-Z0-9][-.a-zA-Z0-9]*$/;
const csiDriverNameMessage =
  "a CSI driver name must consist of alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'csi.example.com', regex used for validation is '[a-zA-Z0-9]([-.a-zA-Z0-9]*[a-zA-Z0-9])?')";
function csiDriverName(name: string, prefix: boolean): string[] {
  return (prefix ? CSI_DRIVER_PREFIX : CSI_DRIVER_NAME).test(name) ? [] : [csiDriverNameMessage];
}

function validateCreate(obj: ApiObject): FieldError[] {
  return [...validateBuiltinFinalizerNames(obj.metadata), ...validateDriverName(obj), ...validateSpec((obj as CSIDriver).spec ?? {})];
}

function validateUpdate(next: ApiObject, old: ApiObject): FieldError[] {
  const spec = (next as CSIDriver).spec ?? {};
  const prev = (old as CSIDriver).spec ?? {};
  return [
    ...validateBuiltinFinalizerNames(next.metadata),
    ...validateSpec(spec),
    ...validateImmutableField(spec.attachRequired ?? null, prev.attachRequired ?? null, 'spec.attachedRequired'),
    ...validateImmutableField(spec.volumeLifecycleModes ?? null, prev.volumeLifecycleModes ?? null, 'spec.volumeLifecycleModes'),
  ];
}

/**
 * upstream's strategy leaves generation alone on create and bumps it on any spec change (so the
 * first change yields 1); the registry has already reset generation to the stored value.
 */
function prepareForUpdate(next: ApiObject, old: ApiObject): void {
  if (jsonEqual((next as CSIDriver).spec ?? {}, (old as CSIDriver).spec ?? {})) return;
  next.metadata.generation = (old.metadata.generation ?? 0) + 1;
}

const spec = (obj: ApiObject): CSIDriverSpec => (obj as CSIDriver).spec ?? {};

export const csiDrivers: ResourceType = {
  group: 'storage.svc.io',
  version: 'v1',
  kind: 'CSIDriver',
  plural: 'csidrivers',
  singular: 'csidriver',
  namespaced: false,
  protobufPackage: 'svc.io.api.storage.v1',
  schema: csiDriverSchema,
  nameRule: csiDriverName,
  unconditionalUpdate: false,
  defaults,
  prepareForUpdate,
  validateCreate,
  validateUpdate,
  // upstream's storage answers a delete with the removed CSIDriver
  deletion: { returnsObject: true },
  tableColumns: [
    metadataNameColumn,
    { name: 'AttachRequired', type: 'boolean', description: 'Whether volumes need an attach step before mount.', cell: (o) => spec(o).attachRequired ?? true },
    { name: 'PodInfoOnMount', type: 'boolean', description: 'Whether pod information is passed on mount.', cell: (o) => spec(o).podInfoOnMount ?? false },
    { name: 'StorageCapacity', type: 'boolean', description: 'Whether scheduling considers reported storage capacity.', cell: (o) => spec(o).storageCapacity ?? false },
    {
      name: 'TokenRequests',
      type: 'string',
      description: 'Audiences of the service account tokens the driver receives.',
      cell: (o) => {
        const reqs = spec(o).tokenRequests;
        return reqs ? reqs.map((r) => r.audience ?? '').join(',') : '<unset>';
      },
    },
    { name: 'RequiresRepublish', type: 'boolean', description: 'Whether NodePublishVolume is called periodically.', cell: (o) => spec(o).requiresRepublish ?? false },
    {
      name: 'Modes',
      type: 'string',
      description: 'Volume lifecycle modes the driver supports.',
      cell: (o) => (spec(o).volumeLifecycleModes ?? []).join(',') || '<none>',
    },
    metadataAgeColumn,
  ],
};
