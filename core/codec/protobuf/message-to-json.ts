/**
 * A decoded protobufjs message as the plain JSON value upstream's JSON serializer would write: fields
 * under their JSON names, absent optional fields left out, present ones kept even when zero, int64 as
 * numbers, bytes as base64, maps as objects, and the special meta types (Time, MicroTime, FieldsV1,
 * RawExtension) in their JSON forms.
 */
import type protobuf from 'protobufjs';
import { ProtobufDecodeError } from './errors.js';
import { type FieldPlan, planOf } from './plans.js';
import { META_V1, QUANTITY, RUNTIME, hasProtobufMagic } from './proto-root.js';
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
  // an empty message is the zero quantity
  [QUANTITY]: (m) => (typeof m.string === 'string' && m.string ? m.string : '0'),
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

function valueToJson(f: FieldPlan, v: unknown, ctx: ToJsonContext): JsonValue {
  if (f.message) return messageToJson(f.message, v as WireMessage, ctx);
  if (f.enumType) return f.enumType.valuesById[v as number] ?? (v as number);
  return scalarToJson(f.scalar, v);
}

/** Zero values of scalar protobuf types, as Go decodes a map entry that carries no value. */
const scalarZero: Readonly<Record<string, unknown>> = { string: '', bool: false, bytes: new Uint8Array(0) };

/** A map entry's value; an entry written without one is its type's zero value (empty bytes, "", 0, {}), as upstream decodes it. */
function mapValueToJson(f: FieldPlan, v: unknown, ctx: ToJsonContext): JsonValue {
  if (v !== undefined && v !== null) return valueToJson(f, v, ctx);
  if (f.message) return messageToJson(f.message, {}, ctx);
  if (f.enumType) return valueToJson(f, 0, ctx);
  return scalarToJson(f.scalar, f.scalar in scalarZero ? scalarZero[f.scalar] : 0);
}

/** The JSON value of one decoded message of `type`. */
export function messageToJson(type: protobuf.Type, msg: WireMessage, ctx: ToJsonContext): JsonValue {
  const plan = planOf(type);
  const special = specialToJson[plan.name];
  if (special) return special(msg, ctx);
  if (plan.stringList) return ((msg.items as string[] | undefined) ?? []).slice();
  const out: JsonObject = {};
  for (const f of plan.fields) {
    const v = msg[f.name];
    if (v === null || v === undefined || !Object.hasOwn(msg, f.name)) continue;
    if (f.inline) {
      const inner = messageToJson(f.message!, v as WireMessage, ctx);
      if (inner && typeof inner === 'object' && !Array.isArray(inner)) Object.assign(out, inner);
    } else if (f.map) {
      const keys = Object.keys(v as object);
      if (keys.length === 0) continue;
      const m: JsonObject = {};
      for (const k of keys) {
        const x = mapValueToJson(f, (v as WireMessage)[k], ctx);
        // a key named __proto__ is a plain key, as in JSON.parse, not the object's prototype
        if (k === '__proto__') Object.defineProperty(m, k, { value: x, enumerable: true, writable: true, configurable: true });
        else m[k] = x;
      }
      out[f.key] = m;
    } else if (f.repeated) {
      const items = v as unknown[];
      if (items.length === 0) continue;
      out[f.key] = items.map((item) => valueToJson(f, item, ctx));
    } else {
      out[f.key] = valueToJson(f, v, ctx);
    }
  }
  return out;
}
