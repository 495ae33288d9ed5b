/**
 * JSON: objects are written by splicing bytes (TypeMeta in front of the stored JSON, no parse, no
 * stringify), lists are streamed item by item, watch frames wrap the object's bytes. Pretty output
 * decodes once and indents, without the trailing newline, as upstream's serializer writes it. Bodies
 * are parsed natively, with one extra scan for duplicate keys.
 */
import { JsonSyntaxError } from './json.js';
import { resourceVersionFieldLength, resourceVersionPlace, withTypeMeta, writeResourceVersionField } from './object-bytes.js';
import { BodyDecodeError, type EncodeOptions, itemValue, type ListMeta, type ObjectSource, objectValue, registerSerializer, type Serializer, type TypeInfo } from './serializer.js';
import { parseTextBody } from './text-body.js';

const COMMA = Buffer.from(',');
const LIST_END = Buffer.from(']}\n');
const FRAME_TAIL = Buffer.from('}\n');
const frameHeads = new Map<string, Buffer>();
const CHUNK = 64 * 1024;

export function listMetaValue(meta: ListMeta): Record<string, unknown> {
  const m: Record<string, unknown> = { resourceVersion: meta.resourceVersion };
  if (meta.continue) m.continue = meta.continue;
  if (meta.remainingItemCount !== undefined) m.remainingItemCount = meta.remainingItemCount;
  return m;
}

/**
 * The items of one chunk joined by commas in one buffer, a comma first when an item came before them,
 * then `tail`. An item is its bytes (`place[i]` -1), or stored bytes with their resourceVersion
 * (`digits[i]`) written in at `place[i]` (resourceVersionPlace), copied straight into the chunk.
 */
function joinItems(items: readonly Uint8Array[], place: readonly number[], digits: readonly string[], leadingComma: boolean, tail?: Uint8Array): Buffer {
  let size = (tail?.length ?? 0) + (items.length ? items.length - 1 + (leadingComma ? 1 : 0) : 0);
  for (let i = 0; i < items.length; i++) size += items[i]!.length + (place[i]! < 0 ? 0 : resourceVersionFieldLength(place[i]!, digits[i]!));
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (let i = 0; i < items.length; i++) {
    if (i > 0 || leadingComma) out[pos++] = 0x2c;
    const b = items[i]!;
    const p = place[i]!;
    if (p < 0) {
      out.set(b, pos);
      pos += b.length;
      continue;
    }
    // the whole bytes copied, their tail moved up within the chunk, the field written in the gap: no
    // views to make (each costs about as much as copying the object)
    const k = p >> 2;
    out.set(b, pos);
    out.copyWithin(pos + k + resourceVersionFieldLength(p, digits[i]!), pos + k, pos + b.length);
    pos = writeResourceVersionField(out, pos + k, p, digits[i]!) + (b.length - k);
  }
  if (tail) out.set(tail, pos);
  return out;
}

const text = (v: unknown, o: EncodeOptions): Buffer => Buffer.from(o.pretty ? JSON.stringify(v, null, 2) : `${JSON.stringify(v)}\n`);

export const jsonSerializer: Serializer = {
  id: 'json',
  mediaType: 'application/json',
  streamMediaType: 'application/json',
  streams: true,
  needsMessages: false,

  encodeObject(src, t, o) {
    if (o.pretty) return text(objectValue(t, src.value()), o);
    const key = `j:${t.apiVersion}`;
    let b = src.memo(key);
    if (!b) {
      const st = src.stored?.();
      // stored bytes and a revision: TypeMeta and resourceVersion spliced in one allocation
      b = st ? withTypeMeta(st.bytes, t.apiVersion, t.kind, st.revision, true) : withTypeMeta(src.itemJson(), t.apiVersion, t.kind, undefined, true);
      src.setMemo(key, b);
    }
    return b;
  },

  encodeValue: (v, o) => text(v, o),

  *encodeList(t: TypeInfo, meta: ListMeta, items: Iterable<ObjectSource>, o: EncodeOptions) {
    if (o.pretty) {
      const all: unknown[] = [];
      for (const it of items) all.push(itemValue(it.value()));
      yield text({ kind: t.kind, apiVersion: t.apiVersion, metadata: listMetaValue(meta), items: all }, o);
      return;
    }
    yield Buffer.from(`{"kind":${JSON.stringify(t.kind)},"apiVersion":${JSON.stringify(t.apiVersion)},"metadata":${JSON.stringify(listMetaValue(meta))},"items":[`);
    // chunks of about CHUNK bytes, each one buffer with the commas written in place; an item with
    // stored bytes is copied straight into its chunk around its resourceVersion (no item made or kept)
    let batch: Uint8Array[] = [];
    let places: number[] = [];
    let digits: string[] = [];
    let batchComma = false;
    let size = 0;
    let first = true;
    for (const it of items) {
      const st = it.stored?.();
      let b: Uint8Array;
      let place = -1;
      let rv = '';
      let length: number;
      if (st && st.revision !== undefined) {
        b = st.bytes;
        place = st.place ?? resourceVersionPlace(b);
        rv = String(st.revision);
        length = b.length + resourceVersionFieldLength(place, rv);
      } else {
        b = it.itemJson();
        length = b.length;
      }
      const comma = !first;
      first = false;
      if (length >= CHUNK) {
        // a large item goes out as it is (its bytes not copied) or, with a resourceVersion to write in, in a chunk of its own
        if (batch.length) yield joinItems(batch, places, digits, batchComma);
        if (place < 0) {
          if (comma) yield COMMA;
          yield b;
        } else yield joinItems([b], [place], [rv], comma);
        batch = [];
        places = [];
        digits = [];
        size = 0;
        continue;
      }
      if (!batch.length) batchComma = comma;
      batch.push(b);
      places.push(place);
      digits.push(rv);
      size += length + 1;
      if (size >= CHUNK) {
        yield joinItems(batch, places, digits, batchComma);
        batch = [];
        places = [];
        digits = [];
        size = 0;
      }
    }
    yield joinItems(batch, places, digits, batchComma, LIST_END);
  },

  encodeValueList: (t, meta, items, o) => text({ kind: t.kind, apiVersion: t.apiVersion, metadata: listMetaValue(meta), items }, o),

  encodeWatchFrame(type, object) {
    let head = frameHeads.get(type);
    if (!head) frameHeads.set(type, (head = Buffer.from(`{"type":${JSON.stringify(type)},"object":`)));
    // compact objects end with a newline: the frame carries the object without it
    const body = object[object.length - 1] === 0x0a ? object.subarray(0, -1) : object;
    return Buffer.concat([head, body, FRAME_TAIL]);
  },

  decodeBody(body) {
    try {
      return parseTextBody(body, false);
    } catch (e) {
      // upstream's JSON serializer reads the kind first and words its failures so
      if (e instanceof JsonSyntaxError) throw new BodyDecodeError(`couldn't get version/kind; json parse error: ${e.message}`);
      throw e;
    }
  },
};

registerSerializer(jsonSerializer);
