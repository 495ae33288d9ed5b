/**
 * JSON: objects are written by splicing bytes (TypeMeta in front of the stored JSON, no parse, no
 * stringify), lists are streamed item by item, watch frames wrap the object's bytes. Pretty output
 * decodes once and indents, without the trailing newline, as upstream's serializer writes it. Bodies
 * are parsed natively, with one extra scan for duplicate keys.
 */
import { JsonSyntaxError } from './json.js';
import { resourceVersionSplice, withTypeMeta } from './object-bytes.js';
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
 * then `tail`. An item is one or more parts (`starts` are the indexes of each item's first part).
 */
function joinItems(parts: readonly Uint8Array[], starts: readonly number[], leadingComma: boolean, tail?: Uint8Array): Buffer {
  let size = (tail?.length ?? 0) + (starts.length ? starts.length - 1 + (leadingComma ? 1 : 0) : 0);
  for (const b of parts) size += b.length;
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  let item = 0;
  for (let i = 0; i < parts.length; i++) {
    if (starts[item] === i) {
      if (item > 0 || leadingComma) out[pos++] = 0x2c;
      item++;
    }
    out.set(parts[i]!, pos);
    pos += parts[i]!.length;
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
    let parts: Uint8Array[] = [];
    let starts: number[] = [];
    let batchComma = false;
    let size = 0;
    let first = true;
    for (const it of items) {
      const st = it.stored?.();
      let item: Uint8Array[];
      let length: number;
      if (st && st.revision !== undefined) {
        const { at, insert } = resourceVersionSplice(st.bytes, st.revision);
        item = [st.bytes.subarray(0, at), insert, st.bytes.subarray(at)];
        length = st.bytes.length + insert.length;
      } else {
        const b = it.itemJson();
        item = [b];
        length = b.length;
      }
      const comma = !first;
      first = false;
      if (length >= CHUNK) {
        // a large item goes out as it is, not copied into a chunk
        if (starts.length) yield joinItems(parts, starts, batchComma);
        if (comma) yield COMMA;
        yield* item;
        parts = [];
        starts = [];
        size = 0;
        continue;
      }
      if (!starts.length) batchComma = comma;
      starts.push(parts.length);
      for (const p of item) parts.push(p);
      size += length + 1;
      if (size >= CHUNK) {
        yield joinItems(parts, starts, batchComma);
        parts = [];
        starts = [];
        size = 0;
      }
    }
    yield joinItems(parts, starts, batchComma, LIST_END);
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
