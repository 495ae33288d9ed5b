/**
 * Builds the authenticator union from the options, in one fixed, documented order (the first method
 * that recognises a credential decides): x509 client certificates, static token file. Adding a method
 * is one file under core/authn plus one entry here.
 */
import { type Authenticator, union } from './authenticator.js';
import { tokenFileAuthenticator } from './token-file.js';
import { x509Authenticator } from './x509.js';

/** The options authentication reads (part of the server's options). */
export interface AuthenticationOptions {
  tokenAuthFile: string;
}

/** What authenticators may need from the running server. */
export interface AuthenticatorDeps {
  /** Whether client certificates are verified (a client CA is configured). */
  clientCA: boolean;
}

interface AuthenticatorEntry {
  name: string;
  enabled(o: AuthenticationOptions, d: AuthenticatorDeps): boolean;
  build(o: AuthenticationOptions, d: AuthenticatorDeps): Authenticator;
}

/** The methods in the order they are tried. */
export const authenticatorOrder: readonly AuthenticatorEntry[] = [
  { name: 'x509', enabled: (_o, d) => d.clientCA, build: () => x509Authenticator() },
  { name: 'token-file', enabled: (o) => o.tokenAuthFile !== '', build: (o) => tokenFileAuthenticator(o.tokenAuthFile) },
];

export function buildAuthenticator(o: AuthenticationOptions, d: AuthenticatorDeps): Authenticator {
  return union(authenticatorOrder.filter((e) => e.enabled(o, d)).map((e) => e.build(o, d)));
}
