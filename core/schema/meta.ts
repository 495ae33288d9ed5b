/**
 * Schemas shared by every kind: ObjectMeta (with its merge markers: finalizers a set, ownerReferences a
 * map keyed by uid, managedFields atomic), ListMeta, and the small reference types.
 */
import { s, type Schema, type StructSchema } from './schema.js';

const META = 'io.svc.apimachinery.pkg.apis.meta.v1';

// Descriptions (shown by `kubectl explain`) are this project's own wording.

export const ownerReferenceSchema = s.struct(
  `${META}.OwnerReference`,
  {
    apiVersion: s.string({ always: true, description: 'API version of the owner.' }),
    kind: s.string({ always: true, description: 'Kind of the owner.' }),
    name: s.string({ always: true, description: 'Name of the owner.' }),
    uid: s.string({ always: true, description: 'UID of the owner; a recreated owner with the same name is a different owner.' }),
    controller: s.boolean({ ptr: true, description: 'True when the owner is the controller that manages this object; at most one owner may be.' }),
    blockOwnerDeletion: s.boolean({
      ptr: true,
      description: 'When the owner is deleted in the foreground, it is only removed after this object is gone.',
    }),
  },
  {
    required: ['apiVersion', 'kind', 'name', 'uid'],
    mapType: 'atomic',
    typeDescription: 'Names an object this one belongs to. The owner lives in the same namespace, or is cluster-scoped.',
  },
);

export const managedFieldsEntrySchema = s.struct(
  `${META}.ManagedFieldsEntry`,
  {
    manager: s.string({ description: 'Name of the field manager (the fieldManager of its requests, or its user agent).' }),
    operation: s.string({ description: 'Apply when the fields were set by server-side apply, Update for any other write.' }),
    apiVersion: s.string({ description: 'API version the owned fields are recorded in.' }),
    time: s.time({ ptr: true, description: 'When the manager last changed one of its fields.' }),
    fieldsType: s.string({ description: 'Format of fieldsV1; the only one is FieldsV1.' }),
    fieldsV1: s.untyped({ ptr: true, description: 'The owned fields, as a tree of f:<field>, k:<list key>, v:<set value> and i:<index> entries.' }),
    subresource: s.string({ description: 'Subresource the writes went through (for example status); empty for the object itself.' }),
  },
  { typeDescription: 'The fields one field manager owns, and how it wrote them.' },
);

export const objectMetaSchema: StructSchema = s.struct(
  `${META}.ObjectMeta`,
  {
    name: s.string({ description: 'Name of the object, unique per kind within its namespace (or the cluster, for cluster-scoped kinds). Cannot be changed.' }),
    generateName: s.string({ description: 'On create without a name, the server makes one up from this prefix and a random suffix.' }),
    namespace: s.string({ description: 'Namespace the object lives in; empty for cluster-scoped kinds. Cannot be changed.' }),
    selfLink: s.string({ description: 'Deprecated; never set by the server.' }),
    uid: s.string({ description: 'Identifier the server gives the object on create, never reused: a recreated object gets a new one. Read-only.' }),
    resourceVersion: s.string({
      description:
        'Opaque version of the object, changed by every write. Send it back on update to fail instead of overwriting a newer change; lists and watches take it as a point in history. Read-only.',
    }),
    generation: s.int64({ description: 'Counter of changes to the desired state, for kinds that track it. Read-only.' }),
    creationTimestamp: s.time({ description: 'When the object was stored (RFC 3339, UTC). Read-only.' }),
    deletionTimestamp: s.time({
      ptr: true,
      description: 'When deletion was requested. While finalizers remain the object stays, Terminating; it is removed once they are empty. Read-only.',
    }),
    deletionGracePeriodSeconds: s.int64({ ptr: true, description: 'Seconds the object was given before removal, set along with deletionTimestamp. Read-only.' }),
    labels: s.map(s.string(), { description: 'Key/value pairs to organise objects and select them with label selectors.' }),
    annotations: s.map(s.string(), { description: 'Key/value pairs of free-form data for tools and people; never used to select objects.' }),
    ownerReferences: s.list(ownerReferenceSchema, {
      patchStrategy: 'merge',
      patchMergeKey: 'uid',
      listType: 'map',
      listMapKeys: ['uid'],
      description: 'Objects this one belongs to. When all of them are gone, the garbage collector removes this object.',
    }),
    finalizers: s.list(s.string(), {
      patchStrategy: 'merge',
      listType: 'set',
      description: 'Cleanups that must finish before the object is removed. A delete only marks the object while any remain; each is removed by whoever did the work.',
    }),
    managedFields: s.list(managedFieldsEntrySchema, {
      listType: 'atomic',
      description: 'Which field manager owns which fields, kept by the server for server-side apply. Clients normally leave it alone.',
    }),
  },
  { typeDescription: 'Metadata every stored object has: identity, labels and annotations, ownership and lifecycle.' },
);

