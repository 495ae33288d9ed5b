/**
 * JSON: objects are written by splicing bytes (TypeMeta in front of the stored JSON, no parse, no
 * stringify), lists are streamed item by item, watch frames wrap the object's bytes. Pretty output
 * decodes once and indents, without the trailing newline, as upstream's serializer writes it. Bodies
 * are parsed natively, with one extra scan for duplicate keys.
 */
import { JsonSyntaxError } from './json.js';
import { withTypeMeta } from './object-bytes.js';
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

/** Items joined by commas in one buffer, a comma first when an item came before them, then `tail`. */
function joinItems(items: readonly Uint8Array[], leadingComma: boolean, tail?: Uint8Array): Buffer {
  let size = (tail?.length ?? 0) + (items.length ? items.length - 1 + (leadingComma ? 1 : 0) : 0);
  for (const b of items) size += b.length;
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (let i = 0; i < items.length; i++) {
    if (i > 0 || leadingComma) out[pos++] = 0x2c;
    out.set(items[i]!, pos);
    pos += items[i]!.length;
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
    // chunks of about CHUNK bytes, each one buffer with the commas written in place
    let batch: Uint8Array[] = [];
    let batchComma = false;
    let size = 0;
    let first = true;
    for (const it of items) {
      const b = it.itemJson();
      const comma = !first;
      first = false;
      if (b.length >= CHUNK) {
        // a large item goes out as it is, not copied into a chunk
        if (batch.length) yield joinItems(batch, batchComma);
        if (comma) yield COMMA;
        yield b;
        batch = [];
        size = 0;
        continue;
      }
      if (!batch.length) batchComma = comma;
      batch.push(b);
      size += b.length + 1;
      if (size >= CHUNK) {
        yield joinItems(batch, batchComma);
        batch = [];
        size = 0;
      }
    }
    yield joinItems(batch, batchComma, LIST_END);
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
