/**
 * The storage media type (--storage-media-type): the form built-in objects take in the store, as one
 * TransformingStore layer, so nothing above the Store interface sees it. Above it every value is our
 * JSON stored form (core/codec/object-bytes.ts); below it a built-in kind is stored as
 *
 * - protobuf: upstream's envelope, the 4 bytes `k8s\0` then a runtime.Unknown whose typeMeta is the
 *   kind's apiVersion and kind and whose raw is the object's message (no resourceVersion, as stored);
 * - YAML: the object with its TypeMeta, as upstream's YAML serializer writes it;
 * - JSON: our stored form as it is.
 *
 * Reads tell the form by its first bytes (`k8s\0` protobuf, `{` JSON, anything else YAML), so a store
 * written under one media type reads under another. Custom resources, kinds without a protobuf message
 * (under protobuf) and keys outside the registry stay JSON, as upstream keeps custom resources.
 *
 * A write is checked before it is stored: the encoded value must read back as the very bytes it came
 * from. A value the form cannot carry exactly (a string with a lone UTF-16 surrogate, an integer past
 * int64) is stored as JSON instead, so clients never see a change the media type made.
 */
import { respellApiVersion, canonicalSpelling } from '../api/group-aliases.js';
import { decodeProtobufObject, envelopeProtobuf } from '../codec/protobuf.js';
import { encodeJsonMessage } from '../codec/protobuf/json-to-wire.js';
import { messageToJson, type ToJsonContext } from '../codec/protobuf/message-to-json.js';
import { PROTOBUF_MAGIC, RUNTIME, hasProtobufMagic, messageType } from '../codec/protobuf/proto-root.js';
import { encodeYaml } from '../codec/yaml.js';
import { TransformError } from './value-transform.js';
import type { StoredValueTransform } from './transforming-store.js';
import type protobuf from 'protobufjs';
import { yamlLibrary } from '../codec/yaml-library.js';

export const JSON_MEDIA_TYPE = 'application/json';
export const YAML_MEDIA_TYPE = 'application/yaml';
/** Upstream's name for protobuf (its default with etcd). */
export const PROTOBUF_STORAGE_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';
/** Our spec's name for the same media type. */
const SVC_PROTOBUF_MEDIA_TYPE = 'application/vnd.svc.protobuf';

/** Values --storage-media-type accepts, sorted as upstream lists them. */
export const storageMediaTypes: readonly string[] = [JSON_MEDIA_TYPE, PROTOBUF_STORAGE_MEDIA_TYPE, SVC_PROTOBUF_MEDIA_TYPE, YAML_MEDIA_TYPE];

export type StorageForm = 'json' | 'yaml' | 'protobuf';

export function storageFormOf(mediaType: string): StorageForm {
  if (mediaType === YAML_MEDIA_TYPE) return 'yaml';
  if (mediaType === PROTOBUF_STORAGE_MEDIA_TYPE || mediaType === SVC_PROTOBUF_MEDIA_TYPE) return 'protobuf';
  return 'json';
}

/** What the codec needs to know of the kind stored under a key. */
export interface StoredKind {
  /** The storage version's apiVersion and the kind, as the envelope and YAML carry them. */
  apiVersion: string;
  kind: string;
  /** The kind's protobuf message; absent: the kind has none and stays JSON under protobuf. */
  message?: protobuf.Type;
  /** Our JSON stored form of an object decoded from another form (TypeMeta set, fields in any order). */
  storedJson(obj: Record<string, unknown>): Uint8Array;
}

/** The built-in kind stored under a key; undefined for custom resources and keys outside the registry. */
export type StoredKindOfKey = (key: string) => StoredKind | undefined;

const OPEN_BRACE = 0x7b;

const embedded: ToJsonContext = {
  decodeEmbedded: (bytes) => decodeProtobufObject(bytes).object as ReturnType<ToJsonContext['decodeEmbedded']>,
};

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');

