/**
 * OpenAPI v2 (Swagger 2.0) at /openapi/v2, as upstream v1.32 serves it: one document for every
 * served group version. It is derived from the v3 documents (core/server/openapi.ts), so the schemas
 * are declared once: `#/components/schemas/X` becomes `#/definitions/X`, a request body a `body`
 * parameter, media types `consumes`/`produces`, parameter schemas inline types; a field's
 * `{description, allOf: [$ref]}` becomes `$ref` with its description beside it, as upstream's v2
 * publishes it. Extensions' own v2 documents are merged after the local one as upstream's aggregator
 * merges them: only their group version's paths and the definitions those use, a path this server
 * already has is kept as it is, a definition of the same name with other content is renamed `<name>_v2`
 * (`_v3`, ...) with its references, one with the same content shared. Served as JSON or as gnostic's
 * protobuf (openapi-v2-proto.ts), with an ETag (the SHA-512 of the JSON, as upstream) and 304.
 */
import { createHash } from 'node:crypto';
import type { NonResourceRoute } from '../request/routes.js';
import type { RequestScope } from '../request/scope.js';
import type { OpenApiDocs } from './openapi.js';
import { swaggerToProto } from './openapi-v2-proto.js';

type Json = Record<string, unknown>;

const V3_PREFIX = '#/components/schemas/';
const V2_PREFIX = '#/definitions/';
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A v3 schema as a v2 schema (v2 has no nullable, anyOf, oneOf, not: dropped). `custom`: part of a
 * custom resource's schema, already simplified (customDefinitionToV2), where int-or-string stays
 * without a type as upstream publishes it.
 */
export function schemaToV2(sch: unknown, custom = false): unknown {
  if (!isObject(sch)) return sch;
  const out: Json = {};
  const allOf = sch.allOf;
  // a field naming a definition: v3 wraps the $ref in allOf to give it a description, v2 puts it beside
  if (Array.isArray(allOf) && allOf.length === 1 && isObject(allOf[0]) && typeof allOf[0].$ref === 'string' && Object.keys(allOf[0]).length === 1) {
    for (const [k, v] of Object.entries(sch)) if (k !== 'allOf') out[k] = v;
    out.$ref = refToV2(allOf[0].$ref);
    return out;
  }
  for (const [k, v] of Object.entries(sch)) {
    switch (k) {
      case '$ref':
        out.$ref = refToV2(String(v));
        break;
      case 'nullable':
      case 'anyOf':
      case 'oneOf':
      case 'not':
        break;
      case 'properties':
        out.properties = Object.fromEntries(Object.entries(v as Json).map(([n, p]) => [n, schemaToV2(p, custom)]));
        break;
      case 'items':
      case 'additionalProperties':
        out[k] = typeof v === 'boolean' ? v : schemaToV2(v, custom);
        break;
      case 'allOf':
        out.allOf = (v as unknown[]).map((x) => schemaToV2(x, custom));
        break;
      default:
        out[k] = v;
    }
  }
  // v2's int-or-string (upstream's IntOrString definition): a string with that format
  if (!custom && out['x-kubernetes-int-or-string'] === true && out.type === undefined) out.type = 'string';
  return out;
}

/** A field naming a definition: `$ref`, or v3's `{description, allOf: [{$ref}]}` around it. */
const isReference = (n: Json): boolean =>
  typeof n.$ref === 'string' || (Array.isArray(n.allOf) && n.allOf.length === 1 && isObject(n.allOf[0]) && typeof n.allOf[0].$ref === 'string' && Object.keys(n.allOf[0]).length === 1);

/**
 * One node of a custom resource's schema simplified for v2 as upstream's ToStructuralOpenAPIV2 does
 * (apiextensions-apiserver controller/openapi/v2/conversion.go), the node before its children (so a
 * parent still sees which of its properties are nullable), then defaults pruned (kube-openapi's
 * PruneDefaults, applied to the whole v2 document): kubectl's v2 reader cannot take these constructs.
 */
