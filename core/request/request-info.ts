/**
 * Request info: what a request is about, from its path, method and query alone (before any body is
 * read), for authorization, routing and audit. Follows upstream's rules:
 *   /api/v1/...                     core group        /apis/<group>/<version>/...  named groups
 *   .../namespaces/<ns>/<resource>[/<name>[/<subresource>]]
 *   .../<resource>[/<name>[/<subresource>]]            cluster-scoped or all namespaces
 *   .../watch/...                   deprecated watch path (verb watch)
 * GET on a collection is list (watch with a truthy `watch` query), DELETE on a collection is
 * deletecollection. Anything else is a non-resource request whose verb is the lower-case method.
 */
import { isValidPathSegmentName } from '../api/validation.js';
import { listOptionsFromQuery } from './list-options.js';
import { queryBool } from './query-params.js';

export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  /** create, get, list, watch, update, patch, delete, deletecollection; or the HTTP method for non-resource requests. */
  verb: string;
  apiPrefix: string;
  /** The canonical group (an alias in the path is mapped to it before authorization). */
  apiGroup: string;
  /** The group as the path spelled it (differs from apiGroup under an upstream alias); answers use it. */
  requestedGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /**
   * The path named a namespace around the resource (`/namespaces/<ns>/<resource>...`), as opposed to
   * a namespace object addressed as `/namespaces/<name>[/<subresource>]`. Routing serves only
   * namespaced kinds in the first form and cluster-scoped ones outside it, as upstream's routes do.
   */
  namespacedPath: boolean;
  /**
   * The verb came from the deprecated `/watch/` path prefix. Authorizers are then given no selectors,
   * as upstream: of its two watch routes there only the collection's reads them.
   */
  verbFromPath: boolean;
  /** The path segments after the API version and any namespace prefix (for routing). */
  parts: string[];
}

const methodVerbs: Readonly<Record<string, string>> = {
  POST: 'create',
  GET: 'get',
  HEAD: 'get',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** Subresources of a namespace reachable as /namespaces/<name>/<sub>. */
const namespaceSubresources = new Set(['status', 'finalize']);

/**
 * The name a list or watch is narrowed to by its field selector, as upstream reads it: the query read
 * as the list itself reads it (selectors parsed, terms sorted), the selector's first exact
 * `metadata.name` term. A query the list would refuse narrows nothing: the request is then judged for
 * the whole collection (and refused by the list).
 */
function fieldSelectorName(query: URLSearchParams): string | undefined {
  if (!query.has('fieldSelector')) return undefined;
  try {
    return listOptionsFromQuery(query).fieldSelector?.exactMatch('metadata.name');
  } catch {
    return undefined;
  }
}

export function requestInfoFor(method: string, path: string, query: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    requestedGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    namespacedPath: false,
    verbFromPath: false,
    parts: [],
  };
  let a = 0;
  let b = path.length;
  while (a < b && path.charCodeAt(a) === 47) a++;
  while (b > a && path.charCodeAt(b - 1) === 47) b--;
  let parts = a === b ? [] : path.slice(a, b).split('/');
  if (parts.length < 3) return info; // /, /api, /apis, /apis/<group>, /api/v1 (discovery)
  const prefix = parts[0];
  if (prefix !== 'api' && prefix !== 'apis') return info;
  info.apiPrefix = prefix;
  parts = parts.slice(1);
  if (prefix === 'apis') {
    if (parts.length < 3) return info; // /apis/<group>/<version> is discovery
    info.apiGroup = info.requestedGroup = parts[0]!;
    parts = parts.slice(1);
  }
  info.apiVersion = parts[0]!;
  parts = parts.slice(1);
  if (parts.length === 0) return info;

  info.isResourceRequest = true;
  info.verb = methodVerbs[method] ?? method.toLowerCase();
  // the deprecated /watch/ prefix makes the verb watch whatever the method, as upstream's request info
  // (its routes take GET only: resolve answers other methods 405)
  if (parts[0] === 'watch') {
    info.verb = 'watch';
    info.verbFromPath = true;
    parts = parts.slice(1);
  }

  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1]!;
      // /namespaces/<ns>/<resource>...: the resource is the next segment, unless it is a
      // subresource of the namespace itself
      if (parts.length > 2 && !namespaceSubresources.has(parts[2]!)) {
        parts = parts.slice(2);
        info.namespacedPath = true;
      }
    }
  }
  info.parts = parts;
  info.resource = parts[0] ?? '';
  if (parts.length >= 2) info.name = parts[1]!;
  if (parts.length >= 3) info.subresource = parts[2]!;

  if (info.name === '' && info.verb === 'get') {
    info.verb = queryBool(query.get('watch')) ? 'watch' : 'list';
    const byName = fieldSelectorName(query);
    if (byName !== undefined && isValidPathSegmentName(byName).length === 0) info.name = byName;
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';
  return info;
}