export class MediaTypeCodec implements StoredValueTransform {
  constructor(
    private readonly form: StorageForm,
    private readonly kindOf: StoredKindOfKey,
  ) {}

  toStored(key: string, json: Uint8Array): Uint8Array {
    if (this.form === 'json') return json;
    const kind = this.kindOf(key);
    if (!kind || (this.form === 'protobuf' && !kind.message)) return json;
    let encoded: Uint8Array;
    try {
      encoded = this.form === 'protobuf' ? encodeProtobuf(kind, json) : encodeYamlForm(kind, json);
      // only a value that reads back as these very bytes is stored in the media type
      if (Buffer.compare(decodeAs(kind, encoded), json) !== 0) return json;
    } catch {
      return json;
    }
    return encoded;
  }

  fromStored(key: string, stored: Uint8Array): Uint8Array {
    if (stored[0] === OPEN_BRACE) return stored;
    const kind = this.kindOf(key);
    if (!kind) return stored;
    try {
      return decodeAs(kind, stored);
    } catch (err) {
      const form = hasProtobufMagic(stored) ? 'protobuf' : 'YAML';
      throw new TransformError(key, `${key} is stored as ${form} that does not decode as ${kind.apiVersion}/${kind.kind}: ${(err as Error).message}`);
    }
  }
}

/** Our JSON stored form of a stored value of `kind` in any form. */
function decodeAs(kind: StoredKind, stored: Uint8Array): Uint8Array {
  if (stored[0] === OPEN_BRACE) return stored;
  return kind.storedJson(hasProtobufMagic(stored) ? decodeProtobuf(kind, stored) : decodeYamlForm(kind, stored));
}

function encodeProtobuf(kind: StoredKind, json: Uint8Array): Uint8Array {
  return envelopeProtobuf(kind.apiVersion, kind.kind, encodeJsonMessage(kind.message!, JSON.parse(text(json))));
}

function decodeProtobuf(kind: StoredKind, stored: Uint8Array): Record<string, unknown> {
  const envelope = messageType(`${RUNTIME}.Unknown`).decode(stored.subarray(PROTOBUF_MAGIC.length)) as unknown as { typeMeta?: { apiVersion?: string; kind?: string }; raw?: Uint8Array };
  checkTypeMeta(kind, envelope.typeMeta?.apiVersion, envelope.typeMeta?.kind);
  if (!kind.message) throw new Error(`${kind.kind} has no protobuf message`);
  const message = kind.message.decode(envelope.raw ?? new Uint8Array(0)) as unknown as Record<string, unknown>;
  const fields = messageToJson(kind.message, message, embedded) as Record<string, unknown>;
  return { kind: kind.kind, apiVersion: kind.apiVersion, ...fields };
}

function encodeYamlForm(kind: StoredKind, json: Uint8Array): Uint8Array {
  return Buffer.from(encodeYaml({ apiVersion: kind.apiVersion, kind: kind.kind, ...(JSON.parse(text(json)) as Record<string, unknown>) }));
}

function decodeYamlForm(kind: StoredKind, stored: Uint8Array): Record<string, unknown> {
  const obj = yamlLibrary().parse(text(stored), { version: '1.1' }) as unknown;
  if (!isPlainObject(obj)) throw new Error('the value is not an object');
  checkTypeMeta(kind, obj.apiVersion, obj.kind);
  return obj;
}

/** The stored TypeMeta must name the key's kind (in either spelling of its group). */
function checkTypeMeta(kind: StoredKind, apiVersion: unknown, k: unknown): void {
  const sameVersion = typeof apiVersion === 'string' && respellApiVersion(apiVersion, canonicalSpelling) === kind.apiVersion;
  if (k !== kind.kind || !sameVersion) throw new Error(`the stored object is ${JSON.stringify(`${String(apiVersion ?? '')}/${String(k ?? '')}`)}`);
}
