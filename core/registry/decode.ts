/**
 * Decoding a request body into a typed object of one resource type: media type (415), syntax (400),
 * TypeMeta against the URL (400, upstream's "cannot be handled as" wording), structural decode (type
 * errors 422; unknown and duplicate fields per fieldValidation: dropped, warned, or 400 Strict).
 */
import { errors } from '../api/status.js';
import { goQuote } from '../api/validation.js';
import type { ApiObject } from '../api/types.js';
import { decodeJson, JsonDepthError, JsonSyntaxError } from '../codec/json.js';
import { MAX_JSON_DEPTH } from '../codec/limits.js';
import { decodeProtobufObject, isProtobufMediaType, PROTOBUF_MEDIA_TYPE, ProtobufDecodeError } from '../codec/protobuf.js';
import { contentTypeOf, requestMediaTypes } from '../codec/media-types.js';
import { decodeYaml, yamlDepthError, yamlDuplicateKey } from '../codec/yaml.js';
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

export interface RawBody {
  value: unknown;
  /** Duplicate-field messages, already worded (`duplicate field "x"` / YAML line form). */
  duplicates: string[];
}

/** A body that is not JSON / YAML at all; the caller words the 400 for its context. */
export class BodySyntaxError extends Error {
  constructor(
    message: string,
    /** Set when the body named its kind before failing (protobuf envelopes). */
    readonly typeMeta?: { apiVersion: string; kind: string },
  ) {
    super(message);
  }
}

/** upstream's summary of a body in decode errors: up to 30 bytes, hex unless it looks like JSON. */
function summarizeData(body: Uint8Array): string {
  if (body.length === 0) return '<empty>';
  const b = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const head = b.subarray(0, 30);
  const text = b[0] === 0x7b ? head.toString('utf8') : head.toString('hex');
  return b.length > 30 ? `${text} ...` : text;
}

/** Parses JSON or YAML (per Content-Type) without any schema; 415 / 400 on failure. */
export function parseBody(body: Uint8Array, contentTypeHeader: string, accepted: readonly string[] = requestMediaTypes): RawBody {
  try {
    return parseBodyRaw(body, contentTypeHeader, accepted);
  } catch (e) {
    if (e instanceof BodySyntaxError) throw errors.badRequest(e.message);
    throw e;
  }
}

function parseBodyRaw(body: Uint8Array, contentTypeHeader: string, accepted: readonly string[]): RawBody {
  const given = contentTypeOf(contentTypeHeader) || 'application/json';
  const ct = isProtobufMediaType(given) ? PROTOBUF_MEDIA_TYPE : given;
  if (!accepted.includes(ct)) throw errors.unsupportedMediaType(given, accepted);
  if (ct === PROTOBUF_MEDIA_TYPE) {
    try {
      return { value: decodeProtobufObject(body).object, duplicates: [] };
    } catch (e) {
      if (e instanceof ProtobufDecodeError) throw new BodySyntaxError(e.message, e.typeMeta);
      throw e;
    }
  }
  try {
    return parseText(body, ct === 'application/yaml');
  } catch (e) {
    if (e instanceof JsonSyntaxError) {
      throw new BodySyntaxError(ct === 'application/yaml' ? e.message : `couldn't get version/kind; json parse error: ${e.message}`);
    }
    throw e;
  }
}

/** 1-based lines of ascending `offsets` in `text`, in one pass. */
function linesAt(text: string, offsets: readonly number[]): number[] {
  const out: number[] = [];
  let line = 1;
  let nl = text.indexOf('\n');
  for (const offset of offsets) {
    while (nl >= 0 && nl < offset) {
      line++;
      nl = text.indexOf('\n', nl + 1);
    }
    out.push(line);
  }
  return out;
}

/** Parses JSON or YAML text with duplicate keys reported; syntax errors are JsonSyntaxError (callers word them). */
export function parseText(body: Uint8Array, yaml: boolean): RawBody {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (yaml) {
    // JSON is YAML: a body that parses as JSON has the same value either way, and JSON parses far
    // faster (kubectl sends apply bodies as JSON), at any size. Anything else goes through YAML.
    if (/^\s*\{/.test(text)) {
      try {
        const j = decodeJson(text);
        // duplicates worded as the YAML decoder words them, with their lines
        const lines = linesAt(
          text,
          j.duplicateKeys.map((d) => d.offset),
        );
        return { value: j.value, duplicates: j.duplicateKeys.map((d, i) => yamlDuplicateKey(d.key, lines[i]!)) };
      } catch (e) {
        // JSON nested past the limit is past go-yaml's flow-level limit too (the same 10000)
        if (e instanceof JsonDepthError) throw yamlDepthError(linesAt(text, [e.offset])[0]!, MAX_JSON_DEPTH);
        if (!(e instanceof JsonSyntaxError)) throw e;
      }
    }
    const y = decodeYaml(text);
    return { value: y.value, duplicates: y.duplicates };
  }
  if (text.trim() === '') throw new JsonSyntaxError('unexpected end of JSON input');
  const j = decodeJson(text);
  return { value: j.value, duplicates: j.duplicates.map((d) => `duplicate field ${goQuote(d)}`) };
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
  const apiVersion = respellApiVersion((raw.apiVersion as string | undefined) || apiVersionOf(rt), canonicalSpelling);
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
  // Go's strconv.Quote: control characters escaped, printable Unicode kept
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

/** The whole decode of an object body: parse, then type against `rt`. */
export function decodeObjectBody(body: Uint8Array, contentType: string, rt: ResourceType, known: KnownKinds, mode: FieldValidation): DecodedObject {
  let raw: RawBody;
  try {
    raw = parseBodyRaw(body, contentType, requestMediaTypes);
  } catch (e) {
    if (e instanceof BodySyntaxError && e.typeMeta) {
      const { apiVersion, kind } = e.typeMeta;
      throw errors.badRequest(`${kind} in version ${JSON.stringify(apiVersion.slice(apiVersion.indexOf('/') + 1))} cannot be handled as a ${rt.kind}: ${e.message}`);
    }
    if (e instanceof BodySyntaxError) throw errors.badRequest(`the object provided is unrecognized (must be of type ${rt.kind}): ${e.message} (${summarizeData(body)})`);
    throw e;
  }
  return typedObjectFrom(raw, rt, known, mode);
}

/** The object with kind and apiVersion set, as the first two keys (upstream's field order). */
export function withTypeMetaFirst(o: ApiObject, rt: ResourceType): ApiObject {
  const { kind: _k, apiVersion: _a, ...rest } = o;
  return { kind: rt.kind, apiVersion: apiVersionOf(rt), ...rest } as ApiObject;
}
