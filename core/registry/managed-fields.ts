/**
 * The registry's seam to field ownership (core/merge): every non-apply write records an Update entry
 * under the request's field manager (or the User-Agent's product when none is given).
 */
import { type ApiObject, nowRFC3339 } from '../api/types.js';
import { updateManagedFields } from '../merge/field-manager.js';
import { managerOrUserAgent } from '../merge/manager-name.js';
import { FieldSet } from '../merge/field-set.js';
import { canonicalize } from '../schema/structural.js';
import { fieldPE } from '../merge/path-element.js';
import type { OpRequest } from './context.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

const resetSets = new WeakMap<ResourceType, Map<string, FieldSet | undefined>>();

/** The reset fields of `rt` through `subresource` as a field set (built once per endpoint). */
export function resetFieldsOf(rt: ResourceType, subresource: string): FieldSet | undefined {
  let m = resetSets.get(rt);
  if (!m) resetSets.set(rt, (m = new Map()));
  if (!m.has(subresource)) {
    const names = rt.resetFields?.[subresource];
    m.set(subresource, names?.length ? FieldSet.of(...names.map((n) => n.split('.').map(fieldPE))) : undefined);
  }
  return m.get(subresource);
}

export interface TrackOptions {
  fieldManager: string;
  now: Date;
}

const zeroObjects = new WeakMap<ResourceType, ApiObject>();

/** The kind's zero value (structs present and empty, as Go's New() gives): a create's "live" object. */
export function zeroObjectOf(rt: ResourceType): ApiObject {
  let z = zeroObjects.get(rt);
  if (!z) zeroObjects.set(rt, (z = canonicalize({ kind: rt.kind, apiVersion: apiVersionOf(rt), metadata: {} } as ApiObject, rt.schema)));
  return structuredClone(z);
}

/** Records `next` as written by the request's manager; never fails on ownership conflicts. */
export function trackUpdate(rt: ResourceType, live: ApiObject | null, next: ApiObject, req: OpRequest, o: TrackOptions): ApiObject {
  const resetFields = resetFieldsOf(rt, req.subresource);
  return updateManagedFields(live, next, {
    manager: managerOrUserAgent(o.fieldManager, req.userAgent),
    apiVersion: apiVersionOf(rt),
    now: nowRFC3339(o.now),
    schema: rt.schema,
    ...(req.subresource ? { subresource: req.subresource } : {}),
    ...(resetFields ? { resetFields } : {}),
  });
}