function simplifyCustomNode(node: unknown): unknown {
  if (!isObject(node) || isReference(node)) return node;
  const n: Json = { ...node };
  // v2 has no junctors
  delete n.allOf, delete n.anyOf, delete n.oneOf, delete n.not;
  delete n.default;
  // null is no v2 type: an untyped value, with no items or properties (kubectl breaks on those without a type)
  if (n.nullable === true) delete n.type, delete n.nullable, delete n.items, delete n.properties;
  delete n.nullable;
  const preserve = n['x-kubernetes-preserve-unknown-fields'] === true;
  // kubectl would refuse the unknown fields such a node allows if it knew some
  if (preserve) delete n.items, delete n.properties;
  // an array without an item schema, or an object of unknown fields: kubectl copes with neither typed
  if ((n.type === 'array' && n.items === undefined) || (preserve && n.type === 'object')) delete n.type;
  // a property that may be null may be absent: it leaves required
  if (Array.isArray(n.required) && isObject(n.properties)) {
    const props = n.properties;
    n.required = n.required.filter((f) => !(isObject(props[f as string]) && (props[f as string] as Json).nullable === true));
  }
  if (isObject(n.additionalProperties) && n.additionalProperties.nullable === true) delete n.required;
  if (Array.isArray(n.required) && !n.required.length) delete n.required;
  if (n.items !== undefined) n.items = simplifyCustomNode(n.items);
  if (isObject(n.properties)) n.properties = Object.fromEntries(Object.entries(n.properties).map(([k, p]) => [k, simplifyCustomNode(p)]));
  if (isObject(n.additionalProperties)) n.additionalProperties = simplifyCustomNode(n.additionalProperties);
  return n;
}

/**
 * A custom resource kind's v3 definition as upstream's CRD builder publishes it in v2: a schema that
 * keeps unknown fields at its root is only `{type: object}` with its group-version-kind (kubectl would
 * refuse any field it did not list), any other is simplified node by node (simplifyCustomNode).
 */
export function customDefinitionToV2(def: Json): Json {
  if (def['x-kubernetes-preserve-unknown-fields'] === true) {
    const gvk = def['x-kubernetes-group-version-kind'];
    return { type: 'object', ...(gvk !== undefined ? { 'x-kubernetes-group-version-kind': gvk } : {}) };
  }
  return schemaToV2(simplifyCustomNode(def), true) as Json;
}

const refToV2 = (ref: string): string => (ref.startsWith(V3_PREFIX) ? V2_PREFIX + ref.slice(V3_PREFIX.length) : ref);

/** A v3 parameter as a v2 parameter (the schema's type and markers inline). */
function parameterToV2(p: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(p)) {
    if (k === 'schema' && isObject(v)) Object.assign(out, schemaToV2(v) as Json);
    else if (k === '$ref') out.$ref = String(v).replace('#/components/parameters/', '#/parameters/');
    else out[k] = v;
  }
  return out;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'] as const;

function operationToV2(op: Json): Json {
  const out: Json = {};
  const params: Json[] = [];
  const body = op.requestBody as { content?: Record<string, { schema?: unknown }>; required?: boolean; description?: string } | undefined;
  if (body?.content) {
    const first = Object.values(body.content)[0];
    params.push({ name: 'body', in: 'body', required: body.required ?? false, ...(body.description ? { description: body.description } : {}), schema: schemaToV2(first?.schema ?? {}) });
  }
  for (const p of (op.parameters as Json[] | undefined) ?? []) params.push(parameterToV2(p));
  const produces = new Set<string>();
  const responses: Json = {};
  for (const [code, r] of Object.entries((op.responses as Record<string, Json> | undefined) ?? {})) {
    const content = r.content as Record<string, { schema?: unknown }> | undefined;
    const res: Json = { description: r.description ?? '' };
    if (content) {
      for (const mt of Object.keys(content)) produces.add(mt);
      const first = Object.values(content)[0];
      if (first?.schema) res.schema = schemaToV2(first.schema);
    }
    responses[code] = res;
  }
  for (const [k, v] of Object.entries(op)) {
    if (k === 'requestBody' || k === 'parameters' || k === 'responses') continue;
    if (k === 'tags' || k === 'summary' || k === 'description' || k === 'operationId' || k === 'deprecated' || k.startsWith('x-')) out[k] = v;
  }
  if (body?.content) out.consumes = Object.keys(body.content);
  if (produces.size) out.produces = [...produces];
  if (params.length) out.parameters = params;
  out.responses = responses;
  return out;
}

