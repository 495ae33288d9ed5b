/**
 * The stored form of an object and the cheap byte edits that turn it into a response, so reads never
 * re-encode: objects are stored as canonical compact JSON without `kind`, `apiVersion` and
 * `metadata.resourceVersion` (the store's modRevision is the resourceVersion, as upstream does with
 * etcd). On the way out the resourceVersion is spliced into metadata at its upstream position (after
 * name/generateName/namespace/selfLink/uid) and TypeMeta is prefixed for single objects; list items
 * are written without TypeMeta, as upstream writes them.
 */
import type { ApiObject } from '../api/types.js';

const enc = new TextEncoder();

/** Canonical stored bytes of an object (TypeMeta and resourceVersion removed). */
export function encodeStored(obj: ApiObject): Buffer {
  const { kind: _k, apiVersion: _a, metadata, ...rest } = obj;
  const { resourceVersion: _rv, ...meta } = metadata;
  return Buffer.from(JSON.stringify({ metadata: meta, ...rest }));
}

const META_OPEN = '{"metadata":{';
const beforeResourceVersion = new Set(['name', 'generateName', 'namespace', 'selfLink', 'uid']);

/** Index in `json` where `"resourceVersion":...` belongs inside metadata. */
function resourceVersionOffset(json: string): { at: number; needsComma: boolean } {
  if (!json.startsWith(META_OPEN)) throw new Error('stored object does not start with metadata');
  let i = META_OPEN.length;
  let wrote = false;
  while (json.charCodeAt(i) === 34 /* " */) {
    const keyEnd = json.indexOf('"', i + 1);
    const key = json.slice(i + 1, keyEnd);
    if (!beforeResourceVersion.has(key)) break;
    // value is a string: skip it, honouring escapes
    let j = keyEnd + 3; // past `":"`
    for (;;) {
      const c = json.charCodeAt(j);
      if (c === 92) j += 2;
      else if (c === 34) break;
      else j++;
    }
    i = j + 1;
    wrote = true;
    if (json.charCodeAt(i) === 44 /* , */) i++;
    else break;
  }
  // i is at the next key (`"`), or at `}` when metadata ended
  if (json.charCodeAt(i) === 125 /* } */) return { at: i, needsComma: wrote ? true : false };
  return { at: i, needsComma: false };
}

/** The object's JSON (no TypeMeta) with metadata.resourceVersion set; used as a list item. */
export function withResourceVersion(stored: Uint8Array, revision: number): Buffer {
  const json = Buffer.isBuffer(stored) ? stored.toString('latin1') : Buffer.from(stored).toString('latin1');
  const { at, needsComma } = resourceVersionOffset(json);
  const closing = json.charCodeAt(at) === 125;
  const field = `"resourceVersion":"${revision}"`;
  const insert = closing ? (needsComma ? `,${field}` : field) : `${field},`;
  // latin1 round trip keeps arbitrary UTF-8 bytes intact
  return Buffer.from(json.slice(0, at) + insert + json.slice(at), 'latin1');
}

/** Prefixes `{"kind":...,"apiVersion":...,` to an object's JSON (which starts with `{"metadata"`). */
export function withTypeMeta(objectJson: Uint8Array, apiVersion: string, kind: string): Buffer {
  const head = enc.encode(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},`);
  const out = Buffer.allocUnsafe(head.length + objectJson.length - 1);
  out.set(head, 0);
  out.set(objectJson.subarray(1), head.length);
  return out;
}

/** Parses stored bytes as they are (no TypeMeta, no resourceVersion). */
export function parseStored(stored: Uint8Array): ApiObject {
  return JSON.parse(Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).toString('utf8')) as ApiObject;
}

/** Decodes stored bytes into an object with TypeMeta and resourceVersion. */
export function decodeStored(stored: Uint8Array, revision: number, apiVersion: string, kind: string): ApiObject {
  const body = parseStored(stored);
  body.metadata.resourceVersion = String(revision);
  return { kind, apiVersion, ...body };
}
