/**
 * A decoded protobufjs message as the plain JSON value upstream's JSON serializer would write: fields
 * under their JSON names, absent optional fields left out, present ones kept even when zero, int64 as
 * numbers, bytes as base64, maps as objects, and the special meta types (Time, MicroTime, FieldsV1,
 * RawExtension) in their JSON forms.
 */
import protobuf from 'protobufjs';
import { ProtobufDecodeError } from './errors.js';
import { META_V1, RUNTIME, hasProtobufMagic, isStringListWrapper, jsonKey, typeName } from './proto-root.js';
import { microTimeToJson, timeToJson, type WireTimestamp } from './wire-times.js';

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
type JsonObject = { [key: string]: JsonValue };
type WireMessage = Record<string, unknown>;

export interface ToJsonContext {
  /** Turns a protobuf object embedded in a RawExtension (magic prefix) into JSON. */
  decodeEmbedded(bytes: Uint8Array): JsonObject;
}

/** The number an int64 decodes to: protobufjs gives a Long {low, high, unsigned} or a number. */
export function wireIntegerToNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'object' && v !== null && 'low' in v && 'high' in v) {
    const { low, high, unsigned } = v as { low: number; high: number; unsigned?: boolean };
    return (unsigned ? high >>> 0 : high) * 2 ** 32 + (low >>> 0);
  }
  return Number(v);
}

const base64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
const utf8 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');

function parseRawJson(bytes: Uint8Array, what: string): JsonValue {
  if (bytes.length === 0) return null;
  try {
    return JSON.parse(utf8(bytes)) as JsonValue;
  } catch (e) {
    throw new ProtobufDecodeError(`${what} does not hold valid JSON: ${(e as Error).message}`);
  }
}

function timestampOf(m: WireMessage): WireTimestamp | undefined {
  if (!Object.hasOwn(m, 'seconds') && !Object.hasOwn(m, 'nanos')) return undefined;
  return { seconds: wireIntegerToNumber(m.seconds ?? 0), nanos: wireIntegerToNumber(m.nanos ?? 0) };
}

/** Message types whose JSON form is not an object of their fields. */
const specialToJson: Readonly<Record<string, (m: WireMessage, ctx: ToJsonContext) => JsonValue>> = {
  [`${META_V1}.Time`]: (m) => timeToJson(timestampOf(m)),
  [`${META_V1}.MicroTime`]: (m) => microTimeToJson(timestampOf(m)),
  [`${META_V1}.FieldsV1`]: (m) => (Object.hasOwn(m, 'Raw') ? parseRawJson(m.Raw as Uint8Array, 'fieldsV1') : null),
  [`${RUNTIME}.RawExtension`]: (m, ctx) => {
    const raw = Object.hasOwn(m, 'raw') ? (m.raw as Uint8Array) : new Uint8Array(0);
    return hasProtobufMagic(raw) ? ctx.decodeEmbedded(raw) : parseRawJson(raw, 'raw extension');
  },
};

function scalarToJson(type: string, v: unknown): JsonValue {
  switch (type) {
    case 'string':
    case 'bool':
      return v as string | boolean;
    case 'bytes':
      // protobufjs fills a map entry's missing bytes value with a plain empty array
      return base64(v instanceof Uint8Array ? v : Uint8Array.from((v as ArrayLike<number> | undefined) ?? []));
    case 'int64':
    case 'uint64':
    case 'sint64':
    case 'fixed64':
    case 'sfixed64':
      return wireIntegerToNumber(v);
    default:
      return v as number;
  }
}

function valueToJson(field: protobuf.Field, v: unknown, ctx: ToJsonContext): JsonValue {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) return messageToJson(rt, v as WireMessage, ctx);
  if (rt instanceof protobuf.Enum) return rt.valuesById[v as number] ?? (v as number);
  return scalarToJson(field.type, v);
}

/** Zero values of scalar protobuf types, as Go decodes a map entry that carries no value. */
const scalarZero: Readonly<Record<string, unknown>> = { string: '', bool: false, bytes: new Uint8Array(0) };

/** A map entry's value; an entry written without one is its type's zero value (empty bytes, "", 0, {}), as upstream decodes it. */
function mapValueToJson(field: protobuf.Field, v: unknown, ctx: ToJsonContext): JsonValue {
  if (v !== undefined && v !== null) return valueToJson(field, v, ctx);
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) return messageToJson(rt, {}, ctx);
  if (rt instanceof protobuf.Enum) return valueToJson(field, 0, ctx);
  return scalarToJson(field.type, field.type in scalarZero ? scalarZero[field.type] : 0);
}

const byNumber = new WeakMap<protobuf.Type, protobuf.Field[]>();

/** A type's fields in field-number order (the order Go writes them), sorted once per type. */
function fieldsByNumber(type: protobuf.Type): protobuf.Field[] {
  let fields = byNumber.get(type);
  if (!fields) byNumber.set(type, (fields = [...type.fieldsArray].sort((a, b) => a.id - b.id)));
  return fields;
}

/** The JSON value of one decoded message of `type`. */
export function messageToJson(type: protobuf.Type, msg: WireMessage, ctx: ToJsonContext): JsonValue {
  const special = specialToJson[typeName(type)];
  if (special) return special(msg, ctx);
  if (isStringListWrapper(type)) return ((msg.items as string[] | undefined) ?? []).slice();
  const out: JsonObject = {};
  for (const field of fieldsByNumber(type)) {
    if (!Object.hasOwn(msg, field.name)) continue;
    const v = msg[field.name];
    if (v === null || v === undefined) continue;
    if (field.map) {
      const keys = Object.keys(v as object);
      if (keys.length === 0) continue;
      out[jsonKey(field)] = Object.fromEntries(keys.map((k) => [k, mapValueToJson(field, (v as WireMessage)[k], ctx)]));
    } else if (field.repeated) {
      const items = v as unknown[];
      if (items.length === 0) continue;
      out[jsonKey(field)] = items.map((item) => valueToJson(field, item, ctx));
    } else {
      out[jsonKey(field)] = valueToJson(field, v, ctx);
    }
  }
  return out;
}
