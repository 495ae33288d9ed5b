/**
 * Protobuf (application/vnd.svc.protobuf, and upstream's application/vnd.kubernetes.protobuf): the
 * magic bytes and runtime.Unknown around each object's message. Lists are written as one envelope
 * whose raw XList holds the ListMeta and every item's message; the item messages are memoized per
 * object version, so a list costs the sum of cached encodings plus a header, streamed in chunks. Watch
 * frames are a 4-byte big-endian length and a WatchEvent whose object is the enveloped object.
 */
import { exceedsDepth, tooDeep } from './json.js';
import { listMetaValue } from './json-serializer.js';
import {
  decodeProtobufObject,
  encodeProtobufMessage,
  encodeProtobufWatchFrame,
  envelopeProtobuf,
  PROTOBUF_MAGIC,
  PROTOBUF_MEDIA_TYPE,
  ProtobufDecodeError,
  UPSTREAM_PROTOBUF_MEDIA_TYPE,
} from './protobuf.js';
import { encodeJsonMessage } from './protobuf/json-to-wire.js';
import { envelopeApiVersion } from './protobuf/kinds.js';
import { META_V1, RUNTIME, messageType } from './protobuf/proto-root.js';
import { BodyDecodeError, type ObjectSource, registerSerializer, type Serializer } from './serializer.js';

const listMetaType = messageType(`${META_V1}.ListMeta`);
const typeMetaType = messageType(`${RUNTIME}.TypeMeta`);
const CHUNK = 64 * 1024;

/** Tag and length of a length-delimited field (field numbers below 16: a one-byte tag). */
function fieldHeader(field: number, length: number): Uint8Array {
  const out = Buffer.allocUnsafe(6);
  out[0] = (field << 3) | 2;
  let n = 1;
  let v = length;
  while (v > 0x7f) {
    out[n++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[n++] = v;
  return out.subarray(0, n);
}

const itemMessage = (src: ObjectSource, apiVersion: string, kind: string): Uint8Array => {
  let b = src.memo('pi');
  if (!b) src.setMemo('pi', (b = encodeProtobufMessage(apiVersion, kind, src.value())));
  return b;
};

export const protobufSerializer: Serializer = {
  id: 'protobuf',
  mediaType: PROTOBUF_MEDIA_TYPE,
  streamMediaType: `${PROTOBUF_MEDIA_TYPE};stream=watch`,
  streams: true,
  needsMessages: true,

  encodeObject(src, t) {
    const key = `p:${t.apiVersion}`;
    let b = src.memo(key);
    if (!b) src.setMemo(key, (b = envelopeProtobuf(t.apiVersion, t.kind, itemMessage(src, t.apiVersion, t.kind))));
    return b;
  },

  encodeValue(v) {
    const kind = String(v.kind ?? '');
    const apiVersion = envelopeApiVersion(v.apiVersion as string | undefined, kind);
    return envelopeProtobuf(apiVersion, kind, encodeProtobufMessage(apiVersion, kind, v));
  },

  *encodeList(t, meta, items) {
    const itemKind = t.kind.slice(0, -'List'.length);
    const metaBytes = encodeJsonMessage(listMetaType, listMetaValue(meta));
    const parts: Uint8Array[] = [fieldHeader(1, metaBytes.length), metaBytes];
    let rawLength = parts[0]!.length + metaBytes.length;
    for (const it of items) {
      const b = itemMessage(it, t.apiVersion, itemKind);
      const h = fieldHeader(2, b.length);
      parts.push(h, b);
      rawLength += h.length + b.length;
    }
    const typeMeta = typeMetaType.encode({ apiVersion: t.apiVersion, kind: t.kind }).finish();
    yield Buffer.concat([PROTOBUF_MAGIC, fieldHeader(1, typeMeta.length), typeMeta, fieldHeader(2, rawLength)]);
    let pending: Uint8Array[] = [];
    let size = 0;
    for (const p of parts) {
      pending.push(p);
      size += p.length;
      if (size >= CHUNK) {
        yield Buffer.concat(pending);
        pending = [];
        size = 0;
      }
    }
    // runtime.Unknown's contentEncoding and contentType, empty, as upstream writes them
    pending.push(fieldHeader(3, 0), fieldHeader(4, 0));
    yield Buffer.concat(pending);
  },

  encodeValueList(t, meta, items) {
    const itemKind = t.kind.slice(0, -'List'.length);
    return envelopeProtobuf(t.apiVersion, t.kind, encodeProtobufMessage(t.apiVersion, t.kind, { metadata: listMetaValue(meta), items: items.map((i) => ({ ...i, kind: itemKind })) }));
  },

  encodeWatchFrame: (type, object) => encodeProtobufWatchFrame(type, object),

  decodeBody(body) {
    try {
      const { object, kind, apiVersion } = decodeProtobufObject(body);
      // messages nest only as deep as their types; the JSON inside fieldsV1 / raw extensions may not
      if (exceedsDepth(object)) throw new ProtobufDecodeError(`json: ${tooDeep('{')}`, { apiVersion, kind });
      return { value: object, duplicates: [] };
    } catch (e) {
      if (e instanceof ProtobufDecodeError) throw new BodyDecodeError(e.message, e.typeMeta);
      throw e;
    }
  },
};

registerSerializer(protobufSerializer, [UPSTREAM_PROTOBUF_MEDIA_TYPE]);
