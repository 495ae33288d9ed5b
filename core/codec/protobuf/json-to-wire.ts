/**
 * A JSON value straight to a message's wire bytes, in one pass (core/codec/protobuf/wire-writer.ts):
 * the same bytes as messageFromJson followed by protobufjs's generated encoder for the type (fields in
 * number order, present fields written even when zero, empty lists and maps left out, map entries in
 * Go's key order, repeated scalars unpacked as proto2 writes them), without building the intermediate
 * message objects. Each type's field writers are compiled once from its protobufjs reflection. Values
 * that do not fit fall back to messageFromJson + the generated encoder, which names the bad value's path.
 */
import protobuf from 'protobufjs';
import { WireWriter } from './wire-writer.js';
import { goKeyOrder } from '../../api/go-format.js';
import { messageFromJson } from './json-to-message.js';
import { type FieldPlan, planOf } from './plans.js';
import { META_V1, QUANTITY, RUNTIME } from './proto-root.js';
import { microTimeFromJson, timeFromJson } from './wire-times.js';

type Writer = WireWriter;
/** Writes one present, non-null value with its tag; false when the value does not fit the field. */
type ValueWriter = (v: unknown, w: Writer) => boolean;
type MessageWriter = (json: unknown, w: Writer) => boolean;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const tagOf = (id: number, wireType: number): number => ((id << 3) | wireType) >>> 0;

/** A scalar writer for protobufjs scalar `type` under `tag`. */
function scalarWriter(type: string, tag: number): ValueWriter {
  switch (type) {
    case 'string':
      return (v, w) => typeof v === 'string' && (w.uint32(tag).string(v), true);
    case 'bool':
      return (v, w) => typeof v === 'boolean' && (w.uint32(tag).bool(v), true);
    case 'bytes':
      return (v, w) => typeof v === 'string' && (w.uint32(tag).bytes(Buffer.from(v, 'base64')), true);
    case 'double':
      return (v, w) => typeof v === 'number' && (w.uint32(tag).double(v), true);
    case 'float':
      return (v, w) => typeof v === 'number' && (w.uint32(tag).float(v), true);
    default: {
      const method = type as 'int32' | 'uint32' | 'sint32' | 'fixed32' | 'sfixed32' | 'int64' | 'uint64' | 'sint64' | 'fixed64' | 'sfixed64';
      return (v, w) => isInteger(v) && (w.uint32(tag)[method](v), true);
    }
  }
}

/** The element writer of a field: a message (length-delimited), an enum or a scalar. */
function elementWriter(f: FieldPlan, id: number): ValueWriter {
  if (f.message) {
    const write = compiled(f.message);
    const tag = tagOf(id, 2);
    return (v, w) => {
      const start = w.uint32(tag).begin();
      const ok = write(v, w);
      w.end(start);
      return ok;
    };
  }
  if (f.enumType) {
    const values = f.enumType.values;
    const tag = tagOf(id, 0);
    return (v, w) => {
      const n = typeof v === 'string' ? values[v] : v;
      return isInteger(n) && (w.uint32(tag).int32(n), true);
    };
  }
  return scalarWriter(f.scalar, tagOf(id, protobuf.types.basic[f.scalar as keyof typeof protobuf.types.basic] ?? 2));
}

function fieldWriter(f: FieldPlan): ValueWriter {
  if (f.map) {
    if ((f.field as unknown as protobuf.MapField).keyType !== 'string') throw new Error(`json-to-wire: map keys of type ${(f.field as unknown as protobuf.MapField).keyType} are not supported`);
    const entryTag = tagOf(f.field.id, 2);
    const value = elementWriter(f, 2);
    return (v, w) => {
      if (!isPlainObject(v)) return false;
      const keys = goKeyOrder(Object.keys(v));
      for (const k of keys) {
        const start = w.uint32(entryTag).begin();
        const ok = value(v[k], w.uint32(10).string(k));
        w.end(start);
        if (!ok) return false;
      }
      return true;
    };
  }
  const element = elementWriter(f, f.field.id);
  if (f.repeated) {
    return (v, w) => {
      if (!Array.isArray(v)) return false;
      for (const item of v) if (!element(item, w)) return false;
      return true;
    };
  }
  return element;
}

