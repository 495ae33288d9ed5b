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
import type { AuthenticationMetrics } from '../../metrics/apiserver.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../../request/scope.js';

/** authentication_attempts' result: a user (anonymous included), no user, or a credential that failed. */
type AttemptResult = 'success' | 'failure' | 'error';

export interface AuthenticationObservers {
  metrics?: AuthenticationMetrics;
  /** Sees each request refused 401 before the answer is written (the audit of failed authentications). */
  onUnauthorized?: (s: RequestScope) => void;
}

export function withAuthentication(authn: Authenticator, anonymousAuth: boolean, o: AuthenticationObservers = {}): Stage {
  const anonymous = anonymousAuth ? anonymousUser : undefined;
  const { metrics, onUnauthorized } = o;
  const unauthorized = (s: RequestScope): never => {
    onUnauthorized?.(s);
    throw errors.unauthorized();
  };
  const observe = (started: number, result: AttemptResult, user?: UserInfo): void => {
    if (!metrics) return;
    metrics.attempt(result, (performance.now() - started) / 1000);
    if (user) metrics.user(user.username);
  };
  const identify = (s: RequestScope): MaybePromise<UserInfo | undefined> => {
    const started = metrics ? performance.now() : 0;
    const rejected = (e: unknown): never => {
      observe(started, 'error');
      if (e instanceof AuthenticationError) unauthorized(s);
      throw e;
    };
    const identified = (v: UserInfo | null): UserInfo | undefined => {
      const u = v ?? anonymous;
      observe(started, u ? 'success' : 'failure', u);
      return u;
    };
    let u: MaybePromise<UserInfo | null>;
    try {
      u = authn.authenticate({ headers: s.headers, peer: s.peer });
    } catch (e) {
      return rejected(e);
    }
    if (isPromise(u)) return u.then(identified, rejected);
    return identified(u);
  };
  return (next) => (s) =>
    then(identify(s), (user) => {
      if (!user) unauthorized(s);
      s.user = user!;
      return next(s);
    });
}
