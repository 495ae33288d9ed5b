/**
 * The authorization matrix's own model of upstream v1.32, written from upstream's sources and never
 * from this server's (test/integration/authz-matrix.test.ts compares the server against it):
 *
 * - request attributes from a request line, as upstream's RequestInfoFactory derives them
 *   (staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go): the path as Go's URL.Path
 *   holds it (percent-decoded, `%2F` included), the `watch`/`proxy` path prefix setting the verb
 *   whatever the method, `/namespaces/<ns>/<resource>...` unless the segment after the namespace is
 *   one of a namespace's own subresources (`status`, `finalize`), GET of a collection list or watch by
 *   the parameter codec's boolean reading of `watch`, the name of a list or watch from its field
 *   selector's exact `metadata.name` term, DELETE of a collection deletecollection;
 * - RBAC decisions as upstream's RBAC authorizer makes them (plugin/pkg/auth/authorizer/rbac and
 *   pkg/apis/rbac/v1/evaluation_helpers.go): ClusterRoleBindings everywhere, RoleBindings in their own
 *   namespace only, verbs and groups with `*`, resources `*`, `<res>/<sub>` and `*\/<sub>`,
 *   resourceNames never matching a request without a name, non-resource URLs with a trailing `*`;
 *   plus this server's one documented addition (README, group aliases): a rule's `x.k8s.io` names the
 *   served `x.svc.io` and the other way round (requests under either spelling are one group);
 * - the answer upstream's routes (apiserver's installer.go) give a request that was allowed: a
 *   namespaced kind's objects only under `/namespaces/<ns>/`, its collection also across namespaces
 *   for list and watch only; a cluster-scoped kind never under a namespace; `/watch/` paths for GET
 *   only; subresources by their own verbs.
 *
 * Roles are data: the test's own, and the default ClusterRoles read from the server as objects.
 */

// ---------------------------------------------------------------- request attributes

export interface Attrs {
  isResourceRequest: boolean;
  /** The decoded path (Go's URL.Path). */
  path: string;
  verb: string;
  apiPrefix: string;
  /** The group as the path spells it. */
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /** What is left of the path once prefix, group, version, verb prefix and namespace are taken. */
  parts: string[];
  /** The path named a namespace around a resource (`/namespaces/<ns>/<resource>...`). */
  namespaceAround: boolean;
  /** The verb came from a `/watch/` (or `/proxy/`) path prefix. */
  verbFromPath: boolean;
}

/**
 * Go's unescaping of a request path (url.PathUnescape's rules, which URL.Path follows): every `%XX`
 * becomes its byte, `+` stays; a `%` not followed by two hex digits makes the request line invalid
 * (undefined: Go's server answers 400 before any handler).
 */
