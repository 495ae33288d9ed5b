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
import { parseFieldSelector, parseLabelSelector } from '../api/selectors.js';
import { isValidPathSegmentName } from '../api/validation.js';

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
 * Upstream's reading of a boolean query parameter (its parameter codec): absent is false, `0` and
 * `false` in any case are false, every other value (`f`, `no`, the empty string) is true.
 */
export function queryBool(v: string | null | undefined): boolean {
  if (v === null || v === undefined) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

/** Go's strconv.ParseBool, which upstream applies to `pretty`; undefined where it reports an error. */
export function parseGoBool(v: string): boolean | undefined {
  switch (v) {
    case '1': case 't': case 'T': case 'true': case 'TRUE': case 'True':
      return true;
    case '0': case 'f': case 'F': case 'false': case 'FALSE': case 'False':
      return false;
    default:
      return undefined;
  }
}

/** Integer list options as upstream's parameter codec reads them (strconv.ParseInt); empty is unset. */
const integerListOptions = ['limit', 'timeoutSeconds'];

/**
 * Whether the query decodes as upstream's ListOptions: its selectors parse and its integers are
 * integers. Upstream narrows a list to a name only from a query that decodes; one that does not is
 * authorized for the whole collection (and then refused by the list itself).
 */
function listOptionsDecode(query: URLSearchParams): boolean {
  for (const k of integerListOptions) {
    const v = query.get(k);
    if (v !== null && v !== '' && !/^[+-]?\d+$/.test(v)) return false;
  }
  const labels = query.get('labelSelector');
  try {
    if (labels) parseLabelSelector(labels);
  } catch {
    return false;
  }
  return true;
}

/**
 * The name a list or watch is narrowed to by its field selector, as upstream reads it: the selector
 * parsed as the list will parse it (terms sorted), its first exact `metadata.name` term, when the
 * whole query decodes.
 */
function fieldSelectorName(query: URLSearchParams): string | undefined {
  const sel = query.get('fieldSelector');
  if (!sel) return undefined;
  let name: string | undefined;
  try {
    name = parseFieldSelector(sel).exactMatch('metadata.name');
  } catch {
    return undefined;
  }
  return name !== undefined && listOptionsDecode(query) ? name : undefined;
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
