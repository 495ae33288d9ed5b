/**
 * The stored form of an object and the cheap byte edits that turn it into a response, so reads never
 * re-encode: objects are stored as canonical compact JSON without `kind`, `apiVersion` and
 * `metadata.resourceVersion` (the store's modRevision is the resourceVersion, as upstream does with
 * etcd). On the way out the resourceVersion is spliced into metadata at its upstream position (after
 * name/generateName/namespace/selfLink/uid) and TypeMeta is prefixed for single objects; list items
 * are written without TypeMeta, as upstream writes them.
 */
import type { ApiObject } from '../api/types.js';

/** Canonical stored bytes of an object (TypeMeta and resourceVersion removed). */
export function encodeStored(obj: ApiObject): Buffer {
  const { kind: _k, apiVersion: _a, metadata, ...rest } = obj;
  const { resourceVersion: _rv, ...meta } = metadata;
  return Buffer.from(JSON.stringify({ metadata: meta, ...rest }));
}

const META_OPEN = Buffer.from('{"metadata":{');
const beforeResourceVersion = new Set(['name', 'generateName', 'namespace', 'selfLink', 'uid']);
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;

/** Whether the bytes open with `{"metadata":{` (any bytes at all may be asked: a value may be damaged or short). */
const startsWithMetadata = (b: Buffer): boolean => b.length >= META_OPEN.length && b.compare(META_OPEN, 0, META_OPEN.length, 0, META_OPEN.length) === 0;

/** Where the JSON string whose content starts at `from` ends: the index of its closing quote (escapes honoured). */
function stringEnd(b: Buffer, from: number): number {
  let j = from;
  while (j < b.length && b[j] !== QUOTE) j += b[j] === BACKSLASH ? 2 : 1;
  return j;
}

/**
 * Where `"resourceVersion":"<revision>"` goes in stored bytes, and the bytes to put there. Only ASCII
 * structure is looked at (bytes of multi-byte UTF-8 characters are all >= 0x80), so the scan runs on
 * the bytes themselves: no decoding of the object.
 */
export function resourceVersionSplice(stored: Uint8Array, revision: number): { at: number; insert: Buffer } {
  const place = resourceVersionPlace(stored);
  const digits = String(revision);
  const insert = Buffer.allocUnsafe(resourceVersionFieldLength(place, digits));
  writeResourceVersionField(insert, 0, place, digits);
  return { at: place >> 2, insert };
}

/**
 * Where metadata.resourceVersion goes in stored bytes, as one number a reader may keep beside them:
 * the offset times four, plus how the field is joined there (0: `field,` before the next key;
 * 1: `,field` after the last; 2: `field` alone in an empty metadata).
 */
export function resourceVersionPlace(stored: Uint8Array): number {
  const b = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  if (!startsWithMetadata(b)) throw new Error('stored object does not start with metadata');
  let i = META_OPEN.length;
  let wrote = false;
  while (b[i] === QUOTE) {
    const keyEnd = b.indexOf(QUOTE, i + 1);
    if (!beforeResourceVersion.has(b.toString('latin1', i + 1, keyEnd))) break;
    // the value is a string: skip it (past `":"` to its closing quote)
    i = stringEnd(b, keyEnd + 3) + 1;
    wrote = true;
    if (b[i] === COMMA) i++;
    else break;
  }
  // i is at the next key (`"`), or at `}` when metadata ended
  return i * 4 + (b[i] !== CLOSE_BRACE ? 0 : wrote ? 1 : 2);
}

const RV_OPEN = Buffer.from('"resourceVersion":"', 'latin1');

/** The bytes writeResourceVersionField writes. */
export function resourceVersionFieldLength(place: number, digits: string): number {
  return RV_OPEN.length + digits.length + 1 + ((place & 3) === 2 ? 0 : 1);
}

/**
 * Writes the field of a resourceVersionPlace into `out` at `pos` (no string made: a template's
 * result is a rope whose every byte read is slow); returns the position after it.
 */
export function writeResourceVersionField(out: Buffer, pos: number, place: number, digits: string): number {
  const join = place & 3;
  if (join === 1) out[pos++] = 0x2c;
  out.set(RV_OPEN, pos);
  pos += RV_OPEN.length;
  for (let c = 0; c < digits.length; c++) out[pos++] = digits.charCodeAt(c);
  out[pos++] = 0x22;
  if (join === 0) out[pos++] = 0x2c;
  return pos;
}


/**
 * A string field among the string fields that open the stored object's metadata (name, namespace,
 * uid, ...), read from the bytes without decoding the object; undefined when it is not among them or
 * its value has an escape (the caller then decodes).
 */
export function leadingMetadataString(stored: Uint8Array, field: string): string | undefined {
  const b = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  if (!startsWithMetadata(b)) return undefined;
  let i = META_OPEN.length;
  while (b[i] === QUOTE) {
    const keyEnd = b.indexOf(QUOTE, i + 1);
    if (keyEnd < 0 || b[keyEnd + 1] !== 0x3a || b[keyEnd + 2] !== QUOTE) return undefined; // not a string value
    const j = stringEnd(b, keyEnd + 3);
    if (b.toString('latin1', i + 1, keyEnd) === field) return b.subarray(keyEnd + 3, j).includes(BACKSLASH) ? undefined : b.toString('utf8', keyEnd + 3, j);
    i = j + 1;
    if (b[i] !== COMMA) return undefined;
    i++;
  }
  return undefined;
}

/**
 * Whether the stored bytes may hold `"<key>":` anywhere (as a key: inside a JSON string a quote is
 * escaped, so the unescaped form is never part of a value). False means the key is surely absent.
 */
export function mayHaveKey(stored: Uint8Array, keyWithQuotesAndColon: Buffer): boolean {
  return Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).indexOf(keyWithQuotesAndColon) >= 0;
}

/** The object's JSON (no TypeMeta) with metadata.resourceVersion set; used as a list item. */
export function withResourceVersion(stored: Uint8Array, revision: number): Buffer {
  const { at, insert } = resourceVersionSplice(stored, revision);
  return Buffer.concat([stored.subarray(0, at), insert, stored.subarray(at)]);
}

const typeMetaHeads = new Map<string, Buffer>();

/** `{"kind":...,"apiVersion":...,`, built once per kind. */
function typeMetaHead(apiVersion: string, kind: string): Buffer {
  const id = `${apiVersion}/${kind}`;
  let head = typeMetaHeads.get(id);
  if (!head) typeMetaHeads.set(id, (head = Buffer.from(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},`)));
  return head;
}

const NL = Buffer.from('\n');

/**
 * A single object's JSON in one allocation: TypeMeta first, then the stored fields with
 * metadata.resourceVersion spliced in when `revision` is known; `newline` ends it as a response body.
 * `objectJson` may already carry the resourceVersion (a memoized list item).
 */
export function withTypeMeta(objectJson: Uint8Array, apiVersion: string, kind: string, revision?: number, newline = false): Buffer {
  const parts: Uint8Array[] = [typeMetaHead(apiVersion, kind)];
  if (revision === undefined) parts.push(objectJson.subarray(1));
  else {
    const { at, insert } = resourceVersionSplice(objectJson, revision);
    parts.push(objectJson.subarray(1, at), insert, objectJson.subarray(at));
  }
  if (newline) parts.push(NL);
  return Buffer.concat(parts);
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
