/**
 * Decoding a request body into a typed object of one resource type: the body's format from its
 * Content-Type (415 for a type not served), read by that format's serializer (400 in upstream's
 * wording), TypeMeta against the URL (400, upstream's "cannot be handled as" wording), structural
 * decode (type errors 422; unknown and duplicate fields per fieldValidation: dropped, warned, or 400
 * Strict).
 */
import { errors } from '../api/status.js';
import { goQuote } from '../api/validation.js';
import type { ApiObject } from '../api/types.js';
import { BodyDecodeError, type BodyFormats, bodyMediaTypes, bodySerializerFor, type DecodedBody } from '../codec/serializer.js';
import type { FieldValidation } from '../request/write-options.js';
import { decodeStructural } from '../schema/structural.js';
import { canonicalSpelling, respellApiVersion } from '../api/group-aliases.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

/** Types the catalog serves, as `apiVersion/kind` -> true; filled by the registry at start. */
export type KnownKinds = ReadonlySet<string>;

export interface DecodedObject {
  object: ApiObject;
  warnings: string[];
  /** The apiVersion as the body spelled it, if it did (authentication.k8s.io/v1 for a canonical svc.io kind). */
  sentApiVersion?: string;
}

export type RawBody = DecodedBody;

/** What decoding needs to know of the server: the kinds it serves and the body formats it reads. */
export interface DecodeContext {
  knownKinds: KnownKinds;
  bodyFormats: BodyFormats;
}

/** upstream's summary of a body in decode errors: up to 30 bytes, hex unless it looks like JSON. */
function summarizeData(body: Uint8Array): string {
  if (body.length === 0) return '<empty>';
  const b = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const head = b.subarray(0, 30);
  const text = b[0] === 0x7b ? head.toString('utf8') : head.toString('hex');
  return b.length > 30 ? `${text} ...` : text;
}

/** Reads a body in the format its Content-Type names (no Content-Type: JSON); 415 for a format not served. */
function readBody(body: Uint8Array, contentType: string, formats: BodyFormats): DecodedBody {
  const s = bodySerializerFor(contentType, formats);
  if (!s) {
    const semi = contentType.indexOf(';');
    throw errors.unsupportedMediaType((semi < 0 ? contentType : contentType.slice(0, semi)).trim(), bodyMediaTypes(formats));
  }
  return s.decodeBody(body);
}

/** Reads a body of any served format without a schema (DeleteOptions); 415 / 400 on failure. */
export function parseBody(body: Uint8Array, contentType: string, formats: BodyFormats): RawBody {
  try {
    return readBody(body, contentType, formats);
  } catch (e) {
    if (e instanceof BodyDecodeError) throw errors.badRequest(e.message);
    throw e;
  }
}

/**
 * metadata.name of a body that failed typing, for the Status: a scalar as text, anything else (an
 * object, which might hold its own `toString`) as no name.
 */
export function nameInBody(raw: unknown): string {
  const meta = (raw as { metadata?: unknown } | null)?.metadata;
  const name = meta !== null && typeof meta === 'object' ? (meta as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name : typeof name === 'number' || typeof name === 'boolean' ? String(name) : '';
}

const goTypeName = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v);

/**
 * Checks TypeMeta against the URL's resource: absent fields default from the URL; a different kind or
 * version is rejected as upstream's decoder rejects it.
 */