function pathItemToV2(item: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(item)) {
    if ((METHODS as readonly string[]).includes(k)) out[k] = operationToV2(v as Json);
    else if (k === 'parameters') out.parameters = (v as Json[]).map(parameterToV2);
    else if (k.startsWith('x-')) out[k] = v;
  }
  return out;
}

/** Canonical JSON (sorted keys): what "the same content" means when definitions are compared. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObject(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  return JSON.stringify(v);
}

/**
 * Each local path item's and definition's v2 form, by its v3 object: documents are kept while their
 * kinds stay the same (OpenApiCache), so a build after a change converts only what changed.
 */
const v2ByV3 = new WeakMap<Json, Json>();

function converted(v3: Json, convert: (x: Json) => Json): Json {
  let v2 = v2ByV3.get(v3);
  if (!v2) v2ByV3.set(v3, (v2 = convert(v3)));
  return v2;
}

const definitionToV2 = (sch: Json): Json => schemaToV2(sch) as Json;

/** The local documents as one v2 document: paths and definitions of every group version. */
export function buildSwagger(v3: Iterable<Json>, customDefinitions: ReadonlySet<string> = new Set()): Json {
  const steps = swaggerSteps(v3, customDefinitions);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * buildSwagger in steps: it pauses after each path item or definition it had to convert, so a
 * first build (everything to convert, code not yet optimized) can leave the thread between steps.
 */
function* swaggerSteps(v3: Iterable<Json>, customDefinitions: ReadonlySet<string>): Generator<void, Json> {
  const paths: Json = {};
  const definitions: Json = {};
  let info: unknown = { title: 'svc-apiserver', version: 'v1.32.0' };
  for (const doc of v3) {
    info = doc.info ?? info;
    for (const [p, item] of Object.entries((doc.paths as Json | undefined) ?? {})) {
      if (p in paths) continue;
      if (!v2ByV3.has(item as Json)) yield;
      paths[p] = converted(item as Json, pathItemToV2);
    }
    const schemas = ((doc.components as Json | undefined)?.schemas as Json | undefined) ?? {};
    for (const [name, sch] of Object.entries(schemas) as [string, Json][]) {
      const had = definitions[name] as Json | undefined;
      // a name already taken is not converted again (ObjectMeta, Status, ... are in every document)
      if (!had) {
        if (!v2ByV3.has(sch)) yield;
        definitions[name] = converted(sch, customDefinitions.has(name) ? customDefinitionToV2 : definitionToV2);
        continue;
      }
      // the same kind in an alias group version (storage.k8s.io next to storage.svc.io): one definition, both group-version-kinds
      const gvks = had['x-kubernetes-group-version-kind'];
      const more = sch['x-kubernetes-group-version-kind'];
      if (Array.isArray(gvks) && Array.isArray(more)) {
        const seen = new Set(gvks.map(canonical));
        const added = more.filter((g) => !seen.has(canonical(g)));
        // a copy: converted definitions are kept between builds
        if (added.length) definitions[name] = { ...had, 'x-kubernetes-group-version-kind': [...gvks, ...added] };
      }
    }
  }
  return {
    swagger: '2.0',
    info,
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    definitions: Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    securityDefinitions: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    security: [{ BearerToken: [] }],
  };
}

/** Every `$ref` string under `node`, rewritten by `fn` (in place). */
function walkRefs(node: unknown, fn: (ref: string) => string): void {
  if (Array.isArray(node)) for (const n of node) walkRefs(n, fn);
  else if (isObject(node)) {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') node[k] = fn(v);
      else walkRefs(v, fn);
    }
  }
}

