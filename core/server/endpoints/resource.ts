/**
 * The resource endpoint, transport-neutral: resolves the request to a served resource type (404, 405),
 * negotiates the response media type (406), then serves it:
 *   get            from the watch cache, in the request's own tick when the cache is fresh enough
 *   list           from the watch cache, or the store's history as a registry task
 *   watch          a WatchStream over the watch cache, writing frames to the scope's sink
 *   writes         the body as a registry task (decode, validate, merge, store, encode on the pool)
 */
import { isPromise, type MaybePromise } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import { negotiateOutput, offeredMediaTypes, type OutputOffer } from '../../codec/negotiate.js';
import { serializerFor } from '../../codec/serializer.js';
import { serializerOf, typeInfoOf } from '../../registry/respond.js';
import { includeObjectFromQuery } from '../../registry/transform.js';
import type { WatchForm } from '../object-encoding.js';
import type { RegistryClient } from '../../registry/client.js';
import { resourceId } from '../../registry/context.js';
import { allVerbs, type ResourceType, type Verb } from '../../registry/resource-type.js';
import { parseGoBool } from '../../request/query-params.js';
import type { ApiTask, ResponseForm, TaskVerb } from '../../registry/task.js';
import type { Handler } from '../chain.js';
import type { ResolvedRequest } from '../../request/routes.js';
import type { RequestScope } from '../../request/scope.js';
import { getFromCache, listFromCache, parseListOptions, type ReadContext } from './reads.js';
import { serveVirtual, type VirtualDeps } from './virtual.js';
import { type WatchSettings, WatchStream, watchFilter } from './watch.js';

export interface ResourceEndpointDeps {
  /** Served resource types by `group/version/plural`. */
  types: TypeLookup;
  read: ReadContext;
  watch: WatchSettings;
  registry: RegistryClient;
  maxRequestBodyBytes: number;
  /** Handlers of virtual resources (reviews). */
  virtual: VirtualDeps;
  /** CBOR is served (feature gate CBORServingAndStorage). */
  cbor: boolean;
  /** Told of every request to a deprecated version (metrics, audit annotations). */
  deprecated?: (s: RequestScope, r: ResolvedRequest) => void;
}


/**
 * Upstream pretty-prints when ?pretty is true (Go's ParseBool, not the parameter codec: `pretty=f` is
 * not pretty, `pretty=yes` neither), or for curl, Wget and browsers when it is unset or empty.
 */
export function isPretty(query: URLSearchParams, userAgent: string | undefined): boolean {
  const p = query.get('pretty');
  if (p) return parseGoBool(p) === true;
  if (!userAgent) return false;
  return userAgent.startsWith('curl') || userAgent.startsWith('Wget') || userAgent.startsWith('Mozilla/5.0');
}

