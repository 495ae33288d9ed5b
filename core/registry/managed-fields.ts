/**
 * The registry's seam to field ownership (core/merge): every non-apply write records an Update entry
 * under the request's field manager (or the User-Agent's product when none is given).
 */
import { type ApiObject, nowRFC3339 } from '../api/types.js';
import { updateManagedFields } from '../merge/field-manager.js';
import { managerOrUserAgent } from '../merge/manager-name.js';
import type { OpRequest } from './context.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

export interface TrackOptions {
  fieldManager: string;
  now: Date;
}

/** Records `next` as written by the request's manager; never fails on ownership conflicts. */
export function trackUpdate(rt: ResourceType, live: ApiObject | null, next: ApiObject, req: OpRequest, o: TrackOptions): ApiObject {
  return updateManagedFields(live, next, {
    manager: managerOrUserAgent(o.fieldManager, req.userAgent),
    apiVersion: apiVersionOf(rt),
    now: nowRFC3339(o.now),
    schema: rt.schema,
    ...(req.subresource ? { subresource: req.subresource } : {}),
  });
}
