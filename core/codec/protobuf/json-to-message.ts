/**
 * A plain JSON object as the plain object protobufjs encodes for a message type: the reverse of
 * message-to-json. Only keys present in the JSON are written (absent means unset; null means unset
 * except for Time / MicroTime, where it is the zero time, an empty message); unknown keys such as
 * apiVersion and kind are ignored; map keys are sorted as Go sorts them. The path of a bad value is
 * worked out only when one is found.
 */
import { compareUtf8 } from '../../api/go-format.js';
import { ProtobufEncodeError } from './errors.js';
import { type FieldPlan, planOf } from './plans.js';
import { META_V1, QUANTITY, RUNTIME } from './proto-root.js';
import type protobuf from 'protobufjs';
import { microTimeFromJson, timeFromJson } from './wire-times.js';

type WireMessage = Record<string, unknown>;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const jsonBytes = (v: unknown): Uint8Array => Buffer.from(JSON.stringify(v), 'utf8');

/** A bad value somewhere below; the path is assembled on the way out. */
class BadValue extends Error {
  readonly at: string[] = [];
  constructor(readonly want: string) {
    super(want);
  }
}

/** A time conversion whose failure is a bad value here (its path is added on the way out). */
const timeField =
  (convert: (v: unknown, path: string) => WireMessage) =>
  (v: unknown): WireMessage => {
    try {
      return convert(v, '');
    } catch (e) {
      if (e instanceof ProtobufEncodeError) throw new BadValue(e.message.replace(/^: /, ''));
      throw e;
    }
  };

/** Message types whose JSON form is not an object of their fields. */
const specialFromJson: Readonly<Record<string, (v: unknown) => WireMessage>> = {
  [`${META_V1}.Time`]: timeField(timeFromJson),
  [`${META_V1}.MicroTime`]: timeField(microTimeFromJson),
  [`${META_V1}.FieldsV1`]: (v) => (v === null ? {} : { Raw: jsonBytes(v) }),
  [`${RUNTIME}.RawExtension`]: (v) => (v instanceof Uint8Array ? { raw: v } : v === null ? {} : { raw: jsonBytes(v) }),
  // a quantity is its text (a JSON number is read as upstream's Quantity reads one)
  [QUANTITY]: (v) => (v === null ? {} : typeof v === 'string' || typeof v === 'number' ? { string: String(v) } : fail('a quantity string', v)),
};

/** Message types written even for a JSON null (their null has a wire form). */
const nullHasWireForm = new Set([`${META_V1}.Time`, `${META_V1}.MicroTime`]);

const got = (v: unknown): string => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);
const fail = (want: string, v: unknown): never => {
  throw new BadValue(`expected ${want}, got ${got(v)}`);
};

function scalarFromJson(type: string, v: unknown): unknown {
  switch (type) {
    case 'string':
      return typeof v === 'string' ? v : fail('a string', v);
    case 'bool':
      return typeof v === 'boolean' ? v : fail('a boolean', v);
    case 'bytes':
      return typeof v === 'string' ? Buffer.from(v, 'base64') : fail('a base64 string', v);
    case 'double':
    case 'float':
      return typeof v === 'number' ? v : fail('a number', v);
    default:
      return typeof v === 'number' && Number.isInteger(v) ? v : fail('an integer', v);
  }
}

function valueFromJson(f: FieldPlan, v: unknown): unknown {
  if (f.message) return fromJson(f.message, v);
  if (f.enumType) return typeof v === 'string' ? f.enumType.values[v] : v;
  return scalarFromJson(f.scalar, v);
}

function fieldFromJson(f: FieldPlan, v: unknown): unknown {
  if (f.map) {
    const map = isPlainObject(v) ? v : fail('an object', v);
    const keys = Object.keys(map).sort(compareUtf8);
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      try {
        out[k] = valueFromJson(f, map[k]);
      } catch (e) {
        if (e instanceof BadValue) e.at.push(`[${k}]`);
        throw e;
      }
    }
    return out;
  }
  if (f.repeated) {
    const items: unknown[] = Array.isArray(v) ? v : fail('an array', v);
    const out = new Array<unknown>(items.length);
    for (let i = 0; i < items.length; i++) {
      try {
        out[i] = valueFromJson(f, items[i]);
      } catch (e) {
        if (e instanceof BadValue) e.at.push(`[${i}]`);
        throw e;
      }
    }
    return out;
  }
  return valueFromJson(f, v);
}

function fromJson(type: protobuf.Type, json: unknown): WireMessage {
  const plan = planOf(type);
  const special = specialFromJson[plan.name];
  if (special) return special(json);
  if (plan.stringList) {
    if (!Array.isArray(json)) return fail('an array of strings', json);
    return { items: json.map((v) => scalarFromJson('string', v)) };
  }
  if (!isPlainObject(json)) return fail('an object', json);
  const out: WireMessage = {};
  for (const f of plan.fields) {
    // an embedded struct reads its fields from this same object, and is always written (as Go does)
    if (f.inline) {
      out[f.name] = fromJson(f.message!, json);
      continue;
    }
    const v = json[f.key];
    if (v === undefined || !Object.hasOwn(json, f.key)) continue;
    if (v === null) {
      if (!f.map && !f.repeated && f.message && nullHasWireForm.has(planOf(f.message).name)) out[f.name] = {};
      continue;
    }
    try {
      out[f.name] = fieldFromJson(f, v);
    } catch (e) {
      if (e instanceof BadValue) e.at.push(`.${f.key}`);
      throw e;
    }
  }
  return out;
}

/** The protobufjs plain object for `type` from its JSON value; ProtobufEncodeError names the bad value's path. */
export function messageFromJson(type: protobuf.Type, json: unknown): WireMessage {
  try {
    return fromJson(type, json);
  } catch (e) {
    if (e instanceof BadValue) throw new ProtobufEncodeError(`${e.at.reverse().join('').replace(/^\./, '') || '<root>'}: ${e.want}`);
    if (e instanceof ProtobufEncodeError) throw e;
    throw e;
  }
}
