/**
 * Schemas shared by every kind: ObjectMeta (with its merge markers: finalizers a set, ownerReferences a
 * map keyed by uid, managedFields atomic), ListMeta, and the small reference types.
 */
import { s, type Schema, type StructSchema } from './schema.js';

const META = 'io.svc.apimachinery.pkg.apis.meta.v1';

export const ownerReferenceSchema = s.struct(
  `${META}.OwnerReference`,
  {
    apiVersion: s.string({ always: true }),
    kind: s.string({ always: true }),
    name: s.string({ always: true }),
    uid: s.string({ always: true }),
    controller: s.boolean({ ptr: true }),
    blockOwnerDeletion: s.boolean({ ptr: true }),
  },
  { required: ['apiVersion', 'kind', 'name', 'uid'], mapType: 'atomic' },
);

export const managedFieldsEntrySchema = s.struct(`${META}.ManagedFieldsEntry`, {
  manager: s.string(),
  operation: s.string(),
  apiVersion: s.string(),
  time: s.time({ ptr: true }),
  fieldsType: s.string(),
  fieldsV1: s.untyped({ ptr: true }),
  subresource: s.string(),
});

export const objectMetaSchema: StructSchema = s.struct(`${META}.ObjectMeta`, {
  name: s.string(),
  generateName: s.string(),
  namespace: s.string(),
  selfLink: s.string(),
  uid: s.string(),
  resourceVersion: s.string(),
  generation: s.int64(),
  creationTimestamp: s.time(),
  deletionTimestamp: s.time({ ptr: true }),
  deletionGracePeriodSeconds: s.int64({ ptr: true }),
  labels: s.map(s.string()),
  annotations: s.map(s.string()),
  ownerReferences: s.list(ownerReferenceSchema, { patchStrategy: 'merge', patchMergeKey: 'uid', listType: 'map', listMapKeys: ['uid'] }),
  finalizers: s.list(s.string(), { patchStrategy: 'merge', listType: 'set' }),
  managedFields: s.list(managedFieldsEntrySchema, { listType: 'atomic' }),
});

export const listMetaSchema: StructSchema = s.struct(`${META}.ListMeta`, {
  selfLink: s.string(),
  resourceVersion: s.string(),
  continue: s.string(),
  remainingItemCount: s.int64({ ptr: true }),
});

/** The top of every object: TypeMeta then ObjectMeta, then the kind's own fields. */
export function objectSchema(name: string, fields: Record<string, Schema>, required: readonly string[] = []): StructSchema {
  return s.struct(name, { kind: s.string(), apiVersion: s.string(), metadata: objectMetaSchema, ...fields }, required.length ? { required } : {});
}

export const objectReferenceSchema = s.struct(
  'io.svc.api.core.v1.ObjectReference',
  {
    kind: s.string(),
    namespace: s.string(),
    name: s.string(),
    uid: s.string(),
    apiVersion: s.string(),
    resourceVersion: s.string(),
    fieldPath: s.string(),
  },
  { mapType: 'atomic' },
);

export const localObjectReferenceSchema = s.struct('io.svc.api.core.v1.LocalObjectReference', { name: s.string() }, { mapType: 'atomic' });
