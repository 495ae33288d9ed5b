/**
 * The generic steps around a kind's hooks on every write, as upstream's rest.BeforeCreate and
 * rest.BeforeUpdate (defaults are the caller's: they come with decoding, before ownership is recorded):
 * namespace from the URL, system fields (uid, creationTimestamp, generation), generateName, the kind's
 * prepare hooks, ObjectMeta validation then the kind's validation (one 422
 * listing every field error), warnings, and canonical field order.
 */
import { randomUUID } from 'node:crypto';
import type { FieldError } from '../api/field-errors.js';
import { generateNameSuffix, inheritSystemMetadata, validateObjectMeta, validateObjectMetaUpdate } from '../api/objectmeta.js';
import { errors } from '../api/status.js';
import { type ApiObject, nowRFC3339, type UserInfo } from '../api/types.js';
import { jsonEqual } from '../api/validation.js';
import { canonicalize } from '../schema/structural.js';
import { groupKindOf, type ResourceType } from './resource-type.js';

/** Sets or checks metadata.namespace against the request's (cluster-scoped kinds: cleared). */
export function ensureNamespace(obj: ApiObject, rt: ResourceType, requestNamespace: string): void {
  const meta = obj.metadata;
  if (!rt.namespaced) {
    delete meta.namespace;
    return;
  }
  if (!meta.namespace) meta.namespace = requestNamespace;
  else if (meta.namespace !== requestNamespace) throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
}

/** PUT and PATCH bodies must name the object in the URL. */
export function checkName(obj: ApiObject, name: string, namespace: string): void {
  const objName = obj.metadata.name ?? '';
  if (objName !== name) throw errors.badRequest(`the name of the object (${objName}) does not match the name on the URL (${name})`);
  const objNs = obj.metadata.namespace ?? '';
  if (namespace && objNs && objNs !== namespace) {
    throw errors.badRequest(`the namespace of the object (${objNs}) does not match the namespace on the request (${namespace})`);
  }
}

function invalid(rt: ResourceType, obj: ApiObject, errs: FieldError[]): never {
  throw errors.invalid(groupKindOf(rt), obj.metadata.name ?? '', errs);
}

/** Canonical field order and Go-tag shape for `rt` (after hooks added fields in any order). */
export const canonicalObject = (rt: ResourceType, obj: ApiObject): ApiObject => canonicalize(obj, rt.schema);

export function beforeCreate(rt: ResourceType, obj: ApiObject, now: Date, user?: UserInfo): { object: ApiObject; warnings: string[] } {
  const meta = obj.metadata;
  if (meta.resourceVersion) throw errors.badRequest('resourceVersion should not be set on objects to be created');
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
  delete meta.selfLink;
  if (meta.generateName && !meta.name) meta.name = meta.generateName + generateNameSuffix();
  rt.prepareForCreate?.(obj, user);
  meta.uid = randomUUID();
  meta.creationTimestamp = nowRFC3339(now);
  if (rt.generationOf) meta.generation = 1;
  const errs = [...validateObjectMeta(meta, { namespaced: rt.namespaced, nameRule: rt.nameRule ?? 'dns1123-subdomain' }), ...(rt.validateCreate?.(obj) ?? [])];
  if (errs.length) invalid(rt, obj, errs);
  const warnings = rt.warnings?.(obj) ?? [];
  return { object: canonicalObject(rt, obj), warnings };
}

/** A fresh name for a generateName retry after a collision. */
export function regenerateName(obj: ApiObject): void {
  obj.metadata.name = obj.metadata.generateName + generateNameSuffix();
}

/** The prepare and validate hooks of an update: the kind's, or one of its subresources'. */
export interface UpdateHooks {
  prepareForUpdate?(next: ApiObject, old: ApiObject): void;
  validateUpdate?(next: ApiObject, old: ApiObject): FieldError[];
}

export function beforeUpdate(rt: ResourceType, next: ApiObject, old: ApiObject, hooks: UpdateHooks = rt): { object: ApiObject; warnings: string[] } {
  const meta = next.metadata;
  const oldMeta = old.metadata;
  inheritSystemMetadata(meta, oldMeta, () => hooks.prepareForUpdate?.(next, old));
  delete meta.selfLink;
  if (rt.generationOf && !jsonEqual(rt.generationOf(next), rt.generationOf(old))) meta.generation = (oldMeta.generation ?? 0) + 1;
  const errs = [...validateObjectMetaUpdate(meta, oldMeta), ...(hooks.validateUpdate?.(next, old) ?? [])];
  if (errs.length) invalid(rt, next, errs);
  const warnings = rt.warnings?.(next, old) ?? [];
  return { object: canonicalObject(rt, next), warnings };
}

/** Whether an update leaves a terminating object with nothing to wait for (it is then deleted). */
export function shouldDeleteDuringUpdate(rt: ResourceType, obj: ApiObject): boolean {
  const meta = obj.metadata;
  if (!meta.deletionTimestamp) return false;
  if (meta.finalizers && meta.finalizers.length > 0) return false;
  if (rt.deletion?.pending?.(obj)) return false;
  return meta.deletionGracePeriodSeconds === undefined || meta.deletionGracePeriodSeconds === 0;
}
