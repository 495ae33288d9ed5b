/**
 * Encodes operation results and errors into response bytes of the negotiated media type.
 */
import { type StatusError, toStatusError } from '../api/status.js';
import { encodeList, encodeStoredObject, encodeValue, type EncodeOptions } from '../codec/encode.js';
import type { OpResult } from './context.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

export function encodeResult(rt: ResourceType, r: OpResult, o: EncodeOptions): Buffer {
  const b = r.body;
  if ('stored' in b) return encodeStoredObject(b.stored, b.revision, apiVersionOf(rt), rt.kind, o);
  if ('value' in b) return encodeValue(b.value, o);
  const meta: { resourceVersion: string; continue?: string; remainingItemCount?: number } = { resourceVersion: b.list.resourceVersion };
  if (b.list.continue) meta.continue = b.list.continue;
  if (b.list.remainingItemCount !== undefined) meta.remainingItemCount = b.list.remainingItemCount;
  return Buffer.concat([...encodeList(apiVersionOf(rt), `${rt.kind}List`, meta, b.list.items, o)]);
}

export function encodeError(err: unknown, o: EncodeOptions): { code: number; body: Buffer; headers: Record<string, string>; error: StatusError } {
  const e = toStatusError(err);
  return { code: e.code, body: encodeValue(e.status, o), headers: e.headers, error: e };
}
