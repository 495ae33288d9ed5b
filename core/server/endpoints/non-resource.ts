/**
 * Non-resource endpoints: health (/livez, /readyz, /healthz and their per-check paths), /version,
 * discovery documents, and extra routes registered by path (OpenAPI). Only GET and HEAD are served.
 */
import type { MaybePromise } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import { negotiateOutput, offeredMediaTypes, type OutputOffer } from '../../codec/negotiate.js';
import { encodeValueIn } from '../../registry/respond.js';
import type { Endpoint, Health } from '../../health/health.js';
import type { Handler } from '../chain.js';
import type { DiscoveryDocs } from '../discovery.js';
import type { RequestScope } from '../scope.js';
import { headerOf, isPretty } from './resource.js';

export type NonResourceRoute = (s: RequestScope) => MaybePromise<void>;

export interface NonResourceDeps {
  health: Health;
  version: Record<string, string>;
  discovery: DiscoveryDocs;
  /** More routes by exact path (OpenAPI documents). */
  routes: ReadonlyMap<string, NonResourceRoute>;
}

const healthEndpoints = new Set(['livez', 'readyz', 'healthz']);
/** Discovery documents: JSON, YAML or protobuf (meta/v1 APIVersions, APIGroupList, APIGroup, APIResourceList). */
const discoveryOffer: OutputOffer = { stream: false, protobuf: true, cbor: false, transforms: 'none' };
/** /version has no protobuf message upstream. */
const versionOffer: OutputOffer = { ...discoveryOffer, protobuf: false };

export function nonResourceEndpoint(d: NonResourceDeps): Handler {
  const health = async (s: RequestScope, endpoint: Endpoint, check: string): Promise<void> => {
    const r = await d.health.run(endpoint, check, s.query);
    s.sink.send(r.code, 'text/plain; charset=utf-8', Buffer.from(r.body), { 'x-content-type-options': 'nosniff' });
  };

  return (s) => {
    const path = s.path.length > 1 && s.path.endsWith('/') ? s.path.slice(0, -1) : s.path;
    const [, first = '', ...rest] = path.split('/');
    const readOnly = s.method === 'GET' || s.method === 'HEAD';
    if (healthEndpoints.has(first)) {
      if (!readOnly) throw errors.methodNotAllowed();
      return health(s, first as Endpoint, rest.join('/'));
    }
    const route = d.routes.get(path);
    if (route) return route(s);
    const doc = path === '/version' ? d.version : d.discovery.byPath.get(path);
    if (doc === undefined) throw errors.pathNotFound();
    if (!readOnly) throw errors.methodNotAllowed();
    const offer = path === '/version' ? versionOffer : discoveryOffer;
    const choice = negotiateOutput(headerOf(s, 'accept'), offer);
    if (!choice) throw errors.notAcceptable(offeredMediaTypes(offer));
    s.form = { mediaType: choice.serializer.mediaType, contentType: choice.contentType, pretty: isPretty(s.query, headerOf(s, 'user-agent')) };
    s.sink.send(200, s.form.contentType, encodeValueIn(s.form, doc as Record<string, unknown>));
  };
}

/** The terminal handler: resource requests to the resource endpoint, the rest to the non-resource one. */
export function route(resource: Handler, nonResource: Handler): Handler {
  return (s) => (s.info.isResourceRequest ? resource(s) : nonResource(s));
}
