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
  messageTypeOf,
  PROTOBUF_MAGIC,
  PROTOBUF_MEDIA_TYPE,
  ProtobufDecodeError,
  UPSTREAM_PROTOBUF_MEDIA_TYPE,
} from './protobuf.js';
import { encodeJsonMessage, encodeJsonMessageField } from './protobuf/json-to-wire.js';
import { envelopeApiVersion } from './protobuf/kinds.js';
import { META_V1, RUNTIME, messageType } from './protobuf/proto-root.js';
import { BodyDecodeError, type ObjectSource, registerSerializer, type Serializer } from './serializer.js';
import type protobuf from 'protobufjs';

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

const varintLength = (v: number): number => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5);

/** Bytes of a length-delimited field (one-byte tag) holding `n` bytes. */
const fieldLength = (n: number): number => 1 + varintLength(n) + n;

/** Writes tag, length and bytes of a length-delimited field at `pos`; returns the position after it. */
function writeField(out: Buffer, pos: number, field: number, b: Uint8Array): number {
  out[pos++] = (field << 3) | 2;
  let v = b.length;
  while (v > 0x7f) {
    out[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[pos++] = v;
  out.set(b, pos);
  return pos + b.length;
}

/** runtime.Unknown's empty contentEncoding (3) and contentType (4) fields. */
function writeEmptyTail(out: Buffer, pos: number): number {
  out[pos++] = (3 << 3) | 2;
  out[pos++] = 0;
  out[pos++] = (4 << 3) | 2;
  out[pos++] = 0;
  return pos;
}

/** An object's message (what a single object's envelope holds), memoized per object version. */
const itemMessage = (src: ObjectSource, apiVersion: string, kind: string): Uint8Array => {
  let b = src.memo('pi');
  if (!b) src.setMemo('pi', (b = encodeProtobufMessage(apiVersion, kind, src.value())));
  return b;
};

/** The content of a length-delimited field with a one-byte tag (what follows its length). */
function fieldContent(f: Uint8Array): Uint8Array {
  let pos = 1;
  while (f[pos]! & 0x80) pos++;
  return f.subarray(pos + 1);
}

/**
 * An item as a list writes it: field 2 of the XList (tag, length, the item's message), memoized per
 * object version, so a list copies each item's bytes once and does no other work per item. An item
 * not yet encoded is written as the field in one pass (`type`: its message type, looked up once per
 * list); the message memo becomes a view of the same bytes (each version's message is held once).
 */
const itemField = (src: ObjectSource, type: () => protobuf.Type): Uint8Array => {
  let f = src.memo('pf');
  if (!f) {
    const message = src.memo('pi');
    if (message) {
      f = Buffer.allocUnsafe(fieldLength(message.length));
      writeField(f as Buffer, 0, 2, message);
    } else f = encodeJsonMessageField(type(), src.value(), 2);
    src.setMemo('pf', f);
    src.setMemo('pi', fieldContent(f));
  }
  return f;
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
    let itemType: protobuf.Type | undefined;
    const typeOfItems = (): protobuf.Type => (itemType ??= messageTypeOf(t.apiVersion, itemKind));
    const metaBytes = encodeJsonMessage(messageType(`${META_V1}.ListMeta`), listMetaValue(meta));
    // the raw XList's length goes in the envelope's header, so the item messages are gathered first
    const fields: Uint8Array[] = [];
    let rawLength = fieldLength(metaBytes.length);
    for (const it of items) {
      const f = itemField(it, typeOfItems);
      fields.push(f);
      rawLength += f.length;
    }
    const typeMeta = messageType(`${RUNTIME}.TypeMeta`).encode({ apiVersion: t.apiVersion, kind: t.kind }).finish();
    // the header and the ListMeta lead the first chunk; then chunks of about CHUNK bytes, each one buffer
    const head = Buffer.concat([PROTOBUF_MAGIC, fieldHeader(1, typeMeta.length), typeMeta, fieldHeader(2, rawLength), fieldHeader(1, metaBytes.length), metaBytes]);
    let from = 0;
    let lead: Uint8Array | undefined = head;
    while (from < fields.length || lead) {
      let size = lead?.length ?? 0;
      let to = from;
      for (; to < fields.length && size < CHUNK; to++) size += fields[to]!.length;
      const last = to === fields.length;
      // runtime.Unknown's contentEncoding and contentType, empty, as upstream writes them
      const out = Buffer.allocUnsafe(size + (last ? 4 : 0));
      let pos = 0;
      if (lead) {
        out.set(lead, 0);
        pos = lead.length;
        lead = undefined;
      }
      for (let i = from; i < to; i++) {
        out.set(fields[i]!, pos);
        pos += fields[i]!.length;
      }
      if (last) writeEmptyTail(out, pos);
      yield out;
      from = to;
    }
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
