/**
 * The serializer table: one entry per wire format (JSON, YAML, protobuf; CBOR behind its gate), used
 * by both threads. Each entry knows how to write an object, a list (as a stream of chunks), a watch
 * frame and a plain value (Status, reviews, Tables, discovery), and how to read a request body.
 * Negotiation (core/codec/negotiate.ts) picks the entry an answer is written in, bodySerializerFor the
 * one a request body is read with; nothing else branches on media-type strings.
 *
 * Objects reach a serializer as an ObjectSource: the stored JSON bytes (list-item form: no TypeMeta,
 * resourceVersion set) and, on demand, the decoded value. The JSON entry splices bytes (the hot path);
 * the others build from the value, and every encoding of a cached object version is memoized on it, so
 * a watch event or a popular object is encoded once per format however many clients read it.
 */

/** TypeMeta of what is written. */
export interface TypeInfo {
  apiVersion: string;
  kind: string;
}

export interface EncodeOptions {
  pretty: boolean;
}

export interface ListMeta {
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

/** One object version to write, with memos shared by every reader of that version. */
export interface ObjectSource {
  /** Compact JSON without TypeMeta, resourceVersion set (the list-item form). */
  itemJson(): Uint8Array;
  /** The stored bytes and the revision to stamp, when the source has them (lets JSON splice once). */
  stored?(): { bytes: Uint8Array; revision: number | undefined; place?: number };
  /** The decoded value (it may carry TypeMeta, which writers replace or drop); shared, never mutated. */
  value(): Readonly<Record<string, unknown>>;
  /** A memoized encoding, by key (serializer id and form). */
  memo(key: string): Uint8Array | undefined;
  setMemo(key: string, bytes: Uint8Array): void;
}

export type SerializerId = 'json' | 'yaml' | 'protobuf' | 'cbor';

/** A request body read into a plain value. */
export interface DecodedBody {
  value: unknown;
  /** Duplicate fields, worded for field validation (formats that refuse duplicates outright report none). */
  duplicates: string[];
}

/**
 * A body its format cannot read. `message` is worded as upstream's decoder for that format words it;
 * `typeMeta` is set when the body named its kind before the failure (upstream then words the error
 * for that kind).
 */
export class BodyDecodeError extends Error {
  override readonly name = 'BodyDecodeError';
  constructor(
    message: string,
    readonly typeMeta?: { apiVersion: string; kind: string },
  ) {
    super(message);
  }
}

/** Which request body formats are served beyond the always-on ones (feature gates). */
export interface BodyFormats {
  /** CBORServingAndStorage. */
  cbor: boolean;
}

export interface Serializer {
  readonly id: SerializerId;
  /** Content-Type of a single answer (the svc spelling; negotiation may answer in upstream's). */
  readonly mediaType: string;
  /** Whether watch streams can be written in this format (YAML has no stream framing). */
  readonly streams: boolean;
  /** Whether the format can carry any kind (protobuf needs a message per kind). */
  readonly needsMessages: boolean;

  /** One object: TypeMeta + the object's fields. */
  encodeObject(src: ObjectSource, t: TypeInfo, o: EncodeOptions): Uint8Array;
  /** A plain value carrying its own kind and apiVersion (Status, review answers, Tables, discovery). */
  encodeValue(v: Readonly<Record<string, unknown>>, o: EncodeOptions): Uint8Array;
  /** A list of `t.kind` (`XList`), written as chunks as they are produced. */
  encodeList(t: TypeInfo, meta: ListMeta, items: Iterable<ObjectSource>, o: EncodeOptions): Iterable<Uint8Array>;
  /** A list whose items are plain values (Table rows are not; PartialObjectMetadataList items are). */
  encodeValueList(t: TypeInfo, meta: ListMeta, items: readonly Readonly<Record<string, unknown>>[], o: EncodeOptions): Uint8Array;
  /** One watch frame around an object encoded by this serializer (encodeObject / encodeValue). */
  encodeWatchFrame(type: string, object: Uint8Array): Uint8Array;
  /** Content-Type of a watch stream. */
  readonly streamMediaType: string;

