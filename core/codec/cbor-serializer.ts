/**
 * CBOR (application/cbor; watch streams application/cbor-seq), served only under the
 * CBORServingAndStorage gate. Every answer is one data item behind the self-described tag; a list is
 * spliced from the memoized encodings of its items (each object version is encoded once, without the
 * tag, however many lists and watches carry it); a watch frame is one item per event, {type, object},
 * whose object keeps its own tag as upstream's RawExtension does. Bodies are checked as upstream's
 * decoder checks them (core/codec/cbor-scan.ts) before cbor-x reads them.
 */
import { listMetaValue } from './json-serializer.js';
import {
  cborShapeFor,
  type CborShape,
  CBOR_MEDIA_TYPE,
  CBOR_SELF_DESCRIBED,
  CBOR_SEQ_MEDIA_TYPE,
  CborDecodeError,
  decodeCbor,
  encodeCbor,
  encodeCborBare,
  REQUEST_LIMITS,
} from './cbor.js';
import { BodyDecodeError, itemValue, type ListMeta, type ObjectSource, objectValue, registerSerializer, type Serializer } from './serializer.js';

const CHUNK = 64 * 1024;

/** Head of a CBOR item of `major` with argument n (the preferred, shortest form). */
function head(major: number, n: number): Uint8Array {
  const m = major << 5;
  if (n < 24) return Uint8Array.of(m | n);
  if (n < 0x100) return Uint8Array.of(m | 24, n);
  if (n < 0x10000) return Uint8Array.of(m | 25, n >> 8, n & 0xff);
  const b = new Uint8Array(5);
  b[0] = m | 26;
  new DataView(b.buffer).setUint32(1, n);
  return b;
}

const text = (s: string): Uint8Array => encodeCborBare(s);
const KIND = text('kind');
const API_VERSION = text('apiVersion');
const METADATA = text('metadata');
const ITEMS = text('items');
const TYPE = text('type');
const OBJECT = text('object');
const FRAME_HEAD = Buffer.concat([CBOR_SELF_DESCRIBED, head(5, 2), TYPE]);
/** ListMeta's int64 field. */
const LIST_META_SHAPE = { fields: { remainingItemCount: 'int64' } } as const;
const frameTypes = new Map<string, Uint8Array>();

/** A value the encoder may write: JSON-shaped (values built in code may hold `undefined`, which JSON drops). */
const jsonShaped = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown;

/** The item form of an object (no TypeMeta), without the tag, memoized per object version. */
function itemBytes(src: ObjectSource, shape: CborShape | undefined): Uint8Array {
  let b = src.memo('ci');
  if (!b) {
    const fields = itemValue(src.value());
    src.setMemo('ci', (b = encodeCborBare(fields, shape)));
  }
  return b;
}

export const cborSerializer: Serializer = {
  id: 'cbor',
  mediaType: CBOR_MEDIA_TYPE,
  streamMediaType: CBOR_SEQ_MEDIA_TYPE,
  streams: true,
  needsMessages: false,
  gate: 'cbor',

  encodeObject(src, t) {
    const key = `c:${t.apiVersion}`;
    let b = src.memo(key);
    if (!b) {
      const shape = cborShapeFor(t.apiVersion, t.kind);
      const v = objectValue(t, src.value());
      src.setMemo(key, (b = encodeCbor(v, shape)));
    }
    return b;
  },

  encodeValue: (v) => encodeCbor(jsonShaped(v)),

  *encodeList(t, meta: ListMeta, items: Iterable<ObjectSource>) {
    const shape = cborShapeFor(t.apiVersion, t.kind.slice(0, -'List'.length));
    const encoded: Uint8Array[] = [];
    for (const it of items) encoded.push(itemBytes(it, shape));
    yield Buffer.concat([
      CBOR_SELF_DESCRIBED,
      head(5, 4),
      KIND,
      text(t.kind),
      API_VERSION,
      text(t.apiVersion),
      METADATA,
      encodeCborBare(listMetaValue(meta), LIST_META_SHAPE),
      ITEMS,
      head(4, encoded.length),
    ]);
    let pending: Uint8Array[] = [];
    let size = 0;
    for (const b of encoded) {
      pending.push(b);
      size += b.length;
      if (size >= CHUNK) {
        yield Buffer.concat(pending);
        pending = [];
        size = 0;
      }
    }
    if (pending.length) yield Buffer.concat(pending);
  },

  encodeValueList: (t, meta, items) => encodeCbor(jsonShaped({ kind: t.kind, apiVersion: t.apiVersion, metadata: listMetaValue(meta), items })),

  encodeWatchFrame(type, object) {
    let typeBytes = frameTypes.get(type);
    if (!typeBytes) frameTypes.set(type, (typeBytes = text(type)));
    return Buffer.concat([FRAME_HEAD, typeBytes, OBJECT, object]);
  },

  decodeBody(body) {
    try {
      return { value: decodeCbor(body, REQUEST_LIMITS).value, duplicates: [] };
    } catch (e) {
      if (!(e instanceof CborDecodeError)) throw e;
      // upstream reads the kind first (a failure there is worded so); past it, the error is the kind's
      if (e.nested) throw new BodyDecodeError(e.message, e.typeMeta ?? { apiVersion: '', kind: '' });
      throw new BodyDecodeError(`unable to determine group/version/kind: ${e.message}`);
    }
  },
};

registerSerializer(cborSerializer);
