/**
 * Builds the authenticator union from the options, in one fixed, documented order; the first method
 * that recognises a credential decides (upstream's order: client certificates, then the bearer token
 * methods, local ones before remote ones):
 *   1 x509             client certificate verified against --client-ca-file
 *   2 token-file       --token-auth-file
 *   3 service-account  JWTs of --service-account-issuer (TokenRequest)
 *   4 bootstrap-token  --enable-bootstrap-token-auth
 * A bearer token that no method accepts is refused (401), never treated as anonymous. Token methods
 * that know nothing of audiences (token file, bootstrap tokens) answer only requests whose audiences
 * meet --api-audiences, as upstream wraps them. Adding a method is one file under core/authn plus one
 * entry here.
 */
import { isPromise, type MaybePromise } from '../api/maybe-async.js';
import type { UserInfo } from '../api/types.js';
import type { Lister } from '../registry/lister.js';
import { AuthenticationError, type Authenticator, type AuthnRequest, bearerToken, intersectAudiences, union } from './authenticator.js';
import { bootstrapTokenAuthenticator } from './bootstrap-token.js';
import { serviceAccountAuthenticator } from './service-account.js';
import type { VerificationKey } from './service-account-keys.js';
import { tokenFileAuthenticator } from './token-file.js';
import { x509Authenticator } from './x509.js';

/** The options authentication reads (part of the server's options). */
export interface AuthenticationOptions {
  tokenAuthFile: string;
  enableBootstrapTokenAuth: boolean;
  serviceAccountIssuers: string[];
  serviceAccountKeyFiles: string[];
  serviceAccountSigningKeyFile: string;
  apiAudiences: string[];
  serviceAccountLookup: boolean;
  serviceAccountJwksUri: string;
  /** --service-account-max-token-expiration in ms (0: no limit). */
  serviceAccountMaxTokenExpirationMs: number;
}

/** What authenticators may need from the running server. */
export interface AuthenticatorDeps {
  /** Whether client certificates are verified (a client CA is configured). */
  clientCA: boolean;
  /** The audiences of this server (--api-audiences, defaulted to the first issuer). */
  apiAudiences: readonly string[];
  /** Keys that verify service account tokens (none: the method is off). */
  serviceAccountKeys: readonly VerificationKey[];
  /** Listers the token methods read (absent when the resource is not served). */
  secrets?: Lister;
  serviceAccounts?: Lister;
}

interface AuthenticatorEntry {
  name: string;
  enabled(o: AuthenticationOptions, d: AuthenticatorDeps): boolean;
  build(o: AuthenticationOptions, d: AuthenticatorDeps): Authenticator;
}

/** The methods in the order they are tried. */
export const authenticatorOrder: readonly AuthenticatorEntry[] = [
  { name: 'x509', enabled: (_o, d) => d.clientCA, build: () => x509Authenticator() },
  {
    name: 'token-file',
    enabled: (o) => o.tokenAuthFile !== '',
    build: (o, d) => audienceAgnostic(d.apiAudiences, tokenFileAuthenticator(o.tokenAuthFile)),
  },
  {
    name: 'service-account',
    enabled: (o, d) => o.serviceAccountIssuers.length > 0 && d.serviceAccountKeys.length > 0,
    build: (o, d) =>
      serviceAccountAuthenticator({
        keys: d.serviceAccountKeys,
        issuers: o.serviceAccountIssuers,
        apiAudiences: d.apiAudiences,
        lookup: o.serviceAccountLookup && d.serviceAccounts ? { serviceAccounts: d.serviceAccounts, secrets: d.secrets } : undefined,
      }),
  },
  {
    name: 'bootstrap-token',
    enabled: (o, d) => o.enableBootstrapTokenAuth && !!d.secrets,
    build: (_o, d) => audienceAgnostic(d.apiAudiences, bootstrapTokenAuthenticator(d.secrets!)),
  },
];

/**
 * A token method that knows nothing of audiences answers only when the requested audiences meet this
 * server's (upstream's WrapAudienceAgnosticToken); it then vouches for that intersection.
 */
export function audienceAgnostic(apiAudiences: readonly string[], a: Authenticator): Authenticator {
  return {
    name: a.name,
    authenticate(req) {
      if (req.audiences === undefined) return a.authenticate(req);
      const auds = intersectAudiences(apiAudiences, req.audiences);
      if (auds.length === 0) return null;
      const accepted = (u: UserInfo | null): UserInfo | null => {
        if (u) req.acceptedAudiences = auds;
        return u;
      };
      const u = a.authenticate(req);
      return isPromise(u) ? u.then(accepted) : accepted(u);
    },
  };
}

const INVALID_BEARER_TOKEN = new AuthenticationError('invalid bearer token');

/** A bearer token that none of the methods took is refused, as upstream's bearer token authenticator does. */
function refuseUnrecognizedBearerToken(a: Authenticator): Authenticator {
  const recognized = (req: AuthnRequest, u: UserInfo | null): UserInfo | null => {
    if (u === null && bearerToken(req) !== undefined) throw INVALID_BEARER_TOKEN;
    return u;
  };
  return {
    name: a.name,
    authenticate(req): MaybePromise<UserInfo | null> {
      const u = a.authenticate(req);
      return isPromise(u) ? u.then((v) => recognized(req, v)) : recognized(req, u);
    },
  };
}

export function buildAuthenticator(o: AuthenticationOptions, d: AuthenticatorDeps): Authenticator {
  return refuseUnrecognizedBearerToken(union(authenticatorOrder.filter((e) => e.enabled(o, d)).map((e) => e.build(o, d))));
}
