/**
 * From an OpenAPI v3 schema (a custom resource definition's `openAPIV3Schema`, already checked to be
 * structural) to the structural Schema the registry uses for every kind, so decoding and pruning,
 * defaults, value validation, CEL rules, server-side apply markers and OpenAPI publication are the
 * same machinery for built-in and custom kinds.
 *
 * Custom resources are unstructured JSON, not Go structs: every node keeps explicit zero values
 * (`ptr`), objects are never filled in when absent, fields are written in key order, and nulls are
 * kept only where `nullable` says so (pruned elsewhere, then defaulted). Lists are atomic and objects
 * granular unless the schema's x-kubernetes-list-type / -map-type say otherwise (the spec's marker
 * table). The root always has apiVersion, kind and ObjectMeta metadata; the schema's own `metadata`
 * may only narrow name and generateName, which become constraints on it.
 */
import { objectMetaSchema } from './meta.js';
import { supportedFormat } from './formats.js';
import { type ListType, type MapType, s, type Schema, type StructSchema, type ValidationRule, type ValueConstraints } from './schema.js';

/** JSONSchemaProps as a definition carries it (the fields that matter here). */
export interface OpenApiV3Schema {
  description?: string;
  type?: string;
  format?: string;
  title?: string;
  default?: unknown;
  maximum?: number;
  exclusiveMaximum?: boolean;
  minimum?: number;
  exclusiveMinimum?: boolean;
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  maxItems?: number;
  minItems?: number;
  uniqueItems?: boolean;
  multipleOf?: number;
  enum?: unknown[];
  maxProperties?: number;
  minProperties?: number;
  required?: string[];
  items?: OpenApiV3Schema | OpenApiV3Schema[];
  allOf?: OpenApiV3Schema[];
  oneOf?: OpenApiV3Schema[];
  anyOf?: OpenApiV3Schema[];
  not?: OpenApiV3Schema;
  properties?: Record<string, OpenApiV3Schema>;
  additionalProperties?: OpenApiV3Schema | boolean;
  nullable?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-map-type'?: string;
  'x-kubernetes-validations'?: ValidationRule[];
  [other: string]: unknown;
}

export interface ConvertOptions {
  /** OpenAPI definition name of the root (e.g. `io.svc.example.v1.Widget`); nested objects are named below it. */
  name: string;
  /** Description of the kind, when the schema has none. */
  typeDescription?: string;
}

const TYPE_META: Record<string, string> = {
  apiVersion: 'APIVersion defines the versioned schema of this representation of an object.',
  kind: 'Kind is a string value representing the REST resource this object represents.',
};

/** The whole object's schema: TypeMeta, ObjectMeta (narrowed as the schema says), then the schema's fields. */
export function customResourceSchema(root: OpenApiV3Schema | undefined, o: ConvertOptions): StructSchema {
  const schema = root ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  const node = convert(schema, o.name) as StructSchema;
  const fields: Record<string, Schema> = {
    apiVersion: s.string({ ptr: true, description: schema.properties?.apiVersion?.description ?? TYPE_META.apiVersion }),
    kind: s.string({ ptr: true, description: schema.properties?.kind?.description ?? TYPE_META.kind }),
    metadata: rootMetadata(schema.properties?.metadata),
  };
  for (const [k, v] of Object.entries(node.kind === 'struct' ? node.fields : {})) if (!(k in fields)) fields[k] = v;
  const out: StructSchema = { ...node, kind: 'struct', name: o.name, fields };
  delete out.ptr;
  delete out.inline;
  if (!out.description && o.typeDescription) out.typeDescription = o.typeDescription;
  else if (out.description) {
    out.typeDescription = out.description;
    delete out.description;
  }
  return out;
}

/** Root metadata: always ObjectMeta; the schema may only add value checks on name and generateName. */
function rootMetadata(m: OpenApiV3Schema | undefined): Schema {
  const meta = s.field(objectMetaSchema, { description: m?.description ?? 'Standard object metadata.' });
  const props: Record<string, ValueConstraints> = {};
  for (const f of ['name', 'generateName'] as const) {
    const p = m?.properties?.[f];
    const c = p && constraintsOf(p);
    if (c) props[f] = c;
  }
  if (Object.keys(props).length) meta.constraints = { properties: props };
  return meta;
}

const sortedEntries = <T>(o: Record<string, T>): [string, T][] => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** One node, with its common parts: description, nullable, default, constraints, rules. */
export function convert(n: OpenApiV3Schema, name: string): Schema {
  const node = shape(n, name);
  node.ptr = true;
  if (n.description) node.description = n.description;
  if (n.nullable) node.nullable = true;
  if (n.default !== undefined) node.default = n.default;
  const c = constraintsOf(n);
  if (c) node.constraints = c;
  if (n['x-kubernetes-validations']?.length) node.rules = n['x-kubernetes-validations'].map(ruleOf);
  return node;
}

