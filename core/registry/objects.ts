/**
 * Reading and writing whole objects of a resource type through the Store: stored bytes <-> decoded
 * objects, and the mapping of storage errors to API errors (upstream's storeerr), done once here.
 */
import { errors, StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { decodeStored, encodeStored } from '../codec/object-bytes.js';
import { type KeyValue, type Store, StoreError } from '../storage/interface.js';
import { apiVersionOf, groupResourceOf, type ResourceType } from './resource-type.js';

export interface LiveObject {
  kv: KeyValue;
  object: ApiObject;
}

export function decodeLive(rt: ResourceType, kv: KeyValue): LiveObject {
  return { kv, object: decodeStored(kv.value, kv.modRevision, apiVersionOf(rt), rt.kind) };
}

export async function readLive(store: Store, rt: ResourceType, key: string): Promise<LiveObject | null> {
  const kv = await store.get(key);
  return kv ? decodeLive(rt, kv) : null;
}

export { encodeStored };

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
