/**
 * Non-resource endpoints: health (/livez, /readyz, /healthz and their per-check paths), /version,
 * discovery documents, and extra routes registered by path (OpenAPI). Only GET and HEAD are served.
 */
import { errors } from '../../api/status.js';
import { negotiateOutput, offeredMediaTypes, type OutputOffer } from '../../codec/negotiate.js';
import { encodeValueIn } from '../../registry/respond.js';
import type { Endpoint, Health } from '../../health/health.js';
import type { Handler } from '../chain.js';
import { aggregatedDiscoveryAsked, type DiscoveryDocs } from '../discovery.js';
import { parseAccept } from '../../codec/media-types.js';
import type { NonResourceRoute } from '../../request/routes.js';
import type { RequestScope } from '../../request/scope.js';
import { headerOf, isPretty } from './resource.js';


export interface NonResourceDeps {
  health: Health;
  version: Record<string, string>;
  /** The discovery documents of the types served now. */
  discovery(): DiscoveryDocs;
  /** More routes by exact path (OpenAPI documents of the types served now). */
  routes(): ReadonlyMap<string, NonResourceRoute>;
}

const healthEndpoints = new Set(['livez', 'readyz', 'healthz']);
/** Discovery documents: JSON, YAML or protobuf (meta/v1 APIVersions, APIGroupList, APIGroup, APIResourceList). */
const discoveryOffer: OutputOffer = { stream: false, protobuf: true, cbor: false, transforms: 'none' };
/** /version has no protobuf message upstream. */
const versionOffer: OutputOffer = { ...discoveryOffer, protobuf: false };

/** Aggregated discovery in the group and version asked, as upstream answers it (JSON, Vary: Accept). */
function sendAggregated(s: RequestScope, items: unknown[], asked: { group: string; version: string }): void {
  const contentType = `application/json;g=${asked.group};v=${asked.version};as=APIGroupDiscoveryList`;
  s.form = { mediaType: 'application/json', contentType, pretty: isPretty(s.query, headerOf(s, 'user-agent')) };
  const doc = { kind: 'APIGroupDiscoveryList', apiVersion: `${asked.group}/${asked.version}`, metadata: {}, items };
  s.sink.send(200, contentType, encodeValueIn(s.form, doc), { vary: 'Accept' });
}

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
    const route = d.routes().get(path);
    if (route) return route(s);
    if ((path === '/api' || path === '/apis') && readOnly) {
      const asked = aggregatedDiscoveryAsked(parseAccept(headerOf(s, 'accept')));
      if (asked) return sendAggregated(s, d.discovery().aggregated[path === '/api' ? 'api' : 'apis'], asked);
    }
    const doc = path === '/version' ? d.version : d.discovery().byPath.get(path);
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
