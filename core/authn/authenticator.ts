/**
 * Authentication: who is calling. Each method is an Authenticator; union() tries them in order and
 * the first to recognise the request decides. A method that finds no credential of its kind answers
 * null; one that finds a bad credential throws AuthenticationError (401 unless a later method
 * succeeds). Every authenticated user gets the group system:authenticated.
 */
import { isPromise, type MaybePromise } from '../api/maybe-async.js';
import type { UserInfo } from '../api/types.js';

import type { PeerCertificate } from 'node:tls';

export type HeaderValue = string | string[] | undefined;
/** Request headers with lower-case names (Node's and gRPC metadata's convention). */
export type Headers = Readonly<Record<string, HeaderValue>>;

/** The client's TLS identity, as the transport verified it. */
export interface PeerIdentity {
  /** The client certificate, if one was presented (undefined otherwise). */
  certificate(): (PeerCertificate & { ext_key_usage?: string[] }) | undefined;
  /** Whether that certificate chained to a CA the listener trusts (--client-ca-file, --requestheader-client-ca-file), and why not. */
  readonly authorized: boolean;
  readonly authorizationError: string | undefined;
  /**
   * DER of the client certificate and of the certificates above it as the transport lists them
   * (intermediates the client sent, issuers it looked up), leaf first. With `authorized` this tells
   * which CA bundle the certificate chains to (core/authn/client-ca.ts).
   */
  certificateChain(): readonly Buffer[];
  /** A stable object per connection, for per-connection memos. */
  readonly connection: object;
  readonly remoteAddress: string | undefined;
}

/** What authenticators may look at: headers and the client's TLS identity. */
export interface AuthnRequest {
  headers: Headers;
  peer: PeerIdentity | undefined;
  /**
   * The audiences the credential must be meant for (a TokenReview's spec.audiences); absent: this
   * server's own (--api-audiences), which every token authenticator knows.
   */
  audiences?: readonly string[];
  /** Set by the token authenticator that accepted the credential: the requested audiences it is valid for. */
  acceptedAudiences?: readonly string[];
}

export class AuthenticationError extends Error {}

export interface Authenticator {
  readonly name: string;
  authenticate(req: AuthnRequest): MaybePromise<UserInfo | null>;
}

export const ALL_AUTHENTICATED = 'system:authenticated';
export const ANONYMOUS_USER = 'system:anonymous';
export const UNAUTHENTICATED = 'system:unauthenticated';

const BEARER_PREFIX = /^\s*bearer\s+/i;
const REPEATED_AUTHORIZATION = new AuthenticationError('more than one Authorization header');

/**
 * The bearer token of an `Authorization: Bearer <token>` header, if any (only the prefix is matched:
 * tokens are long). Several Authorization headers are refused rather than one picked: a proxy in
 * front may have read another one.
 */
export function bearerToken(req: AuthnRequest): string | undefined {
  const v = req.headers.authorization;
  if (Array.isArray(v)) throw REPEATED_AUTHORIZATION;
  if (!v) return undefined;
  // every token method asks in turn: parse each header once, and hand out one string (hashed once by the caches)
  if (v === lastHeader) return lastToken;
  const m = BEARER_PREFIX.exec(v);
  const token = m ? v.slice(m[0].length).trim() : '';
  lastHeader = v;
  lastToken = token === '' ? undefined : token;
  return lastToken;
}

let lastHeader: string | undefined;
let lastToken: string | undefined;

function withAuthenticatedGroup(u: UserInfo): UserInfo {
  if (u.username === ANONYMOUS_USER || u.groups.includes(ALL_AUTHENTICATED)) return u;
  return { ...u, groups: [...u.groups, ALL_AUTHENTICATED] };
}

/**
 * Tries each authenticator; returns the first user found. If none recognised the request but some
 * rejected a credential, throws the first rejection; if none saw a credential, returns null.
 */
/** Intersection of two audience lists, in the order of `a` (upstream's Audiences.Intersect). */
export function intersectAudiences(a: readonly string[], b: readonly string[]): string[] {
  return a.filter((x) => b.includes(x));
}

export function union(authenticators: readonly Authenticator[]): Authenticator {
  /** Tries authenticators from index `i` on; stays synchronous until one of them returns a promise. */
  const tryFrom = (req: AuthnRequest, i: number, firstError: Error | undefined): MaybePromise<UserInfo | null> => {
    for (; i < authenticators.length; i++) {
      let u: MaybePromise<UserInfo | null>;
      try {
        u = authenticators[i]!.authenticate(req);
      } catch (e) {
        firstError ??= e as Error;
        continue;
      }
      if (isPromise(u)) {
        const next = i + 1;
        return u.then(
          (v) => (v ? withAuthenticatedGroup(v) : tryFrom(req, next, firstError)),
          (e: Error) => tryFrom(req, next, firstError ?? e),
        );
      }
      if (u) return withAuthenticatedGroup(u);
    }
    if (firstError) throw firstError;
    return null;
  };
  return { name: 'union', authenticate: (req) => tryFrom(req, 0, undefined) };
}
