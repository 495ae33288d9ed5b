/**
 * Namespace (core/v1, cluster-scoped). Every namespace carries the label svc.io/metadata.name = its
 * name, starts Active with the `svc` finalizer in spec.finalizers, and keeps spec.finalizers and status
 * across ordinary updates: only the `finalize` subresource edits the former, only `status` the latter.
 * A delete request marks it Terminating; it stays until spec.finalizers is empty. Rules and messages
 * follow upstream's namespace strategy and ValidateNamespace* functions.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import {
  FINALIZER_SVC,
  metadataAgeColumn,
  metadataNameColumn,
  validateBuiltinFinalizerNames,
  validateFinalizerName,
} from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType, SubresourceType } from '../resource-type.js';

export const NAMESPACE_NAME_LABEL = 'svc.io/metadata.name';
export const NAMESPACE_ACTIVE = 'Active';
export const NAMESPACE_TERMINATING = 'Terminating';
/** Namespaces the server refuses to delete (upstream's immutable namespaces). */
export const PROTECTED_NAMESPACES: readonly string[] = ['default', 'svc-system', 'svc-public'];

interface Namespace extends ApiObject {
  spec?: { finalizers?: string[] };
  status?: { phase?: string; conditions?: unknown[] };
}

const CORE = 'io.svc.api.core.v1';

const namespaceConditionSchema = s.struct(
  `${CORE}.NamespaceCondition`,
  {
    type: s.string({ always: true, description: 'What the condition is about (for example NamespaceDeletionContentFailure).' }),
    status: s.string({ always: true, description: 'True, False or Unknown.' }),
    lastTransitionTime: s.time({ description: 'When status last changed.' }),
    reason: s.string({ description: 'Machine-readable CamelCase cause of the last change.' }),
    message: s.string({ description: 'Human-readable details of the last change.' }),
  },
  { required: ['type', 'status'], typeDescription: 'One observation of the state of a namespace.' },
);

export const namespaceSchema = objectSchema(
  `${CORE}.Namespace`,
  {
    spec: s.struct(
      `${CORE}.NamespaceSpec`,
      {
        finalizers: s.list(s.string(), {
          listType: 'atomic',
          description: 'Cleanups that must finish before the namespace is removed (svc: emptying it). Changed only through the finalize subresource.',
        }),
      },
      { description: 'What must happen before the namespace can be removed.', typeDescription: 'Desired state of a namespace.' },
    ),
    status: s.struct(
      `${CORE}.NamespaceStatus`,
      {
        phase: s.string({ description: 'Active, or Terminating once deletion has started (no new objects may then be created in it).' }),
        conditions: s.list(namespaceConditionSchema, {
          patchStrategy: 'merge',
          patchMergeKey: 'type',
          listType: 'map',
          listMapKeys: ['type'],
          description: 'Latest observations of the namespace, one per type.',
        }),
      },
      { description: 'Observed state: phase and conditions. Changed only through the status subresource.', typeDescription: 'Observed state of a namespace.' },
    ),
  },
  [],
  'A scope for names and access rules. Deleting a namespace deletes everything in it.',
);

/** Terminating: deletion requested, or the phase says so (the namespace controller then empties it). */
export function isNamespaceTerminating(obj: ApiObject): boolean {
  return !!obj.metadata.deletionTimestamp || (obj as Namespace).status?.phase === NAMESPACE_TERMINATING;
}

function setNameLabel(ns: Namespace): void {
  const name = ns.metadata.name;
  if (!name) return;
  (ns.metadata.labels ??= {})[NAMESPACE_NAME_LABEL] = name;
}

function validateSpecFinalizers(ns: Namespace, indexed: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const finalizers = ns.spec?.finalizers ?? [];
  // ValidateNamespace reports at spec.finalizers, the finalize subresource at spec.finalizers[i].
  finalizers.forEach((f, i) => errs.push(...validateFinalizerName(f, indexed ? `spec.finalizers[${i}]` : 'spec.finalizers')));
  return errs;
}

function validateNamespace(obj: ApiObject): FieldError[] {
  return [...validateBuiltinFinalizerNames(obj.metadata), ...validateSpecFinalizers(obj as Namespace, false)];
}

const statusSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    (next as Namespace).spec = (old as Namespace).spec ?? {};
  },
  validateUpdate(next) {
    const ns = next as Namespace;
    const phase = ns.status?.phase ?? '';
    const errs = validateBuiltinFinalizerNames(ns.metadata);
    if (!ns.metadata.deletionTimestamp) {
      if (phase !== NAMESPACE_ACTIVE) errs.push(fieldErrors.invalid('status.Phase', phase, "may only be 'Active' if `deletionTimestamp` is empty"));
    } else if (phase !== NAMESPACE_TERMINATING) {
      errs.push(fieldErrors.invalid('status.Phase', phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"));
    }
    return errs;
  },
};

const finalizeSubresource: SubresourceType = {
  verbs: ['update'],
  prepareForUpdate(next, old) {
    (next as Namespace).status = (old as Namespace).status ?? {};
  },
  validateUpdate(next) {
    return [...validateBuiltinFinalizerNames(next.metadata), ...validateSpecFinalizers(next as Namespace, true)];
  },
};

export const namespaces: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'Namespace',
  plural: 'namespaces',
  singular: 'namespace',
  namespaced: false,
  shortNames: ['ns'],
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  protobufPackage: 'svc.io.api.core.v1',
  schema: namespaceSchema,
  nameRule: 'dns1123-label',

  defaults(obj) {
    const ns = obj as Namespace;
    setNameLabel(ns);
    const status = (ns.status ??= {});
    if (!status.phase) status.phase = NAMESPACE_ACTIVE;
  },
  prepareForCreate(obj) {
    const ns = obj as Namespace;
    ns.status = { phase: NAMESPACE_ACTIVE };
    // The svc finalizer is required at creation only; the namespace controller removes it later.
    const spec = (ns.spec ??= {});
    if (!spec.finalizers?.includes(FINALIZER_SVC)) spec.finalizers = [...(spec.finalizers ?? []), FINALIZER_SVC];
    setNameLabel(ns);
  },
  prepareForUpdate(next, old) {
    const ns = next as Namespace;
    const prev = old as Namespace;
    const spec = (ns.spec ??= {});
    if (prev.spec?.finalizers) spec.finalizers = prev.spec.finalizers;
    else delete spec.finalizers;
    ns.status = prev.status ?? {};
    setNameLabel(ns);
  },
  validateCreate: validateNamespace,
  validateUpdate: validateNamespace,

  selectableFields: { 'status.phase': (obj) => (obj as Namespace).status?.phase },
  tableColumns: [
    metadataNameColumn,
    { name: 'Status', type: 'string', description: 'Lifecycle phase of the namespace (Active or Terminating).', cell: (obj) => (obj as Namespace).status?.phase ?? '' },
    metadataAgeColumn,
  ],
  subresources: { status: statusSubresource, finalize: finalizeSubresource },
  resetFields: { '': ['status'], status: ['spec'], finalize: ['status'] },
  deletion: {
    twoPhase: true,
    pending: (obj) => ((obj as Namespace).spec?.finalizers?.length ?? 0) > 0,
    onDeleteRequested(obj) {
      const ns = obj as Namespace;
      (ns.status ??= {}).phase = NAMESPACE_TERMINATING;
    },
    returnsObject: true,
    preconditionMessage: (field, sent, actual) => `Precondition failed: ${field} in precondition: ${sent}, ${field} in object meta: ${actual}`,
    protectedNames: PROTECTED_NAMESPACES,
  },
};
