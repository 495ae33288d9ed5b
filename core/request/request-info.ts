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
  /** The path segments after the API version (for routing). */
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

/** Upstream's reading of boolean query values: absent false; `0`, `f`, `false` false; anything else true. */
export function queryBool(v: string | null | undefined): boolean {
  if (v === null || v === undefined) return false;
  const l = v.toLowerCase();
  return !(l === '0' || l === 'f' || l === 'false');
}

/** Exact `metadata.name=<v>` requirement of a field selector, if it is one of its terms. */
function fieldSelectorName(sel: string | null): string | undefined {
  if (!sel) return undefined;
  for (const term of sel.split(',')) {
    const m = /^\s*metadata\.name\s*(==|=)\s*(.*?)\s*$/.exec(term);
    if (m && !m[2]!.includes('\\')) return m[2];
  }
  return undefined;
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
  if (parts[0] === 'watch' && (method === 'GET' || method === 'HEAD')) {
    info.verb = 'watch';
    parts = parts.slice(1);
  }

  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1]!;
      // /namespaces/<ns>/<resource>...: the resource is the next segment, unless it is a
      // subresource of the namespace itself
      if (parts.length > 2 && !namespaceSubresources.has(parts[2]!)) parts = parts.slice(2);
    }
  }
  info.parts = parts;
  info.resource = parts[0] ?? '';
  if (parts.length >= 2) info.name = parts[1]!;
  if (parts.length >= 3) info.subresource = parts[2]!;

  if (info.name === '' && info.verb === 'get') {
    info.verb = queryBool(query.get('watch')) ? 'watch' : 'list';
    const byName = fieldSelectorName(query.get('fieldSelector'));
    if (byName !== undefined && isValidPathSegmentName(byName).length === 0) info.name = byName;
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';
  return info;
}
