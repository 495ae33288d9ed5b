/**
 * Reading raw stored values as a test sees them in etcd: upstream's protobuf envelope decoded by the
 * protobuf codec (every built-in kind registered, as the server registers them when it starts).
 */
import { decodeProtobufObject, type DecodedProtobufObject } from '../../core/codec/protobuf.js';
import { registerProtobufKind } from '../../core/codec/protobuf/kinds.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { apiVersionOf } from '../../core/registry/resource-type.js';

for (const rt of builtinResourceTypes) if (rt.protobufPackage) registerProtobufKind(apiVersionOf(rt), rt.kind, rt.protobufPackage, !rt.virtual);

/** The 4 magic bytes of a protobuf envelope, `k8s\0`. */
export const PROTOBUF_PREFIX = Buffer.from('k8s\0', 'latin1');

/** A stored protobuf value: its envelope's apiVersion and kind, and the object as JSON. */
export const decodeStoredProtobuf = (value: Uint8Array): DecodedProtobufObject => decodeProtobufObject(value);