export function checkTypeMeta(raw: Record<string, unknown>, rt: ResourceType, known: KnownKinds): void {
  for (const f of ['apiVersion', 'kind'] as const) {
    if (raw[f] !== undefined && raw[f] !== null && typeof raw[f] !== 'string') {
      throw errors.badRequest(`couldn't get version/kind; json parse error: json: cannot unmarshal ${goTypeName(raw[f])} into Go struct field .${f} of type string`);
    }
  }
  // a body may spell the group as upstream does (storage.k8s.io/v1 for storage.svc.io/v1): the same kind
  // (only an alias of the type's own group: a custom group under k8s.io is its own group)
  const sent = (raw.apiVersion as string | undefined) || apiVersionOf(rt);
  const apiVersion = sent === apiVersionOf(rt) ? sent : respellApiVersion(sent, canonicalSpelling);
  const kind = (raw.kind as string | undefined) || rt.kind;
  if (apiVersion === apiVersionOf(rt) && kind === rt.kind) return;
  const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
  const internalGroup = rt.group ? rt.group.split('.')[0] : 'core';
  if (!known.has(`${apiVersion}/${kind}`)) {
    throw errors.badRequest(
      `${kind} in version ${JSON.stringify(version)} cannot be handled as a ${rt.kind}: no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)} in scheme "svc-apiserver"`,
    );
  }
  throw errors.badRequest(
    `${kind} in version ${JSON.stringify(version)} cannot be handled as a ${rt.kind}: converting (${version}.${kind}) to (${internalGroup}.${rt.kind}): unknown conversion`,
  );
}

/** Applies fieldValidation to unknown and duplicate fields; returns the warnings to send. */
export function applyFieldValidation(rt: ResourceType, unknown: readonly string[], duplicates: readonly string[], mode: FieldValidation): string[] {
  if (mode === 'Ignore' || (unknown.length === 0 && duplicates.length === 0)) return [];
  const problems = [...unknown.map((u) => `unknown field ${goQuote(u)}`), ...duplicates];
  if (mode === 'Strict') {
    throw errors.badRequest(`${rt.kind} in version ${JSON.stringify(rt.version)} cannot be handled as a ${rt.kind}: strict decoding error: ${problems.join(', ')}`);
  }
  return problems;
}

/** Turns a parsed body into a canonical typed object of `rt` (TypeMeta set). */
export function typedObjectFrom(parsed: RawBody, rt: ResourceType, known: KnownKinds, mode: FieldValidation): DecodedObject {
  const v = parsed.value;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw errors.badRequest(`couldn't get version/kind; json parse error: json: cannot unmarshal ${goTypeName(v)} into Go value of type struct { APIVersion string; Kind string }`);
  }
  const raw = v as Record<string, unknown>;
  checkTypeMeta(raw, rt, known);
  const res = decodeStructural<ApiObject>(raw, rt.schema);
  const warnings = applyFieldValidation(rt, res.unknownFields, parsed.duplicates, mode);
  if (res.errors.length) throw errors.invalid({ group: rt.group, kind: rt.kind }, nameInBody(raw), res.errors);
  const out: DecodedObject = { object: withTypeMetaFirst(res.value, rt), warnings };
  if (typeof raw.apiVersion === 'string' && raw.apiVersion) out.sentApiVersion = raw.apiVersion;
  return out;
}

/** The whole decode of an object body: read, then type against `rt`. */
export function decodeObjectBody(body: Uint8Array, contentType: string, rt: ResourceType, d: DecodeContext, mode: FieldValidation): DecodedObject {
  let raw: RawBody;
  try {
    raw = readBody(body, contentType, d.bodyFormats);
  } catch (e) {
    if (e instanceof BodyDecodeError && e.typeMeta) {
      // the body named its kind (or the URL's applies): upstream words the failure for that kind
      const apiVersion = e.typeMeta.apiVersion || apiVersionOf(rt);
      const kind = e.typeMeta.kind || rt.kind;
      throw errors.badRequest(`${kind} in version ${JSON.stringify(apiVersion.slice(apiVersion.indexOf('/') + 1))} cannot be handled as a ${rt.kind}: ${e.message}`);
    }
    if (e instanceof BodyDecodeError) throw errors.badRequest(`the object provided is unrecognized (must be of type ${rt.kind}): ${e.message} (${summarizeData(body)})`);
    throw e;
  }
  return typedObjectFrom(raw, rt, d.knownKinds, mode);
}

/** The object with kind and apiVersion set, as the first two keys (upstream's field order). */
export function withTypeMetaFirst(o: ApiObject, rt: ResourceType): ApiObject {
  const { kind: _k, apiVersion: _a, ...rest } = o;
  return { kind: rt.kind, apiVersion: apiVersionOf(rt), ...rest } as ApiObject;
}
