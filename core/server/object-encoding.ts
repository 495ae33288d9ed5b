/**
 * Encodings of cached objects, built once per object version (memoized on the CachedObject) and
 * once per watch event: list items, full objects, watch frames, bookmarks, error events.
 */
import type { Status } from '../api/status.js';
import { withResourceVersion, withTypeMeta } from '../codec/object-bytes.js';
import { apiVersionOf, type ResourceType } from '../registry/resource-type.js';
import { canonicalize } from '../schema/structural.js';
import type { CachedObject, WatchEventType } from '../storage/watch-cache.js';

/** JSON of the object as a list item (no TypeMeta), resourceVersion stamped. */
export function itemBytes(o: CachedObject): Buffer {
  const memo = (o.memo ??= {});
  return (memo.item ??= withResourceVersion(o.stored, o.revision));
}

/** The object as a GET response body: JSON with TypeMeta and the trailing newline. */
export function fullLineBytes(rt: ResourceType, o: CachedObject): Buffer {
  const memo = (o.memo ??= {});
  return (memo.line ??= withTypeMeta(itemBytes(o), apiVersionOf(rt), rt.kind, undefined, true));
}

/** JSON of the object with TypeMeta, no trailing newline: a view of the GET body, not a copy. */
export function fullBytes(rt: ResourceType, o: CachedObject): Buffer {
  const memo = (o.memo ??= {});
  return (memo.full ??= fullLineBytes(rt, o).subarray(0, -1));
}

const frameHeads: Record<string, Buffer> = {};
const FRAME_TAIL = Buffer.from('}\n');

/** One JSON watch frame: `{"type":"ADDED","object":{...}}\n`. */
export function jsonFrame(type: string, objectJson: Uint8Array): Buffer {
  const head = (frameHeads[type] ??= Buffer.from(`{"type":"${type}","object":`));
  return Buffer.concat([head, objectJson, FRAME_TAIL]);
}

export function encodeJsonFrame(rt: ResourceType): (mediaType: string, type: WatchEventType, o: CachedObject) => Buffer {
  return (_mediaType, type, o) => jsonFrame(type, fullBytes(rt, o));
}

export const INITIAL_EVENTS_END_ANNOTATION = 'svc.io/initial-events-end';

/** A BOOKMARK: an object of the kind holding only metadata.resourceVersion (and the initial-events-end annotation). */
export function bookmarkFrame(rt: ResourceType, revision: number, initialEventsEnd: boolean): Buffer {
  const meta: Record<string, unknown> = { resourceVersion: String(revision) };
  if (initialEventsEnd) meta.annotations = { [INITIAL_EVENTS_END_ANNOTATION]: 'true' };
  const obj = canonicalize({ kind: rt.kind, apiVersion: apiVersionOf(rt), metadata: meta }, rt.schema);
  return jsonFrame('BOOKMARK', Buffer.from(JSON.stringify(obj)));
}

export function errorFrame(status: Status): Buffer {
  return jsonFrame('ERROR', Buffer.from(JSON.stringify(status)));
}