export function goUnescapePath(raw: string): string | undefined {
  if (!raw.includes('%')) return raw;
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x25) {
      const h = raw.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(h)) return undefined;
      bytes.push(parseInt(h, 16));
      i += 2;
    } else {
      for (const b of Buffer.from(raw[i]!, 'utf8')) bytes.push(b);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The parameter codec's reading of a boolean query value (Convert_Slice_string_To_bool). */
export function codecBool(v: string | null): boolean {
  if (v === null) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

/** apimachinery's path.IsValidPathSegmentName: not `.` or `..`, no `/` or `%`. */
export const validPathSegmentName = (n: string): boolean => n !== '.' && n !== '..' && !n.includes('/') && !n.includes('%');

/**
 * fields.ParseSelector then RequiresExactMatch("metadata.name"): terms split at unescaped commas and
 * sorted as strings, each `<field><op><value>` at its first operator (`!=`, `==`, `=`, tried in that
 * order at each position), values unescaped (`\\`, `\,`, `\=` only); undefined when the selector does
 * not parse or has no exact name term.
 */
export function selectorExactName(sel: string): string | undefined {
  const terms: string[] = [];
  let cur = '';
  for (let i = 0; i < sel.length; i++) {
    const ch = sel[i]!;
    if (ch === '\\' && i + 1 < sel.length) {
      cur += ch + sel[i + 1];
      i++;
    } else if (ch === ',') {
      terms.push(cur);
      cur = '';
    } else cur += ch;
  }
  terms.push(cur);
  terms.sort();
  let found: string | undefined;
  for (const term of terms) {
    if (term === '') continue;
    let op = '';
    let at = -1;
    for (let i = 0; i < term.length && at < 0; i++) {
      for (const o of ['!=', '==', '=']) {
        if (term.startsWith(o, i)) {
          op = o;
          at = i;
          break;
        }
      }
    }
    if (at < 0) return undefined;
    const field = term.slice(0, at);
    const raw = term.slice(at + op.length);
    let value = '';
    for (let i = 0; i < raw.length; i++) {
      if (raw[i] === '\\') {
        const n = raw[i + 1];
        if (n !== '\\' && n !== ',' && n !== '=') return undefined;
        value += n;
        i++;
      } else if (raw[i] === ',' || raw[i] === '=') return undefined;
      else value += raw[i];
    }
    if (found === undefined && field === 'metadata.name' && op !== '!=') found = value;
  }
  return found;
}

const METHOD_VERBS: Readonly<Record<string, string>> = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** Upstream's request attributes of `method` on `rawPath?rawQuery` (rawPath as sent); undefined: a 400 request line. */
export function upstreamAttributes(method: string, rawPath: string, rawQuery = ''): Attrs | undefined {
  const path = goUnescapePath(rawPath);
  if (path === undefined) return undefined;
  const query = new URLSearchParams(rawQuery);
  const a: Attrs = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    parts: [],
    namespaceAround: false,
    verbFromPath: false,
  };
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  let parts = trimmed === '' ? [] : trimmed.split('/');
  if (parts.length < 3 || (parts[0] !== 'api' && parts[0] !== 'apis')) return a;
  a.apiPrefix = parts[0]!;
  parts = parts.slice(1);
  if (a.apiPrefix === 'apis') {
    if (parts.length < 3) return a;
    a.apiGroup = parts[0]!;
    parts = parts.slice(1);
  }
  a.isResourceRequest = true;
  a.apiVersion = parts[0]!;
  parts = parts.slice(1);
  if (parts[0] === 'watch' || parts[0] === 'proxy') {
    // (fewer than two parts after it is an error upstream; the matrix never sends one)
    a.verb = parts[0];
    a.verbFromPath = true;
    parts = parts.slice(1);
  } else a.verb = METHOD_VERBS[method] ?? '';
  if (parts[0] === 'namespaces' && parts.length > 1) {
    a.namespace = parts[1]!;
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) {
      parts = parts.slice(2);
      a.namespaceAround = true;
    }
  }
  a.parts = parts;
  if (parts.length >= 3 && a.verb !== 'proxy') a.subresource = parts[2]!;
  if (parts.length >= 2) a.name = parts[1]!;
  if (parts.length >= 1) a.resource = parts[0]!;
  if (a.name === '' && a.verb === 'get') {
    a.verb = codecBool(query.get('watch')) ? 'watch' : 'list';
    const fs = query.get('fieldSelector');
    const n = fs ? selectorExactName(fs) : undefined;
    if (n !== undefined && validPathSegmentName(n)) a.name = n;
  }
  if (a.name === '' && a.verb === 'delete') a.verb = 'deletecollection';
  return a;
}

// ---------------------------------------------------------------- RBAC

export interface Rule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface Subject {
  kind: string;
  name: string;
}

export interface Binding {
  /** Set for a RoleBinding, absent for a ClusterRoleBinding. */
  namespace?: string;
  roleRef: { kind: 'Role' | 'ClusterRole'; name: string };
  subjects: Subject[];
}

export interface ModelUser {
  name: string;
  /** Groups as authentication gives them (system:authenticated included). */
  groups: string[];
}

export class RbacModel {
  readonly roles = new Map<string, Rule[]>();
  readonly clusterRoles = new Map<string, Rule[]>();
  readonly bindings: Binding[] = [];

  /** `canonical`: the one name of a served group (`x.k8s.io` of a served `x.svc.io` is `x.svc.io`). */
  constructor(private readonly canonical: (group: string) => string) {}

  role(namespace: string, name: string, rules: Rule[]): void {
    this.roles.set(`${namespace}/${name}`, rules);
  }

  private rulesOf(b: Binding): Rule[] {
    return (b.roleRef.kind === 'Role' ? this.roles.get(`${b.namespace}/${b.roleRef.name}`) : this.clusterRoles.get(b.roleRef.name)) ?? [];
  }

