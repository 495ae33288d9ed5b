/**
 * Builds the authenticator union from the options, in one fixed, documented order (the first method
 * that recognises a credential decides), upstream's order: the authenticating proxy's headers, x509
 * client certificates, then bearer tokens local first and remote last (static token file, OpenID
 * Connect, the authentication webhook). Adding a method is one file under core/authn plus one entry
 * here. A configuration a method cannot use is an AuthenticationConfigError, a start error.
 */
import type { AuthenticationConfigStatus, OidcOptions } from './oidc-config.js';
import { oidcAuthenticator, oidcEnabled } from './oidc-config.js';
import { type Authenticator, union } from './authenticator.js';
import { CABundle } from './client-ca.js';
import { type RequestHeaderOptions, requestHeaderAuthenticator } from './request-header.js';
import { tokenFileAuthenticator } from './token-file.js';
import { type WebhookOptions, webhookTokenAuthenticator } from './webhook.js';
import { x509Authenticator } from './x509.js';

/** The options authentication reads (part of the server's options). */
export interface AuthenticationOptions extends OidcOptions, WebhookOptions, RequestHeaderOptions {
  tokenAuthFile: string;
  /** --service-account-issuer (repeatable); JWT authenticators may not claim these issuers. */
  serviceAccountIssuers?: string[];
}

/** What authenticators may need from the running server. */
export interface AuthenticatorDeps {
  /** Whether client certificates are verified (a client CA is configured). */
  clientCA: boolean;
  /** The --client-ca-file bundle (x509 accepts only certificates chaining to it). */
  clientCAPem?: string;
  /** The effective feature gates. */
  featureGates?: Readonly<Record<string, boolean>>;
  /** Where --authentication-config reloads are recorded. */
  authenticationConfigStatus?: AuthenticationConfigStatus;
  /** The audiences of this server (--api-audiences); the webhook's reviews ask for them. */
  apiAudiences?: readonly string[];
  /** Registers work to stop with the server (file watches, key refreshes, connections). */
  onStop?: (fn: () => void) => void;
}

interface AuthenticatorEntry {
  name: string;
  enabled(o: AuthenticationOptions, d: AuthenticatorDeps): boolean;
  build(o: AuthenticationOptions, d: AuthenticatorDeps): Authenticator;
}

/** The methods in the order they are tried. */
export const authenticatorOrder: readonly AuthenticatorEntry[] = [
  { name: 'requestheader', enabled: (o) => o.requestheaderClientCAFile !== '', build: (o, d) => requestHeaderAuthenticator(o, d) },
  { name: 'x509', enabled: (_o, d) => d.clientCA, build: (_o, d) => x509Authenticator(Date.now, d.clientCAPem ? new CABundle(d.clientCAPem) : undefined) },
  { name: 'token-file', enabled: (o) => o.tokenAuthFile !== '', build: (o) => tokenFileAuthenticator(o.tokenAuthFile) },
  {
    name: 'oidc',
    enabled: (o) => oidcEnabled(o),
    build: (o, d) => oidcAuthenticator(o, { ...d, status: d.authenticationConfigStatus, serviceAccountIssuers: o.serviceAccountIssuers }),
  },
  {
    name: 'webhook',
    enabled: (o) => o.authenticationTokenWebhookConfigFile !== '',
    build: (o, d) => webhookTokenAuthenticator(o, d),
  },
];

export function buildAuthenticator(o: AuthenticationOptions, d: AuthenticatorDeps): Authenticator {
  return union(authenticatorOrder.filter((e) => e.enabled(o, d)).map((e) => e.build(o, d)));
}
