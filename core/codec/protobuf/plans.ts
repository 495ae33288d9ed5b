/**
 * What the JSON <-> message conversions need to know of a message type, worked out once per type:
 * its name, whether it is a string-list wrapper, and each field's JSON key, kind and element type, in
 * field-number order (the order Go writes them). protobufjs computes a type's full name by walking its
 * parents on every access, far too slow to do per field per object.
 */
import protobuf from 'protobufjs';
import { isInlineField, isStringListWrapper, jsonKey, typeName } from './proto-root.js';

export interface FieldPlan {
  field: protobuf.Field;
  /** protobufjs's property name. */
  name: string;
  /** The Kubernetes JSON key. */
  key: string;
  /** An embedded struct: its fields are the enclosing JSON object's (the key is unused). */
  inline: boolean;
  map: boolean;
  repeated: boolean;
  /** The element type: a message, an enum, or a scalar type name. */
  message?: protobuf.Type;
  enumType?: protobuf.Enum;
  scalar: string;
}

export interface TypePlan {
  /** Fully-qualified name without the leading dot. */
  name: string;
  stringList: boolean;
  fields: FieldPlan[];
  /** Whether some field is inline (the JSON object's keys are then not all fields). */
  hasInline: boolean;
}

const plans = new WeakMap<protobuf.Type, TypePlan>();

export function planOf(type: protobuf.Type): TypePlan {
  let plan = plans.get(type);
  if (plan) return plan;
  const fields = [...type.fieldsArray].sort((a, b) => a.id - b.id).map((f): FieldPlan => {
    const rt = f.resolvedType;
    const p: FieldPlan = { field: f, name: f.name, key: jsonKey(f), inline: isInlineField(f), map: f.map, repeated: f.repeated, scalar: f.type };
    if (rt instanceof protobuf.Type) p.message = rt;
    else if (rt instanceof protobuf.Enum) p.enumType = rt;
    return p;
  });
  plan = { name: typeName(type), stringList: isStringListWrapper(type), fields, hasInline: fields.some((f) => f.inline) };
  plans.set(type, plan);
  return plan;
}
