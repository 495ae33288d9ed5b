/**
 * Stage: impersonation (upstream's WithImpersonation), after authentication and before the in-flight
 * limits and authorization. Impersonate-User, Impersonate-Group (one group per header),
 * Impersonate-Uid and Impersonate-Extra-<key> (the key lower-cased and %-decoded) each need the
 * caller to be allowed the verb `impersonate` on, in turn:
 *   users/<name>, or serviceaccounts/<name> in <namespace> for system:serviceaccount:<ns>:<name>
 *   groups/<name>
 *   userextras/<key> named by the value, in authentication.svc.io
 *   uids/<uid>, in authentication.svc.io
 * The first refusal is a 403 worded as upstream's. Then the request is served as the impersonated
 * user: a service account gets its groups when none are named; every user but system:anonymous gets
 * system:authenticated unless system:authenticated or system:unauthenticated is named, and
 * system:anonymous gets system:unauthenticated.
 */
import { isPromise, type MaybePromise } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import type { UserInfo } from '../../api/types.js';
import { ALL_AUTHENTICATED, ANONYMOUS_USER, type Headers, type HeaderValue, UNAUTHENTICATED } from '../../authn/authenticator.js';
import { serviceAccountGroups, serviceAccountUsername, splitServiceAccountUsername } from '../../authn/service-account.js';
import type { Attributes, Authorizer } from '../../authz/authorizer.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../../request/scope.js';
import { forbidden } from './authorize.js';

const USER = 'impersonate-user';
const GROUP = 'impersonate-group';
const UID = 'impersonate-uid';
const EXTRA_PREFIX = 'impersonate-extra-';
const AUTHENTICATION_GROUP = 'authentication.svc.io';

/** One thing to impersonate, as the attributes the caller must be allowed. */
interface ImpersonationRequest {
  what: string;
  resource: 'users' | 'serviceaccounts' | 'groups' | 'userextras' | 'uids';
  apiGroup: string;
  namespace: string;
  name: string;
  subresource: string;
}

const values = (v: HeaderValue): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const first = (v: HeaderValue): string => values(v)[0] ?? '';

/** Go's url.PathUnescape, keeping the key as sent when it is not valid %-encoding. */
function unescapeKey(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** What the headers ask to impersonate, in upstream's order (user, groups, extras, uid); empty when nothing. */
export function impersonationRequests(headers: Headers): ImpersonationRequest[] {
  const out: ImpersonationRequest[] = [];
  const user = first(headers[USER]);
  if (user) {
    const sa = splitServiceAccountUsername(user);
    out.push(
      sa
        ? { what: `ServiceAccount ${sa.namespace}/${sa.name}`, resource: 'serviceaccounts', apiGroup: '', namespace: sa.namespace, name: sa.name, subresource: '' }
        : { what: `User ${JSON.stringify(user)}`, resource: 'users', apiGroup: '', namespace: '', name: user, subresource: '' },
    );
  }
  for (const g of values(headers[GROUP])) out.push({ what: `Group ${JSON.stringify(g)}`, resource: 'groups', apiGroup: '', namespace: '', name: g, subresource: '' });
  for (const header in headers) {
    if (!header.startsWith(EXTRA_PREFIX)) continue;
    const key = unescapeKey(header.slice(EXTRA_PREFIX.length).toLowerCase());
    for (const v of values(headers[header])) {
      out.push({ what: `UserExtra ${key}=${JSON.stringify(v)}`, resource: 'userextras', apiGroup: AUTHENTICATION_GROUP, namespace: '', name: v, subresource: key });
    }
  }
  const uid = first(headers[UID]);
  if (uid) out.push({ what: `UID ${JSON.stringify(uid)}`, resource: 'uids', apiGroup: AUTHENTICATION_GROUP, namespace: '', name: uid, subresource: '' });
  if (!user && out.length) {
    // upstream answers 500 here; it is the client's mistake, so 400
    throw errors.badRequest(`requested [${out.map((r) => r.what).join(', ')}] without impersonating a user`);
  }
  return out;
}

/** The user the request is served as once every impersonation was allowed. */
export function impersonatedUser(requests: readonly ImpersonationRequest[], groupsNamed: boolean): UserInfo {
  let username = '';
  let uid = '';
  let groups: string[] = [];
  const extra: Record<string, string[]> = {};
  for (const r of requests) {
    if (r.resource === 'users') username = r.name;
    else if (r.resource === 'serviceaccounts') {
      username = serviceAccountUsername(r.namespace, r.name);
      if (!groupsNamed) groups = serviceAccountGroups(r.namespace);
    } else if (r.resource === 'groups') groups.push(r.name);
    else if (r.resource === 'userextras') (extra[r.subresource] ??= []).push(r.name);
    else uid = r.name;
  }
  if (username !== ANONYMOUS_USER) {
    if (!groups.includes(ALL_AUTHENTICATED) && !groups.includes(UNAUTHENTICATED)) groups.push(ALL_AUTHENTICATED);
  } else if (!groups.includes(UNAUTHENTICATED)) groups.push(UNAUTHENTICATED);
  const u: UserInfo = { username, groups };
  if (uid) u.uid = uid;
  if (Object.keys(extra).length) u.extra = extra;
  return u;
}

export function withImpersonation(authz: Authorizer): Stage {
  const attributesFor = (s: RequestScope, r: ImpersonationRequest): Attributes => ({
    user: s.user,
    verb: 'impersonate',
    isResourceRequest: true,
    path: s.path,
    namespace: r.namespace,
    apiGroup: r.apiGroup,
    apiVersion: 'v1',
    resource: r.resource,
    subresource: r.subresource,
    name: r.name,
  });

  /** Asks for requests[i..] in turn; stays synchronous while the authorizer answers at once. */
  const allowFrom = (s: RequestScope, requests: readonly ImpersonationRequest[], i: number): MaybePromise<void> => {
    for (; i < requests.length; i++) {
      const attrs = attributesFor(s, requests[i]!);
      const d = authz.authorize(attrs);
      if (isPromise(d)) {
        const next = i + 1;
        return d.then((v) => {
          if (v.decision !== 'allow') throw forbidden(attrs, v.reason);
          return allowFrom(s, requests, next);
        });
      }
      if (d.decision !== 'allow') throw forbidden(attrs, d.reason);
    }
  };

  return (next) => (s) => {
    const requests = impersonationRequests(s.headers);
    if (requests.length === 0) return next(s);
    const serve = (): MaybePromise<void> => {
      s.user = impersonatedUser(requests, values(s.headers[GROUP]).length > 0);
      return next(s);
    };
    const allowed = allowFrom(s, requests, 0);
    return isPromise(allowed) ? allowed.then(serve) : serve();
  };
}