/** Names of the definitions and parameters `roots` use, followed through definitions that use others. */
function usedNames(doc: Json, roots: unknown[]): { definitions: Set<string>; parameters: Set<string> } {
  const definitions = new Set<string>();
  const parameters = new Set<string>();
  const defs = (doc.definitions as Json | undefined) ?? {};
  const params = (doc.parameters as Json | undefined) ?? {};
  const queue = [...roots];
  while (queue.length) {
    walkRefs(queue.pop(), (ref) => {
      if (ref.startsWith(V2_PREFIX)) {
        const n = ref.slice(V2_PREFIX.length);
        if (!definitions.has(n) && n in defs) definitions.add(n), queue.push(defs[n]);
      } else if (ref.startsWith('#/parameters/')) {
        const n = ref.slice('#/parameters/'.length);
        if (!parameters.has(n) && n in params) parameters.add(n), queue.push(params[n]);
      }
      return ref;
    });
  }
  return { definitions, parameters };
}

/**
 * Merges an extension's v2 document into `dest` (in place), as upstream's aggregator does: only its
 * paths under `prefix` (`/apis/<group>/<version>/`) that `dest` does not have, the definitions and
 * parameters those use; one whose name `dest` uses for other content is renamed `<name>_v<n>`.
 */
export function mergeSwagger(dest: Json, source: Json, prefix: string): void {
  const src = JSON.parse(JSON.stringify(source)) as Json;
  const destPaths = dest.paths as Json;
  const paths = Object.fromEntries(Object.entries((src.paths as Json | undefined) ?? {}).filter(([p]) => p.startsWith(prefix) && !(p in destPaths)));
  const used = usedNames(src, Object.values(paths));
  for (const [section, prefixRef, names] of [
    ['definitions', V2_PREFIX, used.definitions],
    ['parameters', '#/parameters/', used.parameters],
  ] as const) {
    const destSection = ((dest[section] as Json | undefined) ?? (dest[section] = {})) as Json;
    const srcSection = (src[section] as Json | undefined) ?? {};
    const renames = new Map<string, string>();
    for (const name of names) {
      if (!(name in destSection) || canonical(destSection[name]) === canonical(srcSection[name])) continue;
      let i = 2;
      while (`${name}_v${i}` in destSection || `${name}_v${i}` in srcSection || [...renames.values()].includes(`${name}_v${i}`)) i++;
      renames.set(name, `${name}_v${i}`);
    }
    if (renames.size) {
      const rename = (ref: string) => (ref.startsWith(prefixRef) && renames.has(ref.slice(prefixRef.length)) ? prefixRef + renames.get(ref.slice(prefixRef.length))! : ref);
      walkRefs(paths, rename);
      for (const n of used.definitions) walkRefs((src.definitions as Json)[n], rename);
      for (const n of used.parameters) walkRefs((src.parameters as Json)[n], rename);
    }
    for (const name of names) {
      const target = renames.get(name) ?? name;
      if (!(target in destSection)) destSection[target] = srcSection[name];
    }
    if (!Object.keys(destSection).length) delete dest[section];
  }
  Object.assign(destPaths, paths);
}

/** An extension's v2 document to merge, with the group version it is served for. */
export interface RemoteSwagger {
  group: string;
  version: string;
  doc: Json;
}

/** The served v2 document: the local one, then the extensions' in APIService order. */
export function servedSwagger(docs: OpenApiDocs): Json {
  const remote = new Set(docs.remoteGroupVersions ?? []);
  const local = [...docs.byGroupVersion].filter(([gv]) => !remote.has(gv)).map(([, d]) => d);
  const doc = buildSwagger(local, docs.customDefinitions);
  for (const r of docs.remoteSwagger ?? []) mergeSwagger(doc, r.doc, `/apis/${r.group}/${r.version}/`);
  return doc;
}

/** How long a first build holds the thread before it lets other work run. */
const BUILD_SLICE_MS = 8;

