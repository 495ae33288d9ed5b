/**
 * A Swagger 2.0 document (JSON form) as gnostic's openapi.v2.Document protobuf
 * (proto/openapi/openapiv2.proto), the form kubectl asks /openapi/v2 for. The mapping follows gnostic's
 * reader: maps become ordered (name, value) lists in the document's key order, `x-` keys vendor
 * extensions, free-form values (defaults, enums, examples, extensions) Any messages holding YAML
 * (written as JSON, which YAML readers take),
 * a parameter a body or a header/formData/query/path parameter by its `in`, a `$ref` a JSON reference.
 */
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { findProtoDir } from '../codec/protobuf/proto-root.js';

type Json = Record<string, unknown>;
type Msg = Record<string, unknown>;

let documentType: protobuf.Type | undefined;

/** openapi.v2.Document, loaded on first use (most servers are never asked for it). */
export function swaggerDocumentType(): protobuf.Type {
  if (!documentType) {
    const root = new protobuf.Root().loadSync(join(findProtoDir(), 'openapi', 'openapiv2.proto'), { keepCase: true });
    root.resolveAll();
    documentType = root.lookupType('openapi.v2.Document');
  }
  return documentType;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
// JSON is YAML (flow style): what gnostic's readers (kubectl's yaml.Unmarshal) take, and far cheaper to write than block style
const any = (v: unknown): Msg => ({ yaml: `${JSON.stringify(v)}\n` });
const named = <T>(o: unknown, value: (v: unknown) => T): { name: string; value: T }[] => (isObject(o) ? Object.entries(o).map(([name, v]) => ({ name, value: value(v) })) : []);
const extensions = (o: Json): Msg[] => Object.entries(o).filter(([k]) => k.startsWith('x-')).map(([name, v]) => ({ name, value: any(v) }));

/** Copies the listed JSON keys to their proto names (camelCase -> snake_case), `wrap` applied to each. */
function copy(o: Json, out: Msg, keys: readonly string[], wrap: (k: string, v: unknown) => unknown = (_, v) => v): Msg {
  for (const k of keys) {
    if (o[k] === undefined) continue;
    out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = wrap(k, o[k]);
  }
  return out;
}

/** Keys whose values are free-form (Any) in gnostic's messages. */
const freeForm = (k: string, v: unknown): unknown => (k === 'default' || k === 'example' ? any(v) : k === 'enum' ? (v as unknown[]).map(any) : v);

const VALIDATIONS = ['maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'enum', 'multipleOf'];

function primitivesItems(o: Json): Msg {
  const out = copy(o, {}, ['type', 'format', 'collectionFormat', 'default', ...VALIDATIONS], freeForm);
  if (isObject(o.items)) out.items = primitivesItems(o.items);
  out.vendor_extension = extensions(o);
  return out;
}

export function schemaMessage(o: Json): Msg {
  const out: Msg = {};
  if (typeof o.$ref === 'string') out._ref = o.$ref;
  copy(o, out, ['format', 'title', 'description', 'default', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxProperties', 'minProperties', 'required', 'enum', 'discriminator', 'readOnly', 'example'], freeForm);
  if (typeof o.additionalProperties === 'boolean') out.additional_properties = { boolean: o.additionalProperties };
  else if (isObject(o.additionalProperties)) out.additional_properties = { schema: schemaMessage(o.additionalProperties) };
  if (o.type !== undefined) out.type = { value: Array.isArray(o.type) ? o.type : [o.type] };
  if (o.items !== undefined) out.items = { schema: (Array.isArray(o.items) ? o.items : [o.items]).map((i) => schemaMessage(i as Json)) };
  if (Array.isArray(o.allOf)) out.all_of = o.allOf.map((s) => schemaMessage(s as Json));
  if (isObject(o.properties)) out.properties = { additional_properties: named(o.properties, (s) => schemaMessage(s as Json)) };
  if (isObject(o.externalDocs)) out.external_docs = copy(o.externalDocs, { vendor_extension: extensions(o.externalDocs) }, ['description', 'url']);
  out.vendor_extension = extensions(o);
  return out;
}

const SUB_SCHEMA: Record<string, string> = { header: 'header_parameter_sub_schema', formData: 'form_data_parameter_sub_schema', query: 'query_parameter_sub_schema', path: 'path_parameter_sub_schema' };

function parameterMessage(p: Json): Msg {
  if (p.in === 'body') {
    const body = copy(p, {}, ['description', 'name', 'in', 'required']);
    if (isObject(p.schema)) body.schema = schemaMessage(p.schema);
    body.vendor_extension = extensions(p);
    return { body_parameter: body };
  }
  const keys = ['required', 'in', 'description', 'name', ...(p.in === 'query' || p.in === 'formData' ? ['allowEmptyValue'] : []), 'type', 'format', 'collectionFormat', 'default', ...VALIDATIONS];
  const sub = copy(p, {}, keys, freeForm);
  if (isObject(p.items)) sub.items = primitivesItems(p.items);
  sub.vendor_extension = extensions(p);
  return { non_body_parameter: { [SUB_SCHEMA[String(p.in)] ?? 'query_parameter_sub_schema']: sub } };
}

const parametersItem = (p: Json): Msg => (typeof p.$ref === 'string' ? { json_reference: { _ref: p.$ref, ...(p.description ? { description: p.description } : {}) } } : { parameter: parameterMessage(p) });

function responseMessage(r: Json): Msg {
  const out = copy(r, {}, ['description']);
  if (isObject(r.schema)) out.schema = r.schema.type === 'file' ? { file_schema: copy(r.schema, {}, ['format', 'title', 'description', 'default', 'required', 'type', 'readOnly', 'example'], freeForm) } : { schema: schemaMessage(r.schema) };
  if (isObject(r.headers)) out.headers = { additional_properties: named(r.headers, (h) => copy(h as Json, { vendor_extension: extensions(h as Json) }, ['type', 'format', 'collectionFormat', 'default', 'description', ...VALIDATIONS], freeForm)) };
  if (isObject(r.examples)) out.examples = { additional_properties: named(r.examples, any) };
  out.vendor_extension = extensions(r);
  return out;
}

const securityRequirement = (r: Json): Msg => ({ additional_properties: named(r, (v) => ({ value: v as string[] })) });

function operationMessage(op: Json): Msg {
  const out = copy(op, {}, ['tags', 'summary', 'description', 'operationId', 'produces', 'consumes', 'schemes', 'deprecated']);
  if (isObject(op.externalDocs)) out.external_docs = copy(op.externalDocs, {}, ['description', 'url']);
  if (Array.isArray(op.parameters)) out.parameters = op.parameters.map((p) => parametersItem(p as Json));
  if (isObject(op.responses)) {
    const rs = op.responses;
    out.responses = {
      response_code: Object.entries(rs)
        .filter(([k]) => !k.startsWith('x-'))
        .map(([name, r]) => ({ name, value: typeof (r as Json).$ref === 'string' ? { json_reference: { _ref: (r as Json).$ref } } : { response: responseMessage(r as Json) } })),
      vendor_extension: extensions(rs),
    };
  }
  if (Array.isArray(op.security)) out.security = op.security.map((r) => securityRequirement(r as Json));
  out.vendor_extension = extensions(op);
  return out;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'];

function pathItemMessage(item: Json): Msg {
  const out: Msg = {};
  if (typeof item.$ref === 'string') out._ref = item.$ref;
  for (const m of METHODS) if (isObject(item[m])) out[m] = operationMessage(item[m]);
  if (Array.isArray(item.parameters)) out.parameters = item.parameters.map((p) => parametersItem(p as Json));
  out.vendor_extension = extensions(item);
  return out;
}

function securityDefinition(d: Json): Msg {
  if (d.type === 'basic') return { basic_authentication_security: copy(d, { vendor_extension: extensions(d) }, ['type', 'description']) };
  return { api_key_security: copy(d, { vendor_extension: extensions(d) }, ['type', 'name', 'in', 'description']) };
}

/** The Document message of a Swagger 2.0 document, as a plain object for protobufjs. */
export function swaggerMessage(doc: Json): Msg {
  const out = copy(doc, {}, ['swagger', 'host', 'basePath', 'schemes', 'consumes', 'produces']);
  if (isObject(doc.info)) {
    const info = doc.info;
    out.info = copy(info, { vendor_extension: extensions(info) }, ['title', 'version', 'description', 'termsOfService']);
    if (isObject(info.contact)) (out.info as Msg).contact = copy(info.contact, { vendor_extension: extensions(info.contact) }, ['name', 'url', 'email']);
    if (isObject(info.license)) (out.info as Msg).license = copy(info.license, { vendor_extension: extensions(info.license) }, ['name', 'url']);
  }
  if (isObject(doc.paths)) out.paths = { vendor_extension: extensions(doc.paths), path: named(Object.fromEntries(Object.entries(doc.paths).filter(([k]) => !k.startsWith('x-'))), (i) => pathItemMessage(i as Json)) };
  if (isObject(doc.definitions)) out.definitions = { additional_properties: named(doc.definitions, (s) => schemaMessage(s as Json)) };
  if (isObject(doc.parameters)) out.parameters = { additional_properties: named(doc.parameters, (p) => parameterMessage(p as Json)) };
  if (isObject(doc.responses)) out.responses = { additional_properties: named(doc.responses, (r) => responseMessage(r as Json)) };
  if (Array.isArray(doc.security)) out.security = doc.security.map((r) => securityRequirement(r as Json));
  if (isObject(doc.securityDefinitions)) out.security_definitions = { additional_properties: named(doc.securityDefinitions, (d) => securityDefinition(d as Json)) };
  if (Array.isArray(doc.tags)) out.tags = doc.tags.map((t) => copy(t as Json, { vendor_extension: extensions(t as Json) }, ['name', 'description']));
  if (isObject(doc.externalDocs)) out.external_docs = copy(doc.externalDocs, {}, ['description', 'url']);
  out.vendor_extension = extensions(doc);
  return out;
}

/** Each path item's and definition's encoded entry, by the object it was made from (with its name). */
const encodedEntries = new WeakMap<object, { name: string; bytes: Uint8Array }>();

/** A NamedPathItem or NamedSchema message, encoded once for each object (pieces of the v2 document are kept between builds). */
function entryBytes(type: protobuf.Type, name: string, value: unknown, message: (v: Json) => Msg): Uint8Array {
  if (!isObject(value)) return type.encode({ name, value: message({}) }).finish();
  const had = encodedEntries.get(value);
  if (had?.name === name) return had.bytes;
  const bytes = type.encode({ name, value: message(value) }).finish();
  encodedEntries.set(value, { name, bytes });
  return bytes;
}

/** Document's fields before `paths` (8) and after `definitions` (9), by their message names. */
const HEAD_FIELDS = ['swagger', 'info', 'host', 'base_path', 'schemes', 'consumes', 'produces'];

/**
 * The document's protobuf form. Its paths and definitions, nearly all of it, are written from entries
 * encoded once per object (entryBytes), so a document rebuilt after a change encodes only what changed;
 * the bytes are those of encoding the whole message at once (fields in number order).
 */
export function swaggerToProto(doc: Json): Uint8Array {
  const t = swaggerDocumentType();
  const root = t.root;
  // the message is built with the .proto's own field names and shapes: encoded as it is (fromObject would copy it all again)
  const msg = swaggerMessage({ ...doc, paths: undefined, definitions: undefined });
  const head: Msg = {};
  const tail: Msg = {};
  for (const [k, v] of Object.entries(msg)) (HEAD_FIELDS.includes(k) ? head : tail)[k] = v;
  const parts: Uint8Array[] = [t.encode(head).finish()];
  if (isObject(doc.paths)) {
    const item = root.lookupType('openapi.v2.NamedPathItem');
    const anyExt = root.lookupType('openapi.v2.NamedAny');
    const pw = protobuf.Writer.create();
    pw.uint32((8 << 3) | 2).fork();
    for (const ext of extensions(doc.paths)) pw.uint32((1 << 3) | 2).bytes(anyExt.encode(ext).finish());
    for (const [name, v] of Object.entries(doc.paths)) if (!name.startsWith('x-')) pw.uint32((2 << 3) | 2).bytes(entryBytes(item, name, v, pathItemMessage));
    parts.push(pw.ldelim().finish());
  }
  if (isObject(doc.definitions)) {
    const schema = root.lookupType('openapi.v2.NamedSchema');
    const dw = protobuf.Writer.create();
    dw.uint32((9 << 3) | 2).fork();
    for (const [name, v] of Object.entries(doc.definitions)) dw.uint32((1 << 3) | 2).bytes(entryBytes(schema, name, v, schemaMessage));
    parts.push(dw.ldelim().finish());
  }
  parts.push(t.encode(tail).finish());
  return Buffer.concat(parts);
}
