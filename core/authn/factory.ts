/**
/**
 * Builds the authenticator union from the options, in one fixed, documented order; the first method
 * that recognises a credential decides (upstream's order: the authenticating proxy's headers, client
 * certificates, then the bearer token methods, local ones before remote ones):
 *   1 requestheader    --requestheader-client-ca-file and the --requestheader-* headers
 *   2 x509             client certificate verified against --client-ca-file
 *   3 token-file       --token-auth-file
 *   4 service-account  JWTs of --service-account-issuer (TokenRequest)
 *   5 bootstrap-token  --enable-bootstrap-token-auth
 *   6 oidc             --oidc-* or the jwt issuers of --authentication-config
 *   7 webhook          --authentication-token-webhook-config-file
 * A bearer token that no method accepts is refused (401), never treated as anonymous. Token methods
 * that know nothing of audiences (token file, bootstrap tokens, OIDC) answer only requests whose
 * audiences meet --api-audiences, as upstream wraps them. Adding a method is one file under
 * core/authn plus one entry here. A configuration a method cannot use is an
 * AuthenticationConfigError, a start error.
 */
import { isPromise, type MaybePromise } from '../api/maybe-async.js';
import type { UserInfo } from '../api/types.js';
import type { Lister } from '../registry/lister.js';
import { AuthenticationError, type Authenticator, type AuthnRequest, bearerToken, intersectAudiences, union } from './authenticator.js';
import { bootstrapTokenAuthenticator } from './bootstrap-token.js';
import type { ClientCAs } from './dynamic-ca-file.js';
import type { AuthenticationConfigStatus, OidcOptions } from './oidc-config.js';
import { oidcAuthenticator, oidcEnabled } from './oidc-config.js';
import { type RequestHeaderOptions, requestHeaderAuthenticator } from './request-header.js';
import { serviceAccountAuthenticator } from './service-account.js';
import type { VerificationKey } from './service-account-keys.js';
import { tokenFileAuthenticator } from './token-file.js';
import { type WebhookOptions, webhookTokenAuthenticator } from './webhook.js';
import { x509Authenticator } from './x509.js';

/** The options authentication reads (part of the server's options). */
export interface AuthenticationOptions extends OidcOptions, WebhookOptions, RequestHeaderOptions {
  tokenAuthFile: string;
  enableBootstrapTokenAuth: boolean;
  /** --service-account-issuer (repeatable); JWT authenticators may not claim these issuers. */
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
  /** The client CA bundles: --client-ca-file or the generated CA (x509 accepts only certificates chaining to it; none: x509 is off), --requestheader-client-ca-file. */
  clientCAs: ClientCAs;
  /** The effective feature gates. */
  featureGates?: Readonly<Record<string, boolean>>;
  /** Where --authentication-config reloads are recorded. */
  authenticationConfigStatus?: AuthenticationConfigStatus;
  /** The audiences of this server (--api-audiences, defaulted to the first issuer). */
  apiAudiences: readonly string[];
  /** Registers work to stop with the server (file watches, key refreshes, connections). */
  onStop?: (fn: () => void) => void;
  /** Keys that verify service account tokens (none: the method is off). */
  serviceAccountKeys: readonly VerificationKey[];
  /** Listers the token methods read (absent when the resource is not served). */
  secrets?: Pick<Lister, 'get'>;
  serviceAccounts?: Pick<Lister, 'get'>;
}

interface AuthenticatorEntry {
  name: string;
  enabled(o: AuthenticationOptions, d: AuthenticatorDeps): boolean;
  build(o: AuthenticationOptions, d: AuthenticatorDeps): Authenticator;
}

/** The methods in the order they are tried. */
export const authenticatorOrder: readonly AuthenticatorEntry[] = [
  {
    name: 'requestheader',
    enabled: (_o, d) => d.clientCAs.requestHeader !== undefined,
    build: (o, d) => requestHeaderAuthenticator(o, { requestHeaderCA: d.clientCAs.requestHeader!, clientCA: d.clientCAs.client, featureGates: d.featureGates }),
  },
  { name: 'x509', enabled: (_o, d) => d.clientCAs.client !== undefined, build: (_o, d) => x509Authenticator(Date.now, d.clientCAs.client) },
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
  {
    name: 'oidc',
    enabled: (o) => oidcEnabled(o),
    build: (o, d) =>
      audienceAgnostic(d.apiAudiences, oidcAuthenticator(o, { ...d, status: d.authenticationConfigStatus, serviceAccountIssuers: o.serviceAccountIssuers })),
  },
  {
    name: 'webhook',
    enabled: (o) => o.authenticationTokenWebhookConfigFile !== '',
    build: (o, d) => webhookTokenAuthenticator(o, d),
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
