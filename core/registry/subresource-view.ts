/**
 * Writes through a subresource served as another kind (a custom resource's scale, autoscaling/v1
 * Scale): the body is read as that kind, applied to the live object by the view's `fromView`, stored
 * as the object, and answered as the view of what was stored.
 */
import type { ApiObject } from '../api/types.js';
import { parseStored } from '../codec/object-bytes.js';
import type { OpResult } from './context.js';
import type { ResourceType, SubresourceView } from './resource-type.js';

/** The view's kind as a type to decode a body against (its group, version, kind and schema). */
export function viewType(rt: ResourceType, view: SubresourceView): ResourceType {
  return { ...rt, group: view.group, version: view.version, kind: view.kind, schema: view.schema, subresources: undefined, custom: undefined, defaults: undefined, tableColumns: undefined };
}

/** The result of a write through the view, answered as the view of the object stored. */
export function viewResult(view: SubresourceView, r: OpResult): OpResult {
  const b = r.body;
  if (!('stored' in b)) return r;
  const obj = parseStored(b.stored);
  if (b.revision !== undefined) obj.metadata.resourceVersion = String(b.revision);
  return { ...r, body: { value: view.toView(obj as ApiObject) } };
}
