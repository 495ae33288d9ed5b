/**
 * OpenAPI v3, generated from the resource declarations: /openapi/v3 lists one document per group
 * version; each document has the resource paths with their operations, query parameters and
 * x-kubernetes-group-version-kind / x-kubernetes-action extensions, and the component schemas with
 * the merge markers (x-kubernetes-list-type, -list-map-keys, -map-type, -patch-strategy,
 * -patch-merge-key). kubectl reads it to learn that the server validates fields itself
 * (fieldValidation) and for `kubectl explain`.
 */
import { createHash } from 'node:crypto';
import type { NonResourceRoute } from '../request/routes.js';
import { noneMatch, openApiV2Route, type RemoteSwagger } from './openapi-v2.js';
import { listMetaSchema, typeMetaFields } from '../schema/meta.js';
import { s, type Schema, type StructSchema, type ValueConstraints } from '../schema/schema.js';
import { allVerbs, type ResourceType } from '../registry/resource-type.js';

type Json = Record<string, unknown>;

export interface OpenApiDocs {
  index: Json;
  /** `api/v1` or `apis/<group>/<version>` -> document. */
  byGroupVersion: Map<string, Json>;
  hashes: Map<string, string>;
  /** Keys of byGroupVersion that are extensions' documents (the aggregator's), left out of the local v2 document. */
  remoteGroupVersions?: ReadonlySet<string>;
  /** Extensions' v2 documents, in APIService order, merged into /openapi/v2 (openapi-v2.ts). */
  remoteSwagger?: readonly RemoteSwagger[];
  /** Definition names of custom resource kinds: /openapi/v2 simplifies their schemas as upstream's CRD v2 builder does. */
  customDefinitions?: ReadonlySet<string>;
}

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** A custom resource's value validations as its schema spells them (inside allOf / anyOf / oneOf / not too). */
function constraintsJson(c: ValueConstraints): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(c)) {
    if (v === undefined) continue;
    if (k === 'allOf' || k === 'anyOf' || k === 'oneOf') out[k] = (v as ValueConstraints[]).map(constraintsJson);
    else if (k === 'not' || k === 'items' || k === 'additionalProperties') out[k] = constraintsJson(v as ValueConstraints);
    else if (k === 'properties') out[k] = Object.fromEntries(Object.entries(v as Record<string, ValueConstraints>).map(([n, x]) => [n, constraintsJson(x)]));
    else out[k] = Array.isArray(v) ? [...(v as unknown[])] : v;
  }
  return out;
}

/**
 * What a custom resource's node publishes beyond its shape, as upstream's CRD builder does (from the
 * structural schema, unfolded): nullable, default, value validations, x-kubernetes-validations, and
 * int-or-string's two types as an anyOf.
 */
function customNodeExtras(sch: Schema, out: Json): Json {
  const intOrString = sch.kind === 'scalar' && sch.type === 'int-or-string';
  // the format built-in kinds' int-or-string is published with; a custom one keeps only the schema's own
  if (intOrString) delete out.format;
  if (sch.nullable) out.nullable = true;
  if (sch.default !== undefined) out.default = sch.default;
  if (sch.constraints) {
    const c = constraintsJson(sch.constraints);
    // a struct's own required list is published by structBody; a map's is a value validation here
    if (sch.kind === 'struct') delete c.required;
    Object.assign(out, c);
  }
  if (intOrString) {
    const both = [{ type: 'integer' }, { type: 'string' }];
    if (!out.anyOf) out.anyOf = both;
    else out.allOf = [{ anyOf: both }, ...((out.allOf as Json[] | undefined) ?? [])];
  }
  if (sch.rules?.length) out['x-kubernetes-validations'] = sch.rules.map((r) => ({ ...r }));
  return out;
}

/**
 * Converts a schema node, collecting named structs into `defs`. `custom`: the node is part of a custom
 * resource's schema (inline all the way down), published with its extras (customNodeExtras).
 */
function toOpenApi(sch: Schema, defs: Map<string, Json>, custom = false): Json {
  const out = toOpenApiShape(sch, defs, custom);
  // a named definition's reference carries no extras (a custom resource's metadata is ObjectMeta's)
  return custom && !(sch.kind === 'struct' && !sch.inline) ? customNodeExtras(sch, out) : out;
}

