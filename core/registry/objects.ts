/**
 * Reading and writing whole objects of a resource type through the Store: stored bytes <-> decoded
 * objects, and the mapping of storage errors to API errors (upstream's storeerr), done once here.
 */
import { errors, StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { decodeStored, encodeStored, parseStored } from '../codec/object-bytes.js';
import { type KeyValue, type Store, StoreError } from '../storage/interface.js';
import { apiVersionOf, groupResourceOf, type ResourceType } from './resource-type.js';

export interface LiveObject {
  kv: KeyValue;
  object: ApiObject;
}

export function decodeLive(rt: ResourceType, kv: KeyValue): LiveObject {
  return { kv, object: decodeStored(kv.value, kv.modRevision, apiVersionOf(rt), rt.kind) };
}

/** The live object as `rt` sees it: custom resources converted from their stored version (and defaulted). */
export async function readLive(store: Store, rt: ResourceType, key: string): Promise<LiveObject | null> {
  const kv = await store.get(key);
  if (!kv) return null;
  if (!rt.custom) return decodeLive(rt, kv);
  return { kv, object: (await fromStorage(rt, [kv]))[0]! };
}

/** Stored custom resources (any stored version) in `rt`'s version, resourceVersion set. */
export async function fromStorage(rt: ResourceType, kvs: readonly KeyValue[]): Promise<ApiObject[]> {
  const stored = kvs.map((kv) => ({ kind: rt.kind, ...parseStored(kv.value) }) as ApiObject);
  const out = await rt.custom!.fromStorage(stored);
  out.forEach((o, i) => (o.metadata.resourceVersion = String(kvs[i]!.modRevision)));
  return out;
}

export { encodeStored };

/** The bytes a write stores for `obj` and the bytes it answers with (the same, but for custom resources). */
export interface StoredForm {
  stored: Buffer;
  answer: Buffer;
}

/** Custom resources are stored in their storage version, apiVersion kept after metadata. */
function encodeCustomStored(obj: ApiObject): Buffer {
  const { kind: _k, apiVersion, metadata, ...rest } = obj;
  const { resourceVersion: _rv, ...meta } = metadata;
  return Buffer.from(JSON.stringify({ metadata: meta, apiVersion, ...rest }));
}

export function storedForm(rt: ResourceType, obj: ApiObject, answer: Buffer = encodeStored(obj)): StoredForm | Promise<StoredForm> {
  if (!rt.custom) return { stored: answer, answer };
  return rt.custom.toStorage(obj).then((s) => ({ stored: encodeCustomStored(s), answer }));
}

/** Translates a storage failure of a write on `name` into the API's error. */
export function storageError(rt: ResourceType, name: string, err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  if (err instanceof StoreError) {
    const gr = groupResourceOf(rt);
    switch (err.code) {
      case 'KeyExists':
        return errors.alreadyExists(gr, name);
      case 'NotFound':
        return errors.notFound(gr, name);
      case 'Conflict':
        return errors.staleResourceVersion(gr, name);
      case 'Compacted':
        return errors.expired(`too old resource version: ${err.message}`);
      case 'FutureRevision':
        return errors.tooLargeResourceVersion(0, err.revision);
      case 'Unavailable':
        return errors.serviceUnavailable(err.message);
    }
  }
  return errors.internal(err);
}

export const bytesEqual = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(a, b) === 0;