export const headerOf = (s: RequestScope, name: string): string | undefined => {
  const v = s.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** Which served resource and verb a resource request names; 404 / 405 otherwise. */
/** What resolving needs of the type registry. */
export interface TypeLookup {
  get(id: string): ResourceType | undefined;
}

export function resolve(types: TypeLookup, s: RequestScope): ResolvedRequest {
  const info = s.info;
  const rt = types.get(`${info.apiGroup}/${info.apiVersion}/${info.resource}`);
  if (!rt) throw errors.pathNotFound();
  const parts = info.parts;
  // Upstream's routes: a namespaced kind's objects only under /namespaces/<ns>/ (its collection also
  // across all namespaces), a cluster-scoped kind's never there. Authorization judged the namespace
  // the path named, so serving any other form would serve what was not authorized.
  if (parts.length > 3 || (rt.namespaced ? parts.length > 1 && !info.namespacedPath : info.namespacedPath)) {
    throw errors.pathNotFound();
  }
  const name = parts[1] ?? '';
  const subresource = parts[2] ?? '';
  const subDef = subresource ? rt.subresources?.[subresource] : undefined;
  if (subresource && !subDef) throw errors.pathNotFound();
  const verb = info.verb as Verb;
  const served = subDef ? subDef.verbs : (rt.verbs ?? allVerbs);
  const method = s.method;
  // a POST names an object only to create through one of its virtual subresources (serviceaccounts/x/token)
  const postsToObject = name !== '' && method === 'POST' && !subDef?.kind;
  if (!served.includes(verb) || (name === '' && (method === 'PUT' || method === 'PATCH')) || postsToObject) throw errors.methodNotAllowed();
  // a /watch/ path is authorized as a watch for any method; only GET is served there
  if (verb === 'watch' && method !== 'GET' && method !== 'HEAD') throw errors.methodNotAllowed();
  // across all namespaces a namespaced kind is only listed and watched: upstream routes no POST or DELETE there
  if ((verb === 'create' || verb === 'deletecollection') && rt.namespaced && !info.namespace) throw errors.methodNotAllowed();
  // namespace objects are addressed as /namespaces/<name>: the request namespace is the object's name
  return { verb, rt, namespace: rt.namespaced ? info.namespace : '', name, subresource };
}

/** What this request's answer may be written as. */
function offerFor(rt: ResourceType, verb: Verb, cbor: boolean): OutputOffer {
  const reads = verb === 'get' || verb === 'list' || verb === 'watch';
  return {
    stream: verb === 'watch',
    protobuf: !!rt.protobufPackage,
    cbor: cbor && serializerFor('application/cbor') !== undefined,
    transforms: !reads ? 'none' : verb === 'list' ? 'list' : 'object',
  };
}

/** Sets the scope's response form; 406 when nothing acceptable is served. */
export function negotiate(s: RequestScope, rt: ResourceType, verb: Verb, cbor: boolean): void {
  const pretty = isPretty(s.query, headerOf(s, 'user-agent'));
  const offer = offerFor(rt, verb, cbor);
  const choice = negotiateOutput(headerOf(s, 'accept'), offer);
  if (!choice) throw errors.notAcceptable(offeredMediaTypes(offer));
  const form: ResponseForm = { mediaType: choice.serializer.mediaType, contentType: choice.contentType, pretty };
  if (choice.transform) form.transform = { ...choice.transform, includeObject: includeObjectFromQuery(s.query) };
  // the path spelled the group as upstream does: the answer spells it so too
  if (s.info.requestedGroup !== s.info.apiGroup) form.respell = { from: s.info.apiGroup, to: s.info.requestedGroup };
  s.form = form;
}

/** The Content-Type of each object in a watch stream of `streamType` (its stream parameter dropped). */
export function objectContentType(streamType: string): string {
  const t = streamType.replace(/;stream=watch/, '');
  return t.startsWith('application/cbor-seq') ? `application/cbor${t.slice('application/cbor-seq'.length)}` : t;
}

export function resourceEndpoint(d: ResourceEndpointDeps): Handler {
  const taskFor = (s: RequestScope, r: ResolvedRequest, verb: TaskVerb, body: Buffer | undefined): ApiTask => {
    const task: ApiTask = {
      verb,
      resource: resourceId(r.rt),
      subresource: r.subresource,
      namespace: r.namespace,
      name: r.name,
      query: s.rawQuery,
      contentType: headerOf(s, 'content-type') ?? '',
      form: s.form,
      user: s.user,
      userAgent: headerOf(s, 'user-agent') ?? '',
    };
    if (body && body.length) task.body = body;
    if (r.rt.custom) task.definition = { name: r.rt.custom.definition, revision: r.rt.custom.revision };
    return task;
  };

  const runTask = async (s: RequestScope, r: ResolvedRequest, verb: TaskVerb, body: Buffer | undefined): Promise<void> => {
    const result = await d.registry.run(taskFor(s, r, verb, body));
    if (result.auditAnnotations && s.audit) for (const [k, v] of Object.entries(result.auditAnnotations)) s.audit.annotate(k, v);
    s.sink.send(result.code, result.contentType, result.body, result.headers, s.warnings.length ? [...s.warnings, ...result.warnings] : result.warnings);
  };

  const get = (s: RequestScope, r: ResolvedRequest): MaybePromise<void> => {
    const body = getFromCache(d.read, r.rt, r.namespace, r.name, s.query, s.form, r.subresource ? r.rt.subresources?.[r.subresource]?.view : undefined);
    const sent = (b: Uint8Array): void => s.sink.send(200, s.form.contentType, b, undefined, s.warnings);
    return isPromise(body) ? body.then(sent) : sent(body);
  };

  const list = async (s: RequestScope, r: ResolvedRequest): Promise<void> => {
    const o = parseListOptions(r.rt, s.query);
    const page = await listFromCache(d.read, r.rt, r.namespace, o, s.form);
    if (page.kind === 'stream') return s.sink.sendChunks(200, s.form.contentType, page.chunks, s.warnings);
    return runTask(s, r, 'list', undefined);
  };

  const watch = (s: RequestScope, r: ResolvedRequest): Promise<void> => {
    const o = parseListOptions(r.rt, s.query);
    const form: WatchForm = { serializer: serializerOf(s.form), typeInfo: typeInfoOf(r.rt, s.form.respell), pretty: false };
    if (s.form.transform) form.transform = s.form.transform;
    if (s.form.respell) form.respell = s.form.respell;
    if (s.sink.watchFraming) form.framing = s.sink.watchFraming(objectContentType(s.form.contentType));
    const t = { rt: r.rt, namespace: r.namespace, name: r.name, form, contentType: s.form.contentType };
    return new WatchStream(d.watch, t, o, watchFilter(t, o), s.sink).start();
  };

  const write = async (s: RequestScope, r: ResolvedRequest): Promise<void> => {
    if (r.rt.virtual || r.rt.subresources?.[r.subresource]?.kind) return serveVirtual(d.virtual, s, r, headerOf(s, 'content-type') ?? '');
    const body = await s.readBody(d.maxRequestBodyBytes);
    return runTask(s, r, r.verb as TaskVerb, body);
  };

  return (s) => {
    const r = resolve(d.types, s);
    if (r.rt.deprecationWarning) {
      s.warnings.push(r.rt.deprecationWarning);
      d.deprecated?.(s, r);
    }
    negotiate(s, r.rt, r.verb, d.cbor);
    switch (r.verb) {
      case 'get':
        return get(s, r);
      case 'list':
        return list(s, r);
      case 'watch':
        return watch(s, r);
      default:
        return write(s, r);
    }
  };
}