function toOpenApiShape(sch: Schema, defs: Map<string, Json>, custom: boolean): Json {
  const out: Json = {};
  if (sch.description) out.description = sch.description;
  switch (sch.kind) {
    case 'scalar':
      if (sch.type === 'int-or-string') return { ...out, 'x-kubernetes-int-or-string': true, format: 'int-or-string' };
      out.type = sch.type;
      if (sch.format === 'date-time-micro') out.format = 'date-time';
      else if (sch.format === 'quantity') out.format = 'quantity';
      else if (sch.format) out.format = sch.format;
      if (sch.enum) out.enum = [...sch.enum];
      return out;
    case 'untyped':
      return { ...out, type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    case 'map':
      out.type = 'object';
      out.additionalProperties = toOpenApi(sch.values, defs, custom);
      if (sch.mapType) out['x-kubernetes-map-type'] = sch.mapType;
      return out;
    case 'list': {
      out.type = 'array';
      out.items = toOpenApi(sch.items, defs, custom);
      if (sch.listType) out['x-kubernetes-list-type'] = sch.listType;
      if (sch.listMapKeys) out['x-kubernetes-list-map-keys'] = [...sch.listMapKeys];
      if (sch.patchStrategy) out['x-kubernetes-patch-strategy'] = sch.patchStrategy;
      if (sch.patchMergeKey) out['x-kubernetes-patch-merge-key'] = sch.patchMergeKey;
      return out;
    }
    case 'struct':
      if (sch.inline) return { ...out, ...structBody(sch, defs, custom) };
      defineStruct(sch, defs);
      // a $ref takes no siblings: the field's own description rides beside it in an allOf, as upstream publishes it
      return sch.description ? { description: sch.description, allOf: [ref(sch.name)] } : ref(sch.name);
  }
}

/** `custom`: the definition of a custom resource kind (its own fields are published with their extras). */
function defineStruct(sch: StructSchema, defs: Map<string, Json>, custom = false): void {
  if (defs.has(sch.name)) return;
  const def: Json = { type: 'object' };
  defs.set(sch.name, def); // placeholder first: recursive definitions terminate
  if (sch.typeDescription) def.description = sch.typeDescription;
  Object.assign(def, structBody(sch, defs, custom));
  if (custom) customNodeExtras({ ...sch, nullable: false, default: undefined }, def);
}

/** A struct's properties and markers (its definition, or the field itself when published inline). */
function structBody(sch: StructSchema, defs: Map<string, Json>, custom = false): Json {
  const def: Json = { type: 'object' };
  const props: Json = {};
  for (const [k, v] of Object.entries(sch.fields)) props[k] = toOpenApi(v, defs, custom);
  if (Object.keys(props).length || !sch.preserveUnknownFields) def.properties = props;
  if (sch.required?.length) def.required = [...sch.required];
  if (sch.mapType) def['x-kubernetes-map-type'] = sch.mapType;
  if (sch.preserveUnknownFields) def['x-kubernetes-preserve-unknown-fields'] = true;
  if (sch.embeddedResource) def['x-kubernetes-embedded-resource'] = true;
  return def;
}

function param(name: string, description: string, type = 'string', uniqueItems = true): Json {
  return { name, in: 'query', description, schema: { type, uniqueItems } };
}

const common = {
  pretty: param('pretty', 'If \'true\', then the output is pretty printed.'),
  dryRun: param('dryRun', 'When present, indicates that modifications should not be persisted. The only valid value is All.'),
  fieldManager: param('fieldManager', 'fieldManager is a name associated with the actor or entity that is making these changes.'),
  fieldValidation: param('fieldValidation', 'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn (default) or Strict.'),
  force: param('force', 'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by other people.', 'boolean'),
  gracePeriodSeconds: param('gracePeriodSeconds', 'The duration in seconds before the object should be deleted.', 'integer'),
  propagationPolicy: param('propagationPolicy', 'Whether and how garbage collection will be performed: Orphan, Background or Foreground.'),
  orphanDependents: param('orphanDependents', 'Deprecated: please use the PropagationPolicy.', 'boolean'),
};
const listParams = [
  param('allowWatchBookmarks', 'allowWatchBookmarks requests watch events with type "BOOKMARK".', 'boolean'),
  param('continue', 'The continue option should be set when retrieving more results from the server.'),
  param('fieldSelector', 'A selector to restrict the list of returned objects by their fields.'),
  param('labelSelector', 'A selector to restrict the list of returned objects by their labels.'),
  param('limit', 'limit is a maximum number of responses to return for a list call.', 'integer'),
  param('resourceVersion', 'resourceVersion sets a constraint on what resource versions a request may be served from.'),
  param('resourceVersionMatch', 'resourceVersionMatch determines how resourceVersion is applied to list calls.'),
  param('sendInitialEvents', 'sendInitialEvents=true may be set together with watch=true.', 'boolean'),
  param('timeoutSeconds', 'Timeout for the list/watch call.', 'integer'),
  param('watch', 'Watch for changes to the described resources.', 'boolean'),
];

const jsonBody = (schema: Json): Json => ({
  content: { 'application/json': { schema }, 'application/yaml': { schema } },
  required: true,
});
const patchBody: Json = {
  content: {
    'application/json-patch+json': { schema: { type: 'object' } },
    'application/merge-patch+json': { schema: { type: 'object' } },
    'application/strategic-merge-patch+json': { schema: { type: 'object' } },
    'application/apply-patch+yaml': { schema: { type: 'object' } },
  },
  required: true,
};
const okResponse = (schema: Json, codes: string[] = ['200']): Json => {
  const r: Json = {};
  for (const c of codes) r[c] = { description: c === '201' ? 'Created' : c === '202' ? 'Accepted' : 'OK', content: { 'application/json': { schema }, 'application/yaml': { schema } } };
  r['401'] = { description: 'Unauthorized' };
  return r;
};

function operations(rt: ResourceType, defs: Map<string, Json>, paths: Json): void {
  const gvk = { 'x-kubernetes-group-version-kind': { group: rt.group, kind: rt.kind, version: rt.version } };
  const obj = ref(rt.schema.name);
  const listName = `${rt.schema.name}List`;
  const typeMeta = typeMetaFields();
  defs.set(listName, {
    type: 'object',
    description: `A list of ${rt.kind} objects.`,
    required: ['items'],
    properties: {
      apiVersion: toOpenApi(typeMeta.apiVersion!, defs),
      items: { type: 'array', description: `The ${rt.kind} objects.`, items: obj },
      kind: toOpenApi(typeMeta.kind!, defs),
      metadata: toOpenApi(listMetadata, defs),
    },
    'x-kubernetes-group-version-kind': [{ group: rt.group, kind: `${rt.kind}List`, version: rt.version }],
  });
  const status = ref('io.svc.apimachinery.pkg.apis.meta.v1.Status');
  const verbs = new Set(rt.verbs ?? allVerbs);
  const base = rt.group ? `/apis/${rt.group}/${rt.version}` : '/api/v1';
  const nsSeg = rt.namespaced ? '/namespaces/{namespace}' : '';
  const nsParam = rt.namespaced ? [{ name: 'namespace', in: 'path', required: true, description: 'object name and auth scope, such as for teams and projects', schema: { type: 'string', uniqueItems: true } }] : [];
  const nameParam = [{ name: 'name', in: 'path', required: true, description: `name of the ${rt.kind}`, schema: { type: 'string', uniqueItems: true } }];
  const tag = [rt.group ? `${rt.group.split('.')[0]}_${rt.version}` : 'core_v1'];
  const opId = (verb: string, suffix = '') => `${verb}${rt.namespaced ? 'Namespaced' : ''}${rt.kind}${suffix}`;

  const collection: Json = { parameters: [...nsParam, common.pretty] };
  if (verbs.has('list')) collection.get = { tags: tag, operationId: opId('list'), parameters: listParams, responses: okResponse(ref(listName)), 'x-kubernetes-action': 'list', ...gvk };
  if (verbs.has('create'))
    collection.post = {
      tags: tag,
      operationId: opId('create'),
      parameters: [common.dryRun, common.fieldManager, common.fieldValidation],
      requestBody: jsonBody(obj),
      responses: okResponse(obj, ['200', '201', '202']),
      'x-kubernetes-action': 'post',
      ...gvk,
    };
  if (verbs.has('deletecollection'))
    collection.delete = {
      tags: tag,
      operationId: opId('deletecollection', 'Collection').replace('deletecollection', 'deleteCollection'),
      parameters: [common.dryRun, common.gracePeriodSeconds, common.propagationPolicy, common.orphanDependents, ...listParams],
      responses: okResponse(status),
      'x-kubernetes-action': 'deletecollection',
      ...gvk,
    };
  paths[`${base}${nsSeg}/${rt.plural}`] = collection;

  /** get / put / patch / delete on one object, or on one of its subresources (`suffix`: e.g. `Status`). */
  const objectOperations = (served: ReadonlySet<string>, suffix: string, withDelete: boolean): Json => {
    const ops: Json = { parameters: [...nameParam, ...nsParam, common.pretty] };
    if (served.has('get')) ops.get = { tags: tag, operationId: opId('read', suffix), responses: okResponse(obj), 'x-kubernetes-action': 'get', ...gvk };
    const write = (verb: string, action: string, params: Json[], body: Json, codes: string[]): Json => ({
      tags: tag,
      operationId: opId(verb, suffix),
      parameters: params,
      requestBody: body,
      responses: okResponse(obj, codes),
      'x-kubernetes-action': action,
      ...gvk,
    });
    if (served.has('update')) ops.put = write('replace', 'put', [common.dryRun, common.fieldManager, common.fieldValidation], jsonBody(obj), ['200', '201']);
    if (served.has('patch')) ops.patch = write('patch', 'patch', [common.dryRun, common.fieldManager, common.fieldValidation, common.force], patchBody, ['200', '201']);
    if (withDelete && served.has('delete'))
      ops.delete = {
        tags: tag,
        operationId: opId('delete', suffix),
        parameters: [common.dryRun, common.gracePeriodSeconds, common.propagationPolicy, common.orphanDependents],
        responses: okResponse(rt.deletion?.returnsObject ? obj : status, ['200', '202']),
        'x-kubernetes-action': 'delete',
        ...gvk,
      };
    return ops;
  };
  /** A virtual subresource takes a create of its own kind (serviceaccounts/{name}/token: TokenRequest). */
  const virtualSubresourceOperations = (kind: ResourceType, suffix: string): Json => {
    toOpenApi(kind.schema, defs);
    const body = ref(kind.schema.name);
    return {
      parameters: [...nameParam, ...nsParam, common.pretty],
      post: {
        tags: tag,
        operationId: opId('create', suffix),
        parameters: [common.dryRun, common.fieldManager, common.fieldValidation],
        requestBody: jsonBody(body),
        responses: okResponse(body, ['200', '201', '202']),
        'x-kubernetes-action': 'post',
        'x-kubernetes-group-version-kind': { group: kind.group, kind: kind.kind, version: kind.version },
      },
    };
  };
  paths[`${base}${nsSeg}/${rt.plural}/{name}`] = objectOperations(verbs, '', true);
  for (const [sub, def] of Object.entries(rt.subresources ?? {})) {
    const suffix = sub[0]!.toUpperCase() + sub.slice(1);
    paths[`${base}${nsSeg}/${rt.plural}/{name}/${sub}`] = def.kind ? virtualSubresourceOperations(def.kind, suffix) : objectOperations(new Set(def.verbs), suffix, false);
  }
  if (rt.namespaced && verbs.has('list')) {
    paths[`${base}/${rt.plural}`] = {
      parameters: [...listParams, common.pretty],
      get: { tags: tag, operationId: `list${rt.kind}ForAllNamespaces`, responses: okResponse(ref(listName)), 'x-kubernetes-action': 'list', ...gvk },
    };
  }
}

const listMetadata = s.field(listMetaSchema, { description: 'List metadata: the version the list was read at, and paging.' });

const statusSchema: Json = {
  type: 'object',
  description: 'The result of a request that returns no object: every failure, and some successes such as a delete.',
  properties: {
    apiVersion: toOpenApi(typeMetaFields().apiVersion!, new Map()),
    code: { type: 'integer', format: 'int32', description: 'HTTP status code of the result; 0 when not set.' },
    details: {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      description: 'More about the object concerned (name, group, kind, uid) and, for invalid requests, one cause per field.',
    },
    kind: toOpenApi(typeMetaFields().kind!, new Map()),
    message: { type: 'string', description: 'Human-readable description of the result.' },
    metadata: { description: 'List metadata; unused.', allOf: [ref('io.svc.apimachinery.pkg.apis.meta.v1.ListMeta')] },
    reason: { type: 'string', description: 'Machine-readable CamelCase reason of a failure (for example NotFound); empty when none is known.' },
    status: { type: 'string', description: 'Success or Failure.' },
  },
  'x-kubernetes-group-version-kind': [{ group: '', kind: 'Status', version: 'v1' }],
};

/** One group version's document as built, with what it was built from (kept while those stay the same). */
interface BuiltGroupVersion {
  members: readonly { rt: ResourceType; group: string }[];
  doc: Json;
  hash: string;
  custom: readonly string[];
}

/**
 * The documents of the last build, by group version: a build after a change (a custom resource
 * definition written) makes again only the documents whose kinds changed, and the v2 document reuses
 * its pieces of the others (openapi-v2.ts keeps them by document).
 */
export class OpenApiCache {
  readonly byGroupVersion = new Map<string, BuiltGroupVersion>();
}

/** Each document's JSON, made once with its hash and served as it is. */
const v3Bodies = new WeakMap<Json, Buffer>();

const sameMembers = (a: BuiltGroupVersion['members'], b: BuiltGroupVersion['members']): boolean => a.length === b.length && a.every((m, i) => m.rt === b[i]!.rt && m.group === b[i]!.group);

function buildGroupVersion(members: BuiltGroupVersion['members']): BuiltGroupVersion {
  const defs = new Map<string, Json>();
  const paths: Json = {};
  const custom: string[] = [];
  for (const { rt: source, group } of members) {
    const rt = group === source.group ? source : { ...source, group };
    const kindDef = (defineStruct(rt.schema, defs, !!rt.custom), defs.get(rt.schema.name)!);
    if (rt.custom) custom.push(rt.schema.name);
    kindDef['x-kubernetes-group-version-kind'] = [{ group: rt.group, kind: rt.kind, version: rt.version }];
    operations(rt, defs, paths);
  }
  defs.set('io.svc.apimachinery.pkg.apis.meta.v1.Status', statusSchema);
  toOpenApi(listMetaSchema, defs);
  const doc: Json = {
    openapi: '3.0.0',
    info: { title: 'svc-apiserver', version: 'v1.32.0' },
    paths,
    components: {
      schemas: Object.fromEntries([...defs.entries()].sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    },
  };
  const body = Buffer.from(JSON.stringify(doc));
  v3Bodies.set(doc, body);
  return { members, doc, hash: createHash('sha512').update(body).digest('hex').toUpperCase(), custom };
}

/**
 * `aliasOf`: the upstream spelling discovery advertises for a group, if any; that group version gets
 * a document of its own, with paths and group-version-kinds spelled as upstream spells them, so a
 * client validating an upstream manifest (kubectl apply of `storage.k8s.io/v1`) finds its schema.
 * `cache`: the previous build's documents, reused for group versions whose kinds are the same.
 */
export function buildOpenApi(types: readonly ResourceType[], aliasOf: (group: string) => string | undefined = () => undefined, cache = new OpenApiCache()): OpenApiDocs {
  const groups = new Map<string, { rt: ResourceType; group: string }[]>();
  const add = (rt: ResourceType, group: string) => {
    const key = group ? `apis/${group}/${rt.version}` : 'api/v1';
    let list = groups.get(key);
    if (!list) groups.set(key, (list = []));
    list.push({ rt, group });
  };
  for (const rt of types) add(rt, rt.group);
  for (const rt of types) {
    const alias = rt.group ? aliasOf(rt.group) : undefined;
    if (alias) add(rt, alias);
  }
  const byGroupVersion = new Map<string, Json>();
  const hashes = new Map<string, string>();
  const indexPaths: Json = {};
  const customDefinitions = new Set<string>();
  for (const [gv, members] of groups) {
    const had = cache.byGroupVersion.get(gv);
    const built = had && sameMembers(had.members, members) ? had : buildGroupVersion(members);
    cache.byGroupVersion.set(gv, built);
    byGroupVersion.set(gv, built.doc);
    hashes.set(gv, built.hash);
    for (const name of built.custom) customDefinitions.add(name);
    indexPaths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${built.hash}` };
  }
  for (const gv of cache.byGroupVersion.keys()) if (!groups.has(gv)) cache.byGroupVersion.delete(gv);
  return { index: { paths: indexPaths }, byGroupVersion, hashes, customDefinitions };
}

/** Routes serving the documents (`/openapi/v3` and one path per group version; `/openapi/v2`), 304 on a matching If-None-Match. */
export function openApiRoutes(docs: OpenApiDocs): Map<string, NonResourceRoute> {
  const routes = new Map<string, NonResourceRoute>();
  const index = Buffer.from(JSON.stringify(docs.index));
  routes.set('/openapi/v3', (s) => s.sink.send(200, 'application/json', index));
  for (const [gv, doc] of docs.byGroupVersion) {
    const body = v3Bodies.get(doc) ?? Buffer.from(JSON.stringify(doc));
    const etag = `"${docs.hashes.get(gv)}"`;
    routes.set(`/openapi/v3/${gv}`, (s) => {
      const headers: Record<string, string> = s.query.has('hash') ? { etag, 'cache-control': 'public, immutable' } : { etag };
      if (noneMatch(s.headers['if-none-match'], etag)) s.sink.send(304, 'application/json', new Uint8Array(0), headers);
      else s.sink.send(200, 'application/json', body, headers);
    });
  }
  routes.set('/openapi/v2', openApiV2Route(docs));
  return routes;
}