/** Writers of the message types whose JSON form is not an object of their fields. */
function specialWriter(name: string): MessageWriter | undefined {
  switch (name) {
    case `${META_V1}.Time`:
    case `${META_V1}.MicroTime`: {
      const convert = name === `${META_V1}.Time` ? timeFromJson : microTimeFromJson;
      return (v, w) => {
        let t: { seconds?: number; nanos?: number };
        try {
          t = convert(v, '');
        } catch {
          return false;
        }
        if (t.seconds !== undefined) w.uint32(8).int64(t.seconds);
        if (t.nanos !== undefined) w.uint32(16).int32(t.nanos);
        return true;
      };
    }
    case `${META_V1}.FieldsV1`:
      // the bytes field holds the JSON text, written into the message as JSON.stringify would make it
      return (v, w) => {
        if (v === null) return true;
        const start = w.uint32(10).begin();
        w.json(v);
        w.end(start);
        return true;
      };
    case QUANTITY:
      return (v, w) => {
        if (typeof v !== 'string' && typeof v !== 'number') return false;
        w.uint32(10).string(String(v));
        return true;
      };
    case `${RUNTIME}.RawExtension`:
      return (v, w) => (v !== null && (v instanceof Uint8Array ? w.uint32(10).bytes(v) : w.uint32(10).string(JSON.stringify(v))), true);
    default:
      return undefined;
  }
}

/** Message types written even for a JSON null (their null has a wire form: the zero time). */
const nullHasWireForm = new Set([`${META_V1}.Time`, `${META_V1}.MicroTime`]);

interface FieldWriter {
  key: string;
  /** An embedded struct: written from the enclosing JSON object itself, always (as Go does). */
  inline: boolean;
  id: number;
  write: ValueWriter;
  /** The tag written for a JSON null, when null has a wire form (times); undefined: null is left out. */
  nullTag: number | undefined;
}

function writeField(f: FieldWriter, v: unknown, w: Writer): boolean {
  if (v === undefined) return true;
  if (v === null) {
    if (f.nullTag !== undefined) w.uint32(f.nullTag).uint32(0);
    return true;
  }
  return f.write(v, w);
}

const writers = new WeakMap<protobuf.Type, MessageWriter>();

/** The compiled writer of a message type's JSON form (its fields only, no tag or length). */
function compiled(type: protobuf.Type): MessageWriter {
  let write = writers.get(type);
  if (write) return write;
  const plan = planOf(type);
  const special = specialWriter(plan.name);
  if (special) write = special;
  else if (plan.stringList) {
    write = (v, w) => {
      if (!Array.isArray(v)) return false;
      for (const s of v) {
        if (typeof s !== 'string') return false;
        w.uint32(10).string(s);
      }
      return true;
    };
  } else {
    // placeholder first: message types may refer to themselves
    const fields: FieldWriter[] = [];
    const byKey = new Map<string, FieldWriter>();
    const inPlanOrder: MessageWriter = (json, w) => {
      const o = json as Record<string, unknown>;
      for (const f of fields) {
        if (f.inline) {
          if (!f.write(o, w)) return false;
          continue;
        }
        const v = o[f.key];
        if (v === undefined || !Object.hasOwn(o, f.key)) continue;
        if (!writeField(f, v, w)) return false;
      }
      return true;
    };
    write = (json, w) => {
      if (!isPlainObject(json)) return false;
      // with an embedded struct, the object's keys are not the message's fields: walk the fields
      if (plan.hasInline) return inPlanOrder(json, w);
      // Objects as stored list their fields in Go's declaration order, which is (almost always) field
      // number order: walking the object's own keys is much cheaper than probing it field by field.
      // Keys out of number order start the message again in number order.
      const start = w.position;
      let last = 0;
      for (const k in json) {
        const f = byKey.get(k);
        if (f === undefined) continue;
        if (f.id < last) {
          w.rewind(start);
          return inPlanOrder(json, w);
        }
        last = f.id;
        if (!writeField(f, json[k], w)) return false;
      }
      return true;
    };
    writers.set(type, write);
    for (const f of plan.fields) {
      const nullTag = !f.map && !f.repeated && f.message && nullHasWireForm.has(planOf(f.message).name) ? tagOf(f.field.id, 2) : undefined;
      const fw: FieldWriter = { key: f.key, inline: f.inline, id: f.field.id, write: fieldWriter(f), nullTag };
      fields.push(fw);
      byKey.set(f.key, fw);
    }
  }
  writers.set(type, write);
  return write;
}

/**
 * `json` as field `field` of an enclosing message (tag, length, the message's bytes), written in one
 * pass: what a list item is, without a copy of the message into its field.
 */
export function encodeJsonMessageField(type: protobuf.Type, json: unknown, field: number): Uint8Array {
  const w = new WireWriter();
  const start = w.uint32(tagOf(field, 2)).begin();
  if (compiled(type)(json, w)) return w.end(start).finish();
  return new WireWriter().uint32(tagOf(field, 2)).bytes(type.encode(messageFromJson(type, json)).finish()).finish();
}

/** The wire bytes of `json` as a message of `type`; throws ProtobufEncodeError (with the path) when it does not fit. */
export function encodeJsonMessage(type: protobuf.Type, json: unknown): Uint8Array {
  const w = new WireWriter();
  if (compiled(type)(json, w)) return w.finish();
  // something does not fit: the slower converter says where, in its words
  return type.encode(messageFromJson(type, json)).finish();
}
