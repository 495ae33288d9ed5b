/**
 * The protobuf codec: recognizing the protobuf media types, decoding an enveloped protobuf body (the
 * 4 magic bytes, then a runtime.Unknown holding apiVersion, kind and the object's message bytes) into
 * the plain JSON object upstream's JSON form would carry, encoding an object back into an enveloped
 * body, and framing watch events (4-byte big-endian length + meta.v1.WatchEvent). Message definitions
 * come from <repo>/proto/*.proto, loaded once when this module loads.
 */
import { goQuote } from '../api/validation.js';
import { contentTypeOf } from './media-types.js';
import { ProtobufDecodeError, ProtobufEncodeError, wireErrorMessage } from './protobuf/errors.js';
import { encodeJsonMessage } from './protobuf/json-to-wire.js';
import { messageNameForKind, messageTypeForKind } from './protobuf/kinds.js';
import { messageToJson, type ToJsonContext } from './protobuf/message-to-json.js';
import { META_V1, PROTOBUF_MAGIC, RUNTIME, hasProtobufMagic, messageType } from './protobuf/proto-root.js';

export { ProtobufDecodeError, ProtobufEncodeError } from './protobuf/errors.js';

/** Our spec's name for the protobuf media type. */
export const PROTOBUF_MEDIA_TYPE = 'application/vnd.svc.protobuf';
/** The name real kubectl / client-go send. */
export const UPSTREAM_PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';
export const protobufMediaTypes: readonly string[] = [PROTOBUF_MEDIA_TYPE, UPSTREAM_PROTOBUF_MEDIA_TYPE];

export { PROTOBUF_MAGIC } from './protobuf/proto-root.js';


/** Whether a Content-Type (parameters ignored, any case) names protobuf. */
export function isProtobufMediaType(ct: string): boolean {
  return protobufMediaTypes.includes(contentTypeOf(ct));
}

export interface DecodedProtobufObject {
  apiVersion: string;
  kind: string;
  /** The object as JSON: kind and apiVersion first, then the message's fields. */
  object: Record<string, unknown>;
}

function decodeWire<T>(decode: () => T): T {
  try {
    return decode();
  } catch (e) {
    if (e instanceof ProtobufDecodeError) throw e;
    throw new ProtobufDecodeError(wireErrorMessage(e));
  }
}

const embedded: ToJsonContext = {
  decodeEmbedded(bytes) {
    const { object } = decodeProtobufObject(bytes);
    return object as ReturnType<ToJsonContext['decodeEmbedded']>;
  },
};

/** Go's %#v of a runtime.TypeMeta, as upstream's missing-kind / missing-version errors quote it. */
const typeMetaGoSyntax = (apiVersion: string, kind: string): string => `runtime.TypeMeta{APIVersion:${goQuote(apiVersion)}, Kind:${goQuote(kind)}}`;

/**
 * Decodes an enveloped protobuf body of a served kind (or DeleteOptions / Status) into JSON.
 * Throws ProtobufDecodeError in upstream's words on a missing prefix, malformed bytes, a missing
 * kind or version, or a kind that is not served.
 */
export function decodeProtobufObject(body: Uint8Array): DecodedProtobufObject {
  if (!hasProtobufMagic(body)) {
    throw new ProtobufDecodeError(`provided data does not appear to be a protobuf message, expected prefix [${[...PROTOBUF_MAGIC].join(' ')}]`);
  }
  const envelope = decodeWire(() => messageType(`${RUNTIME}.Unknown`).decode(body.subarray(PROTOBUF_MAGIC.length))) as unknown as {
    typeMeta?: { apiVersion?: string; kind?: string };
    raw?: Uint8Array;
  };
  const apiVersion = envelope.typeMeta?.apiVersion ?? '';
  const kind = envelope.typeMeta?.kind ?? '';
  if (!kind) throw new ProtobufDecodeError(`Object 'Kind' is missing in '${typeMetaGoSyntax(apiVersion, kind)}'`);
  try {
    if (!apiVersion) throw new ProtobufDecodeError(`Object 'apiVersion' is missing in '${typeMetaGoSyntax(apiVersion, kind)}'`);
    const type = messageTypeForKind(apiVersion, kind);
    if (!type) {
      throw new ProtobufDecodeError(`no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)} in scheme "svc-apiserver"`);
    }
    const raw = envelope.raw ?? new Uint8Array(0);
    const message = decodeWire(() => type.decode(raw)) as unknown as Record<string, unknown>;
    const fields = messageToJson(type, message, embedded) as Record<string, unknown>;
    return { apiVersion, kind, object: { kind, apiVersion, ...fields } };
  } catch (e) {
    // Errors past the envelope carry the kind it named (the outermost one, for embedded objects).
    if (e instanceof ProtobufDecodeError) throw new ProtobufDecodeError(e.message, { apiVersion, kind });
    throw e;
  }
}

/**
 * Encodes a JSON object of a served kind (or DeleteOptions / Status) as an enveloped protobuf body.
 * Keys present in the JSON are written; apiVersion / kind go only into the envelope.
 */
