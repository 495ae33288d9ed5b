/**
 * Response encoding for objects, lists and Status in the negotiated media type. Objects already in
 * stored form are written by splicing bytes (no parse, no stringify) for compact JSON, the hot path;
 * pretty JSON and YAML decode once and re-encode. JSON ends with a newline and pretty JSON does not,
 * as upstream's serializer writes them.
 */
import type { Status } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { withTypeMeta } from './object-bytes.js';
import { encodeYaml } from './yaml.js';
import type { ResponseMediaType } from './media-types.js';

export interface EncodeOptions {
  mediaType: ResponseMediaType;
  pretty: boolean;
}

function fromValue(value: unknown, o: EncodeOptions): Buffer {
  if (o.mediaType === 'application/yaml') return Buffer.from(encodeYaml(value));
  return Buffer.from(o.pretty ? JSON.stringify(value, null, 2) : `${JSON.stringify(value)}\n`);
}

/** A single object from its stored bytes. */
export function encodeStoredObject(stored: Uint8Array, revision: number | undefined, apiVersion: string, kind: string, o: EncodeOptions): Buffer {
  const compact = o.mediaType === 'application/json' && !o.pretty;
  const json = withTypeMeta(stored, apiVersion, kind, revision, compact);
  return compact ? json : fromValue(JSON.parse(json.toString('utf8')), o);
}

export function encodeValue(value: ApiObject | Status | object, o: EncodeOptions): Buffer {
  return fromValue(value, o);
}

export interface ListMeta {
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

/**
 * A list, as a sequence of chunks so large lists are written as they are produced: each item is
 * JSON without TypeMeta (upstream writes list items that way).
 */
export function* encodeList(apiVersion: string, listKind: string, meta: ListMeta, items: Iterable<Buffer>, o: EncodeOptions): Generator<Buffer> {
  if (o.mediaType !== 'application/json' || o.pretty) {
    const all: unknown[] = [];
    for (const it of items) all.push(JSON.parse(it.toString('utf8')));
    yield fromValue({ kind: listKind, apiVersion, metadata: listMetaValue(meta), items: all }, o);
    return;
  }
  yield Buffer.from(`{"kind":${JSON.stringify(listKind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${JSON.stringify(listMetaValue(meta))},"items":[`);
  const CHUNK = 64 * 1024;
  let pending: Buffer[] = [];
  let size = 0;
  let first = true;
  const COMMA = Buffer.from(',');
  for (const it of items) {
    if (!first) pending.push(COMMA);
    first = false;
    pending.push(it);
    size += it.length + 1;
    if (size >= CHUNK) {
      yield Buffer.concat(pending);
      pending = [];
      size = 0;
    }
  }
  pending.push(Buffer.from(']}\n'));
  yield Buffer.concat(pending);
}

function listMetaValue(meta: ListMeta): Record<string, unknown> {
  const m: Record<string, unknown> = { resourceVersion: meta.resourceVersion };
  if (meta.continue) m.continue = meta.continue;
  if (meta.remainingItemCount !== undefined) m.remainingItemCount = meta.remainingItemCount;
  return m;
}