export const listMetaSchema: StructSchema = s.struct(
  `${META}.ListMeta`,
  {
    selfLink: s.string({ description: 'Deprecated; never set by the server.' }),
    resourceVersion: s.string({ description: 'Version of the store the list was read at; a watch started from it sees every later change.' }),
    continue: s.string({
      description: 'Token for the next page, sent back with the same options; empty on the last page. It expires with the history it points into (410).',
    }),
    remainingItemCount: s.int64({ ptr: true, description: 'Number of items after this page, when the server can tell.' }),
  },
  { typeDescription: 'Metadata of a list: the version it was read at and paging.' },
);

/** TypeMeta's fields (kind, apiVersion), for objects and lists. */
export const typeMetaFields = (): Record<string, Schema> => ({
  kind: s.string({ description: 'Kind of the object in CamelCase (for example ConfigMap). Clients send it on writes; the server fills it in on reads.' }),
  apiVersion: s.string({ description: 'Group and version of the object\'s schema, as group/version (just the version for the core group, v1).' }),
});

/** The top of every object: TypeMeta then ObjectMeta, then the kind's own fields. */
export function objectSchema(name: string, fields: Record<string, Schema>, required: readonly string[] = [], typeDescription?: string): StructSchema {
  const o: { required?: readonly string[]; typeDescription?: string } = {};
  if (required.length) o.required = required;
  if (typeDescription) o.typeDescription = typeDescription;
  const metadata = s.field(objectMetaSchema, { description: 'Standard object metadata: name, namespace, labels, ownership and lifecycle.' });
  return s.struct(name, { ...typeMetaFields(), metadata, ...fields }, o);
}

export const objectReferenceSchema = s.struct(
  'io.svc.api.core.v1.ObjectReference',
  {
    kind: s.string({ description: 'Kind of the referred object.' }),
    namespace: s.string({ description: 'Namespace of the referred object.' }),
    name: s.string({ description: 'Name of the referred object.' }),
    uid: s.string({ description: 'UID of the referred object.' }),
    apiVersion: s.string({ description: 'API version of the referred object.' }),
    resourceVersion: s.string({ description: 'Version of the referred object the reference was made at, if it matters.' }),
    fieldPath: s.string({ description: 'The part of the object meant, as a field path (for example spec.containers{app}); empty for the whole object.' }),
  },
  { mapType: 'atomic', typeDescription: 'Points at another object, or a part of one.' },
);

export const localObjectReferenceSchema = s.struct(
  'io.svc.api.core.v1.LocalObjectReference',
  { name: s.string({ description: 'Name of the object, in the same namespace.' }) },
  { mapType: 'atomic', typeDescription: 'Points at an object in the same namespace by name.' },
);

export const labelSelectorRequirementSchema = s.struct(
  `${META}.LabelSelectorRequirement`,
  {
    key: s.string({ always: true, description: 'The label key the requirement is about.' }),
    operator: s.string({ always: true, description: 'In, NotIn, Exists or DoesNotExist.' }),
    values: s.list(s.string(), { listType: 'atomic', description: 'Values for In and NotIn (at least one); empty for Exists and DoesNotExist.' }),
  },
  { required: ['key', 'operator'], typeDescription: 'One condition on a label: its key, an operator and values.' },
);

export const labelSelectorSchema = s.struct(
  `${META}.LabelSelector`,
  {
    matchLabels: s.map(s.string(), { description: 'Labels that must all be present with these values.' }),
    matchExpressions: s.list(labelSelectorRequirementSchema, { listType: 'atomic', description: 'Conditions that must all hold.' }),
  },
  { mapType: 'atomic', typeDescription: 'Selects objects by their labels: every matchLabels entry and every expression must hold; an empty selector selects everything.' },
);