function ruleOf(r: ValidationRule): ValidationRule {
  const out: ValidationRule = { rule: r.rule };
  if (r.message) out.message = r.message;
  if (r.messageExpression) out.messageExpression = r.messageExpression;
  if (r.reason) out.reason = r.reason;
  if (r.fieldPath) out.fieldPath = r.fieldPath;
  if (r.optionalOldSelf) out.optionalOldSelf = true;
  return out;
}

/** The node's type: scalar, list, map, struct or untyped. */
function shape(n: OpenApiV3Schema, name: string): Schema {
  if (n['x-kubernetes-int-or-string']) return s.intOrString();
  switch (n.type) {
    case 'string':
      return s.string();
    case 'integer':
      return { kind: 'scalar', type: 'integer' };
    case 'number':
      return { kind: 'scalar', type: 'number' };
    case 'boolean':
      return s.boolean();
    case 'array': {
      const items = Array.isArray(n.items) ? n.items[0] : n.items;
      const o: { listType?: ListType; listMapKeys?: readonly string[] } = {};
      const lt = n['x-kubernetes-list-type'];
      if (lt === 'atomic' || lt === 'set' || lt === 'map') o.listType = lt;
      if (n['x-kubernetes-list-map-keys']?.length) o.listMapKeys = [...n['x-kubernetes-list-map-keys']];
      return s.list(items ? convert(items, name) : s.untyped({ ptr: true }), o);
    }
    case 'object':
      return objectShape(n, name);
    default:
      // no type: only x-kubernetes-preserve-unknown-fields (any JSON) is structural here
      return s.untyped();
  }
}

function objectShape(n: OpenApiV3Schema, name: string): Schema {
  const mapType = n['x-kubernetes-map-type'] === 'atomic' || n['x-kubernetes-map-type'] === 'granular' ? (n['x-kubernetes-map-type'] as MapType) : undefined;
  const ap = n.additionalProperties;
  if (ap && typeof ap === 'object' && !n.properties) {
    const m = s.map(convert(ap, `${name}.additionalProperties`));
    if (mapType) m.mapType = mapType;
    if (n.required?.length) m.constraints = { ...m.constraints, required: [...n.required] };
    return m;
  }
  const fields: Record<string, Schema> = {};
  if (n['x-kubernetes-embedded-resource']) {
    fields.apiVersion = s.string({ ptr: true, description: TYPE_META.apiVersion });
    fields.kind = s.string({ ptr: true, description: TYPE_META.kind });
    fields.metadata = s.field(objectMetaSchema, { ptr: true, description: 'Standard object metadata.' });
  }
  for (const [k, v] of sortedEntries(n.properties ?? {})) {
    if (n['x-kubernetes-embedded-resource'] && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue;
    fields[k] = convert(v, `${name}.${k}`);
  }
  const st = s.struct(name, fields);
  if (n.required?.length) st.required = [...n.required];
  if (mapType) st.mapType = mapType;
  if (n['x-kubernetes-preserve-unknown-fields'] || ap === true) st.preserveUnknownFields = true;
  if (n['x-kubernetes-embedded-resource']) st.embeddedResource = true;
  st.inline = true;
  return st;
}

/** The value validations of a node (and, inside combinations, of its children); undefined when none. */
export function constraintsOf(n: OpenApiV3Schema): ValueConstraints | undefined {
  const c: { -readonly [K in keyof ValueConstraints]: ValueConstraints[K] } = {};
  if (n.format && supportedFormat(n.format)) c.format = n.format;
  if (n.enum?.length) c.enum = [...n.enum];
  if (n.pattern) c.pattern = n.pattern;
  for (const k of ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minimum', 'maximum', 'multipleOf'] as const) {
    if (typeof n[k] === 'number') c[k] = n[k];
  }
  if (n.exclusiveMinimum) c.exclusiveMinimum = true;
  if (n.exclusiveMaximum) c.exclusiveMaximum = true;
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) if (n[k]?.length) c[k] = n[k].map((x) => nestedConstraints(x));
  if (n.not) c.not = nestedConstraints(n.not);
  return Object.keys(c).length ? c : undefined;
}

/** A schema inside allOf / anyOf / oneOf / not: value checks only, on the node and its children. */
function nestedConstraints(n: OpenApiV3Schema): ValueConstraints {
  const c: { -readonly [K in keyof ValueConstraints]: ValueConstraints[K] } = { ...constraintsOf(n) };
  if (n.required?.length) c.required = [...n.required];
  if (n.properties) c.properties = Object.fromEntries(Object.entries(n.properties).map(([k, v]) => [k, nestedConstraints(v)]));
  const items = Array.isArray(n.items) ? n.items[0] : n.items;
  if (items) c.items = nestedConstraints(items);
  if (n.additionalProperties && typeof n.additionalProperties === 'object') c.additionalProperties = nestedConstraints(n.additionalProperties);
  return c;
}
