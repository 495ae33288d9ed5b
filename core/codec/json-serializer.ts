/**
 * JSON: objects are written by splicing bytes (TypeMeta in front of the stored JSON, no parse, no
 * stringify), lists are streamed item by item, watch frames wrap the object's bytes. Pretty output
 * decodes once and indents, without the trailing newline, as upstream's serializer writes it. Bodies
 * are parsed natively, with one extra scan for duplicate keys.
 */
import { JsonSyntaxError } from './json.js';
import { resourceVersionInsert, resourceVersionPlace, withTypeMeta } from './object-bytes.js';
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
 * then `tail`. An item is its bytes, or stored bytes with their resourceVersion written in at
 * `at[i]` (`insert[i]`, latin1), copied straight into the chunk.
 */
function joinItems(items: readonly Uint8Array[], at: readonly number[], insert: readonly string[], leadingComma: boolean, tail?: Uint8Array): Buffer {
  let size = (tail?.length ?? 0) + (items.length ? items.length - 1 + (leadingComma ? 1 : 0) : 0);
  for (let i = 0; i < items.length; i++) size += items[i]!.length + insert[i]!.length;
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (let i = 0; i < items.length; i++) {
    if (i > 0 || leadingComma) out[pos++] = 0x2c;
    const b = items[i]!;
    const k = at[i]!;
    if (k < 0) {
      out.set(b, pos);
      pos += b.length;
      continue;
    }
    // the whole bytes copied, their tail moved up within the chunk, the field written in the gap: no
    // views to make (each costs about as much as copying the object)
    const text = insert[i]!;
    out.set(b, pos);
    out.copyWithin(pos + k + text.length, pos + k, pos + b.length);
    pos += k;
    // a short ASCII text: written byte by byte (Buffer.write's set-up costs more than the copy here)
    for (let c = 0; c < text.length; c++) out[pos++] = text.charCodeAt(c);
    pos += b.length - k;
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
    let at: number[] = [];
    let insert: string[] = [];
    let batchComma = false;
    let size = 0;
    let first = true;
    for (const it of items) {
      const st = it.stored?.();
      let b: Uint8Array;
      let k = -1;
      let ins = '';
      if (st && st.revision !== undefined) {
        b = st.bytes;
        const place = st.place ?? resourceVersionPlace(b);
        k = place >> 2;
        ins = resourceVersionInsert(place, st.revision);
      } else b = it.itemJson();
      const length = b.length + ins.length;
      const comma = !first;
      first = false;
      if (length >= CHUNK) {
        // a large item goes out as it is (its bytes not copied) or, with a resourceVersion to write in, in a chunk of its own
        if (batch.length) yield joinItems(batch, at, insert, batchComma);
        if (k < 0) {
          if (comma) yield COMMA;
          yield b;
        } else yield joinItems([b], [k], [ins], comma);
        batch = [];
        at = [];
        insert = [];
        size = 0;
        continue;
      }
      if (!batch.length) batchComma = comma;
      batch.push(b);
      at.push(k);
      insert.push(ins);
      size += length + 1;
      if (size >= CHUNK) {
        yield joinItems(batch, at, insert, batchComma);
        batch = [];
        at = [];
        insert = [];
        size = 0;
      }
    }
    yield joinItems(batch, at, insert, batchComma, LIST_END);
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
