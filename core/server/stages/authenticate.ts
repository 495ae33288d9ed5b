/**
 * Stage: who is calling. The authenticators' union decides; a request with no credential is
 * system:anonymous when anonymous access is on, and any presented credential that fails is a 401
 * (never a fall-through to anonymous).
 */
import { isPromise, type MaybePromise, then } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import type { UserInfo } from '../../api/types.js';
import { anonymousUser } from '../../authn/anonymous.js';
import { AuthenticationError, type Authenticator } from '../../authn/authenticator.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../scope.js';

/** `onUnauthorized` sees each request refused 401 before the answer is written (the audit of failed authentications). */
export function withAuthentication(authn: Authenticator, anonymousAuth: boolean, onUnauthorized?: (s: RequestScope) => void): Stage {
  const anonymous = anonymousAuth ? anonymousUser : undefined;
  const unauthorized = (s: RequestScope): never => {
    onUnauthorized?.(s);
    throw errors.unauthorized();
  };
  const rejected = (s: RequestScope, e: unknown): never => {
    if (e instanceof AuthenticationError) unauthorized(s);
    throw e;
  };
  const identify = (s: RequestScope): MaybePromise<UserInfo | undefined> => {
    let u: MaybePromise<UserInfo | null>;
    try {
      u = authn.authenticate({ headers: s.headers, peer: s.peer });
    } catch (e) {
      return rejected(s, e);
    }
    if (isPromise(u)) return u.then((v) => v ?? anonymous, (e: unknown) => rejected(s, e));
    return u ?? anonymous;
  };
  return (next) => (s) =>
    then(identify(s), (user) => {
      if (!user) unauthorized(s);
      s.user = user!;
      return next(s);
    });
}
