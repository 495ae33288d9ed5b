/**
 * A plain JSON object as the plain object protobufjs encodes for a message type: the reverse of
 * message-to-json. Only keys present in the JSON are written (absent means unset; null means unset
 * except for Time / MicroTime, where it is the zero time, an empty message); unknown keys such as
 * apiVersion and kind are ignored; map keys are sorted as Go sorts them.
 */
import protobuf from 'protobufjs';
import { compareUtf8 } from '../../merge/go-format.js';
import { ProtobufEncodeError } from './errors.js';
import { META_V1, RUNTIME, isStringListWrapper, jsonKey, typeName } from './proto-root.js';
import { microTimeFromJson, timeFromJson } from './wire-times.js';

type WireMessage = Record<string, unknown>;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const jsonBytes = (v: unknown): Uint8Array => Buffer.from(JSON.stringify(v), 'utf8');

/** Message types whose JSON form is not an object of their fields. */
const specialFromJson: Readonly<Record<string, (v: unknown, path: string) => WireMessage>> = {
  [`${META_V1}.Time`]: (v, path) => timeFromJson(v, path),
  [`${META_V1}.MicroTime`]: (v, path) => microTimeFromJson(v, path),
  [`${META_V1}.FieldsV1`]: (v) => (v === null ? {} : { Raw: jsonBytes(v) }),
  [`${RUNTIME}.RawExtension`]: (v) => (v instanceof Uint8Array ? { raw: v } : v === null ? {} : { raw: jsonBytes(v) }),
};

/** Message types written even for a JSON null (their null has a wire form). */
const nullHasWireForm = new Set([`${META_V1}.Time`, `${META_V1}.MicroTime`]);

const fail = (path: string, want: string, v: unknown): never => {
  throw new ProtobufEncodeError(`${path}: expected ${want}, got ${Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v}`);
};

function scalarFromJson(type: string, v: unknown, path: string): unknown {
  switch (type) {
    case 'string':
      return typeof v === 'string' ? v : fail(path, 'a string', v);
    case 'bool':
      return typeof v === 'boolean' ? v : fail(path, 'a boolean', v);
    case 'bytes':
      return typeof v === 'string' ? Buffer.from(v, 'base64') : fail(path, 'a base64 string', v);
    case 'double':
    case 'float':
      return typeof v === 'number' ? v : fail(path, 'a number', v);
    default:
      return typeof v === 'number' && Number.isInteger(v) ? v : fail(path, 'an integer', v);
  }
}

function valueFromJson(field: protobuf.Field, v: unknown, path: string): unknown {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) return messageFromJson(rt, v, path);
  if (rt instanceof protobuf.Enum) return typeof v === 'string' ? rt.values[v] : v;
  return scalarFromJson(field.type, v, path);
}

/** The protobufjs plain object for `type` from its JSON value. */
export function messageFromJson(type: protobuf.Type, json: unknown, path = ''): WireMessage {
  const special = specialFromJson[typeName(type)];
  if (special) return special(json, path);
  if (isStringListWrapper(type)) {
    if (!Array.isArray(json)) return fail(path || '<root>', 'an array of strings', json);
    return { items: json.map((v, i) => scalarFromJson('string', v, `${path}[${i}]`)) };
  }
  if (!isPlainObject(json)) return fail(path || '<root>', 'an object', json);
  const out: WireMessage = {};
  for (const field of type.fieldsArray) {
    const key = jsonKey(field);
    if (!Object.hasOwn(json, key)) continue;
    const v = json[key];
    const at = path ? `${path}.${key}` : key;
    if (v === undefined) continue;
    if (v === null) {
      const rt = field.resolvedType;
      if (!field.map && !field.repeated && rt instanceof protobuf.Type && nullHasWireForm.has(typeName(rt))) out[field.name] = {};
      continue;
    }
    if (field.map) {
      const map = isPlainObject(v) ? v : fail(at, 'an object', v);
      const entries = Object.keys(map).sort(compareUtf8).map((k) => [k, valueFromJson(field, map[k], `${at}[${k}]`)] as const);
      out[field.name] = Object.fromEntries(entries);
    } else if (field.repeated) {
      const items: unknown[] = Array.isArray(v) ? v : fail(at, 'an array', v);
      out[field.name] = items.map((item, i) => valueFromJson(field, item, `${at}[${i}]`));
    } else {
      out[field.name] = valueFromJson(field, v, at);
    }
  }
  return out;
}