  private groupMatches(ruleGroup: string, group: string): boolean {
    return ruleGroup === '*' || ruleGroup === group || this.canonical(ruleGroup) === this.canonical(group);
  }

  ruleAllows(r: Rule, a: Attrs): boolean {
    if (!r.verbs.some((v) => v === '*' || v === a.verb)) return false;
    if (!a.isResourceRequest) {
      return (r.nonResourceURLs ?? []).some((u) => u === '*' || u === a.path || (u.endsWith('*') && a.path.startsWith(u.slice(0, -1))));
    }
    if (!(r.apiGroups ?? []).some((g) => this.groupMatches(g, a.apiGroup))) return false;
    const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const resOk = (r.resources ?? []).some(
      (res) => res === '*' || res === combined || (a.subresource !== '' && res.length === a.subresource.length + 2 && res.startsWith('*/') && res.endsWith(a.subresource)),
    );
    if (!resOk) return false;
    return !r.resourceNames?.length || r.resourceNames.includes(a.name);
  }

  /** Whether RBAC allows `u` the request `a` (nothing else in the chain grants our users anything). */
  allows(u: ModelUser, a: Attrs): boolean {
    for (const b of this.bindings) {
      if (b.namespace !== undefined && (a.namespace === '' || b.namespace !== a.namespace)) continue;
      if (!b.subjects.some((s) => (s.kind === 'User' && s.name === u.name) || (s.kind === 'Group' && u.groups.includes(s.name)))) continue;
      if (this.rulesOf(b).some((r) => this.ruleAllows(r, a))) return true;
    }
    return false;
  }
}

// ---------------------------------------------------------------- routes

export interface ServedKind {
  /** Canonical group ('' for core). */
  group: string;
  /** Every spelling the group is served under (canonical first). */
  spellings: string[];
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  verbs: Set<string>;
  /** Subresource -> its verbs. */
  subresources: Map<string, Set<string>>;
}

export interface ServedTypes {
  get(group: string, version: string, resource: string): ServedKind | undefined;
  canonical(group: string): string;
}

const SUB_METHOD_VERB: Readonly<Record<string, string>> = { GET: 'get', PUT: 'update', PATCH: 'patch', POST: 'create' };
const OBJ_METHOD_VERB: Readonly<Record<string, string>> = { GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/**
 * Upstream's answer to an allowed resource request: 404 where no route has the path, 405 where one
 * has it for other methods, else the operation's code (`exists`: whether the named object is there).
 */
export function routeAnswer(types: ServedTypes, a: Attrs, method: string, exists: boolean): number {
  if (!a.isResourceRequest) return 404;
  const t = types.get(types.canonical(a.apiGroup), a.apiVersion, a.resource);
  if (!t) return 404;
  const parts = a.parts;
  if (parts.length > 3) return 404;
  if (t.namespaced ? parts.length > 1 && !a.namespaceAround : a.namespaceAround) return 404;
  const name = parts[1] ?? '';
  const sub = parts[2] ?? '';
  if (a.verbFromPath) {
    // WATCH and WATCHLIST routes: the kind's objects and collections, GET only
    if (sub || !t.verbs.has('watch') || a.verb !== 'watch') return 404;
    return method === 'GET' || method === 'HEAD' ? 200 : 405;
  }
  if (sub) {
    const sv = t.subresources.get(sub);
    if (!sv) return 404;
    const want = SUB_METHOD_VERB[method];
    if (!want || !sv.has(want)) return 405;
    if (!exists) return 404;
    return method === 'POST' ? 201 : 200;
  }
  if (name) {
    if (!['get', 'update', 'patch', 'delete'].some((v) => t.verbs.has(v))) return 404;
    const want = OBJ_METHOD_VERB[method];
    if (!want || !t.verbs.has(want)) return 405;
    return exists ? 200 : 404;
  }
  // a namespaced kind across all namespaces: LIST and WATCHLIST only
  const acrossNamespaces = t.namespaced && !a.namespaceAround;
  switch (method) {
    case 'GET':
    case 'HEAD':
      return t.verbs.has(a.verb) ? 200 : 405;
    case 'POST':
      return !acrossNamespaces && t.verbs.has('create') ? 201 : 405;
    case 'DELETE':
      return !acrossNamespaces && t.verbs.has('deletecollection') ? 200 : 405;
    default:
      return 405;
  }
}