export function encodeProtobufObject(apiVersion: string, kind: string, object: Readonly<Record<string, unknown>>): Uint8Array {
  return envelopeProtobuf(apiVersion, kind, encodeProtobufMessage(apiVersion, kind, object));
}

/** The message bytes of an object (no envelope: a list item, or the raw inside an envelope). */
export function encodeProtobufMessage(apiVersion: string, kind: string, object: Readonly<Record<string, unknown>>): Uint8Array {
  return encodeJsonMessage(messageTypeOf(apiVersion, kind), object);
}

/** The message type of a served kind; throws ProtobufEncodeError for a kind without one. */
export function messageTypeOf(apiVersion: string, kind: string): protobuf.Type {
  const name = messageNameForKind(apiVersion, kind);
  if (!name) throw new ProtobufEncodeError(`no protobuf message for kind ${JSON.stringify(kind)} in version ${JSON.stringify(apiVersion)}`);
  return messageType(name);
}

/** Bytes of a length-delimited field's tag and length (field numbers below 16). */
function headerLength(length: number): number {
  let n = 2;
  for (let v = length; v > 0x7f; v >>>= 7) n++;
  return n;
}

function putHeader(out: Buffer, at: number, field: number, length: number): number {
  out[at++] = (field << 3) | 2;
  let v = length;
  while (v > 0x7f) {
    out[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[at++] = v;
  return at;
}

/**
 * The magic bytes and runtime.Unknown around an object's message bytes, written in one allocation:
 * typeMeta (1: apiVersion 1, kind 2), raw (2), and the empty contentEncoding (3) and contentType (4)
 * upstream writes.
 */
export function envelopeProtobuf(apiVersion: string, kind: string, raw: Uint8Array): Uint8Array {
  const av = Buffer.byteLength(apiVersion);
  const k = Buffer.byteLength(kind);
  const tm = headerLength(av) + av + headerLength(k) + k;
  const out = Buffer.allocUnsafe(PROTOBUF_MAGIC.length + headerLength(tm) + tm + headerLength(raw.length) + raw.length + 4);
  out.set(PROTOBUF_MAGIC, 0);
  let at = putHeader(out, PROTOBUF_MAGIC.length, 1, tm);
  at = putHeader(out, at, 1, av);
  at += out.write(apiVersion, at);
  at = putHeader(out, at, 2, k);
  at += out.write(kind, at);
  at = putHeader(out, at, 2, raw.length);
  out.set(raw, at);
  at += raw.length;
  out[at++] = 0x1a;
  out[at++] = 0;
  out[at++] = 0x22;
  out[at++] = 0;
  return out;
}

/** Whether apiVersion + kind has a protobuf message (a served built-in kind, Status, DeleteOptions...). */
export const hasProtobufMessage = (apiVersion: string, kind: string): boolean => messageNameForKind(apiVersion, kind) !== undefined;

/**
 * One watch stream frame: 4-byte big-endian length, then a meta.v1.WatchEvent whose object.raw is
 * the already-enveloped object (from encodeProtobufObject).
 */
export function encodeProtobufWatchFrame(type: string, envelopedObject: Uint8Array): Buffer {
  // WatchEvent { type = 1; object = 2 (RawExtension { raw = 1 }) } written in one buffer, one copy of
  // the object; a Buffer, so each watcher's write takes it as it is (a plain Uint8Array is re-wrapped
  // per write by the stream)
  const t = Buffer.byteLength(type);
  const rawField = headerLength(envelopedObject.length) + envelopedObject.length;
  const eventLength = headerLength(t) + t + headerLength(rawField) + rawField;
  const frame = Buffer.allocUnsafe(4 + eventLength);
  frame.writeUInt32BE(eventLength, 0);
  let at = putHeader(frame, 4, 1, t);
  at += frame.write(type, at, 'utf8');
  at = putHeader(frame, at, 2, rawField);
  at = putHeader(frame, at, 1, envelopedObject.length);
  frame.set(envelopedObject, at);
  return frame;
}

export interface DecodedWatchFrame {
  type: string;
  /** The decoded object inside the event (kind and apiVersion from its envelope). */
  object: Record<string, unknown>;
  /** Bytes this frame took (length prefix included), to step to the next frame. */
  frameLength: number;
}

/** Reads the first watch frame of `bytes` (the reverse of encodeProtobufWatchFrame). */
export function decodeProtobufWatchFrame(bytes: Uint8Array): DecodedWatchFrame {
  if (bytes.length < 4) throw new ProtobufDecodeError('unexpected EOF');
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, false);
  if (bytes.length < 4 + length) throw new ProtobufDecodeError('unexpected EOF');
  const event = decodeWire(() => messageType(`${META_V1}.WatchEvent`).decode(bytes.subarray(4, 4 + length))) as unknown as {
    type?: string;
    object?: { raw?: Uint8Array };
  };
  const { object } = decodeProtobufObject(event.object?.raw ?? new Uint8Array(0));
  return { type: event.type ?? '', object, frameLength: 4 + length };
}