  /** Reads a request body (an object, DeleteOptions, a review); BodyDecodeError when it cannot. */
  decodeBody(body: Uint8Array): DecodedBody;
  /** The feature gate the format is served under, if any. */
  readonly gate?: keyof BodyFormats;
}

const registered = new Map<string, Serializer>();

/** Adds a serializer under its canonical media type and any other spellings. */
export function registerSerializer(s: Serializer, spellings: readonly string[] = []): void {
  registered.set(s.mediaType, s);
  for (const m of spellings) registered.set(m, s);
}

/** The serializer for a (canonical or alternative) media type, lower-case and without parameters. */
export function serializerFor(mediaType: string): Serializer | undefined {
  return registered.get(mediaType);
}

const served = (s: Serializer, formats: BodyFormats): boolean => !s.gate || formats[s.gate];

/**
 * The serializer a request body with this Content-Type is read with (no Content-Type: JSON), or
 * undefined when the type is not one of bodyMediaTypes (415).
 */
export function bodySerializerFor(contentType: string, formats: BodyFormats): Serializer | undefined {
  const semi = contentType.indexOf(';');
  const mt = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() || 'application/json';
  const s = registered.get(mt);
  return s && served(s, formats) ? s : undefined;
}

const upstreamOrder: readonly SerializerId[] = ['json', 'yaml', 'protobuf', 'cbor'];

/** The request body media types served, in upstream's order (for a 415's message). */
export function bodyMediaTypes(formats: BodyFormats): string[] {
  const out: string[] = [];
  for (const id of upstreamOrder) {
    for (const [mt, s] of registered) if (s.id === id && mt === s.mediaType && served(s, formats)) out.push(mt);
  }
  return out;
}

/** An ObjectSource over a value already in hand (a write's result): no parse needed. */
export function valueSource(value: Readonly<Record<string, unknown>>, itemJson?: Uint8Array): ObjectSource {
  let json = itemJson;
  let memos: Map<string, Uint8Array> | undefined;
  return {
    itemJson: () => (json ??= Buffer.from(JSON.stringify(value))),
    value: () => value,
    memo: (k) => memos?.get(k),
    setMemo: (k, b) => void (memos ??= new Map()).set(k, b),
  };
}

/** An ObjectSource over list-item JSON bytes; the value is parsed once, when a format needs it. */
export function bytesSource(itemJson: Uint8Array): ObjectSource {
  let value: Record<string, unknown> | undefined;
  let memos: Map<string, Uint8Array> | undefined;
  return {
    itemJson: () => itemJson,
    value: () => (value ??= JSON.parse(Buffer.from(itemJson.buffer, itemJson.byteOffset, itemJson.byteLength).toString('utf8')) as Record<string, unknown>),
    memo: (k) => memos?.get(k),
    setMemo: (k, b) => void (memos ??= new Map()).set(k, b),
  };
}

/** The value as a list item: TypeMeta dropped (upstream writes typed list items without it). */
export function itemValue(v: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (!('kind' in v) && !('apiVersion' in v)) return v as Record<string, unknown>;
  const { kind: _k, apiVersion: _a, ...rest } = v;
  return rest;
}

/** The value as a whole object: TypeMeta `t` first, then its fields. */
export const objectValue = (t: TypeInfo, v: Readonly<Record<string, unknown>>): Record<string, unknown> => ({ kind: t.kind, apiVersion: t.apiVersion, ...itemValue(v) });

/** An ObjectSource over stored bytes (no resourceVersion inside) and the revision to stamp. */
export function storedSource(stored: Uint8Array, revision: number | undefined, withRevision: (b: Uint8Array, rev: number) => Uint8Array): ObjectSource {
  let item: Uint8Array | undefined;
  const src = bytesSource(stored);
  return {
    ...src,
    itemJson: () => (item ??= revision === undefined ? stored : withRevision(stored, revision)),
    value: () => (revision === undefined ? src.value() : (bytesSource(item ??= withRevision(stored, revision)).value())),
    stored: () => ({ bytes: stored, revision }),
  };
}