/** servedSwagger, leaving the thread every BUILD_SLICE_MS while it converts (a build after a change converts little and does not wait). */
export async function servedSwaggerSliced(docs: OpenApiDocs): Promise<Json> {
  const remote = new Set(docs.remoteGroupVersions ?? []);
  const local = [...docs.byGroupVersion].filter(([gv]) => !remote.has(gv)).map(([, d]) => d);
  const steps = swaggerSteps(local, docs.customDefinitions ?? new Set());
  let since = performance.now();
  let r = steps.next();
  while (!r.done) {
    if (performance.now() - since > BUILD_SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
    r = steps.next();
  }
  const doc = r.value;
  for (const x of docs.remoteSwagger ?? []) mergeSwagger(doc, x.doc, `/apis/${x.group}/${x.version}/`);
  return doc;
}

export const SWAGGER_JSON = 'application/json';
/** What upstream answers a protobuf request with; both spellings are accepted, as upstream. */
export const SWAGGER_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';
const PROTOBUF_SUBTYPES = ['com.github.proto-openapi.spec.v2@v1.0+protobuf', 'com.github.proto-openapi.spec.v2.v1.0+protobuf'];

/** Accept's media ranges by preference (q descending, more specific first on a tie), as goautoneg sorts them. */
function acceptClauses(accept: string): { type: string; subtype: string }[] {
  const out: { type: string; subtype: string; q: number; i: number }[] = [];
  accept.split(',').forEach((part, i) => {
    const [range = '', ...params] = part.split(';').map((x) => x.trim());
    const [type = '', subtype = ''] = range.toLowerCase().split('/');
    if (!type) return;
    const q = params.find((p) => p.startsWith('q='));
    out.push({ type, subtype: subtype || '*', q: q ? Number(q.slice(2)) : 1, i });
  });
  const specificity = (c: { type: string; subtype: string }) => (c.type === '*' ? 0 : c.subtype === '*' ? 1 : 2);
  return out.filter((c) => c.q > 0).sort((a, b) => b.q - a.q || specificity(b) - specificity(a) || a.i - b.i);
}

/** Whether If-None-Match names this ETag (weak comparison, as Go's ServeContent). */
export function noneMatch(header: string | string[] | undefined, etag: string): boolean {
  const h = Array.isArray(header) ? header.join(',') : header;
  if (!h) return false;
  return h.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '');
    return tag === '*' || tag === etag;
  });
}

/** Go's ServeContent: If-None-Match decides when present, else If-Modified-Since (whole seconds). */
function notModified(h: Readonly<Record<string, string | string[] | undefined>>, etag: string, lastModified: string): boolean {
  if (h['if-none-match'] !== undefined) return noneMatch(h['if-none-match'], etag);
  const since = Date.parse(String(h['if-modified-since'] ?? ''));
  return Number.isFinite(since) && Date.parse(lastModified) <= since;
}

/** The /openapi/v2 route for these documents: each form built on its first request, then kept. */
export function openApiV2Route(docs: OpenApiDocs): NonResourceRoute {
  let doc: Json | undefined;
  let json: Buffer | undefined;
  let proto: Uint8Array | undefined;
  let etag = '';
  let lastModified = '';
  // one build for every request that comes while it runs
  let building: Promise<void> | undefined;
  const build = async (): Promise<void> => {
    doc = await servedSwaggerSliced(docs);
    json = Buffer.from(JSON.stringify(doc));
    etag = `"${createHash('sha512').update(json).digest('hex').toUpperCase()}"`;
    lastModified = new Date().toUTCString();
  };
  const answer = (s: RequestScope, isJson: boolean): void => {
    const headers = { etag, 'last-modified': lastModified, vary: 'Accept' };
    if (notModified(s.headers, etag, lastModified)) return s.sink.send(304, isJson ? SWAGGER_JSON : SWAGGER_PROTOBUF, new Uint8Array(0), headers);
    if (isJson) return s.sink.send(200, SWAGGER_JSON, json!, headers);
    proto ??= swaggerToProto(doc!);
    return s.sink.send(200, SWAGGER_PROTOBUF, proto, headers);
  };
  return (s) => {
    const accept = String(s.headers.accept ?? '') || '*/*';
    for (const c of acceptClauses(accept)) {
      if (c.type !== 'application' && c.type !== '*') continue;
      const isJson = c.subtype === 'json' || c.subtype === '*';
      const isProto = PROTOBUF_SUBTYPES.includes(c.subtype);
      if (!isJson && !isProto) continue;
      if (json) return answer(s, isJson);
      building ??= build().finally(() => (building = undefined));
      return building.then(() => answer(s, isJson));
    }
    s.sink.send(406, 'text/plain; charset=utf-8', new Uint8Array(0), { vary: 'Accept' });
  };
}
