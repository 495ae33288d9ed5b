/**
 * Runs a ResourceType's hooks in the registry's order without a store, so kind tests can check
 * defaults, server-owned fields, validation messages and warnings: create = defaults ->
 * prepareForCreate -> ObjectMeta rules -> validateCreate; update = defaults -> generation reset ->
 * prepareForUpdate (kind or subresource) -> ObjectMeta update rules -> validateUpdate.
 */
import { fieldErrorString } from '../../core/api/field-errors.js';
import { validateObjectMeta, validateObjectMetaUpdate } from '../../core/api/objectmeta.js';
import type { ApiObject } from '../../core/api/types.js';
import type { ResourceType } from '../../core/registry/resource-type.js';

export interface Outcome {
  obj: ApiObject;
  errors: string[];
  warnings: string[];
}

const clone = <T>(v: T): T => structuredClone(v);

export function create(rt: ResourceType, input: ApiObject): Outcome {
  const obj = clone(input);
  rt.defaults?.(obj);
  rt.prepareForCreate?.(obj);
  const errs = [...validateObjectMeta(obj.metadata, { namespaced: rt.namespaced, nameRule: rt.nameRule }), ...(rt.validateCreate?.(obj) ?? [])];
  return { obj, errors: errs.map(fieldErrorString), warnings: rt.warnings?.(obj) ?? [] };
}

export function update(rt: ResourceType, input: ApiObject, stored: ApiObject, subresource?: string): Outcome {
  const obj = clone(input);
  const old = clone(stored);
  const hooks = subresource ? rt.subresources![subresource]! : rt;
  rt.defaults?.(obj);
  if (old.metadata.generation === undefined) delete obj.metadata.generation;
  else obj.metadata.generation = old.metadata.generation;
  hooks.prepareForUpdate?.(obj, old);
  const errs = [...validateObjectMetaUpdate(obj.metadata, old.metadata), ...(hooks.validateUpdate?.(obj, old) ?? [])];
  return { obj, errors: errs.map(fieldErrorString), warnings: rt.warnings?.(obj, old) ?? [] };
}

/** A stored version of `obj` (as a create would leave it), for update tests. */
export function stored(rt: ResourceType, obj: ApiObject, rv = '1'): ApiObject {
  const out = create(rt, obj);
  if (out.errors.length) throw new Error(`fixture is invalid: ${out.errors.join('; ')}`);
  out.obj.metadata.uid = 'uid-1';
  out.obj.metadata.resourceVersion = rv;
  out.obj.metadata.creationTimestamp = '2024-01-01T00:00:00Z';
  return out.obj;
}

export const cells = (rt: ResourceType, obj: ApiObject): unknown[] => (rt.tableColumns ?? []).map((c) => c.cell(obj));
export const columnNames = (rt: ResourceType): string[] => (rt.tableColumns ?? []).map((c) => c.name);
export const fieldNames = (rt: ResourceType): string[] => Object.keys(rt.schema.fields);
