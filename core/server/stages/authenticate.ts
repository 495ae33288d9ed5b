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

export function withAuthentication(authn: Authenticator, anonymousAuth: boolean): Stage {
  const anonymous = anonymousAuth ? anonymousUser : undefined;
  const rejected = (e: unknown): never => {
    if (e instanceof AuthenticationError) throw errors.unauthorized();
    throw e;
  };
  const identify = (s: RequestScope): MaybePromise<UserInfo | undefined> => {
    let u: MaybePromise<UserInfo | null>;
    try {
      u = authn.authenticate({ headers: s.headers, peer: s.peer });
    } catch (e) {
      return rejected(e);
    }
    if (isPromise(u)) return u.then((v) => v ?? anonymous, rejected);
    return u ?? anonymous;
  };
  return (next) => (s) =>
    then(identify(s), (user) => {
      if (!user) throw errors.unauthorized();
      s.user = user;
      return next(s);
    });
}
