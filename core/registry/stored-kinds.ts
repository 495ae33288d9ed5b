/**
 * Which built-in kind each store key holds, for the storage media type (core/storage/media-type.ts):
 * found by the key's resource prefix from the declarations in the catalog, so every thread that opens
 * the store (main and pool workers) derives the same table. All built-in kinds are listed, served or
 * not (--runtime-config may turn a version off while its objects stay stored); custom resources are not.
 */
import { encodeStored } from '../codec/object-bytes.js';
import { messageType } from '../codec/protobuf/proto-root.js';
import { canonicalize } from '../schema/structural.js';
import type { ApiObject } from '../api/types.js';
import type { StoredKind } from '../storage/media-type.js';
import { builtinResourceTypes } from './catalog.js';
import { resourcePrefix } from './keys.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

const REGISTRY = '/registry/';

function storedKind(rt: ResourceType): StoredKind {
  return {
    apiVersion: apiVersionOf(rt),
    kind: rt.kind,
    ...(rt.protobufPackage ? { message: messageType(`${rt.protobufPackage}.${rt.kind}`) } : {}),
    // the schema's canonical order and zero values: what the registry stores for the same object
    storedJson: (obj) => encodeStored(canonicalize(obj as ApiObject, rt.schema)),
  };
}

let byPrefix: Map<string, StoredKind> | undefined;

function table(): Map<string, StoredKind> {
  if (!byPrefix) {
    byPrefix = new Map();
    for (const rt of builtinResourceTypes) if (!rt.virtual && !rt.custom) byPrefix.set(resourcePrefix(rt), storedKind(rt));
  }
  return byPrefix;
}

/** The built-in kind stored under `key` (`/registry/<group|core>/<plural>/...`), if any. */
export function storedKindOfKey(key: string): StoredKind | undefined {
  if (!key.startsWith(REGISTRY)) return undefined;
  const groupEnd = key.indexOf('/', REGISTRY.length);
  const pluralEnd = groupEnd < 0 ? -1 : key.indexOf('/', groupEnd + 1);
  return pluralEnd < 0 ? undefined : table().get(key.slice(0, pluralEnd + 1));
}
