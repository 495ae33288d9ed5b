/**
 * Review handlers of authentication.svc.io: SelfSubjectReview answers with the caller's own
 * attributes (after impersonation, as upstream: the identity the request is served as); TokenReview
 * authenticates spec.token as a bearer token with the server's own authenticators, for the audiences
 * asked (spec.audiences, default --api-audiences), and reports the user, the audiences the token is
 * valid for, or why it is not.
 */
import { isPromise } from '../api/maybe-async.js';
import { errors } from '../api/status.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import type { VirtualHandler } from '../request/routes.js';
import { type Authenticator, type AuthnRequest, intersectAudiences } from './authenticator.js';

function userInfoOf(u: UserInfo): Record<string, unknown> {
  const userInfo: Record<string, unknown> = { username: u.username };
  if (u.uid) userInfo.uid = u.uid;
  if (u.groups.length) userInfo.groups = [...u.groups];
  if (u.extra && Object.keys(u.extra).length) userInfo.extra = u.extra;
  return userInfo;
}

export const selfSubjectReview: VirtualHandler = (review, s) => ({ ...review, status: { userInfo: userInfoOf(s.user) } }) as ApiObject;

interface TokenReview extends ApiObject {
  spec?: { token?: string; audiences?: string[] };
}

/** TokenReview over `authn` (the server's authenticator chain); `apiAudiences` are --api-audiences. */
export function tokenReview(authn: Authenticator, apiAudiences: readonly string[]): VirtualHandler {
  return async (body) => {
    const review = body as TokenReview;
    const token = review.spec?.token ?? '';
    if (token === '') throw errors.badRequest('token is required for TokenReview in authentication');
    const asked = review.spec?.audiences?.length ? review.spec.audiences : apiAudiences;
    // nothing but the token: no client certificate, no other header
    const req: AuthnRequest = { headers: { authorization: `Bearer ${token}` }, peer: undefined };
    if (asked.length) req.audiences = asked;
    let user: UserInfo | null = null;
    let error = '';
    try {
      const u = authn.authenticate(req);
      user = isPromise(u) ? await u : u;
    } catch (e) {
      error = (e as Error).message;
    }
    if (!user) return { ...review, status: { user: {}, ...(error ? { error } : {}) } } as ApiObject;
    const audiences = req.acceptedAudiences ?? [];
    if (asked.length && intersectAudiences(asked, audiences).length === 0) {
      // an authenticator vouched for audiences nobody asked for: upstream's answer to this inconsistency
      throw errors.internal(new Error('error validating audiences'));
    }
    const status: Record<string, unknown> = { authenticated: true, user: userInfoOf(user) };
    if (audiences.length) status.audiences = [...audiences];
    return { ...review, status } as ApiObject;
  };
}
