/**
 * Service account tokens: the JWTs the TokenRequest subresource issues and the authenticator that
 * accepts them, with upstream's claims (iss, sub, aud, exp, iat, nbf, jti and the private `svc.io`
 * block naming the namespace, the ServiceAccount and the bound object) and upstream's checks:
 *   - a token whose `iss` is none of --service-account-issuer is another method's (not refused here);
 *   - the signature must verify with one of the verification keys, with the algorithm of that key
 *     (never `none`, never HMAC: a public key is not a shared secret);
 *   - exp / nbf / iat with upstream's one minute of leeway;
 *   - the token's audiences must meet the requested ones (--api-audiences unless a TokenReview asks);
 *   - with --service-account-lookup, the ServiceAccount and any bound Secret must still exist with the
 *     uid in the token, read through listers (never the store).
 * Signature checks are cached per token until it expires, so a token seen before costs one Map lookup.
 */
import { randomUUID } from 'node:crypto';
import { compactVerify, SignJWT } from 'jose';
import type { ApiObject, UserInfo } from '../api/types.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';
import { ALL_AUTHENTICATED, AuthenticationError, type Authenticator, type AuthnRequest, bearerToken, intersectAudiences } from './authenticator.js';
import type { SigningKey, VerificationKey } from './service-account-keys.js';
import { TokenCache } from './token-cache.js';

export const SERVICE_ACCOUNT_USERNAME_PREFIX = 'system:serviceaccount:';
export const ALL_SERVICE_ACCOUNTS_GROUP = 'system:serviceaccounts';
/** The private claim block (upstream's `kubernetes.io`). */
export const PRIVATE_CLAIM = 'svc.io';
/** The extra key naming the token a request came with (upstream's authentication.kubernetes.io/credential-id). */
export const CREDENTIAL_ID_EXTRA = 'authentication.svc.io/credential-id';
/** go-jose's default leeway, which upstream's claim validation uses. */
export const LEEWAY_SECONDS = 60;

export const serviceAccountUsername = (namespace: string, name: string): string => `${SERVICE_ACCOUNT_USERNAME_PREFIX}${namespace}:${name}`;
export const serviceAccountGroups = (namespace: string): string[] => [ALL_SERVICE_ACCOUNTS_GROUP, `${ALL_SERVICE_ACCOUNTS_GROUP}:${namespace}`];

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Namespace and name of a service account user name, or undefined if it is not one (upstream's SplitUsername). */
export function splitServiceAccountUsername(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(SERVICE_ACCOUNT_USERNAME_PREFIX)) return undefined;
  const parts = username.slice(SERVICE_ACCOUNT_USERNAME_PREFIX.length).split(':');
  if (parts.length !== 2) return undefined;
  const [namespace, name] = parts as [string, string];
  if (namespace.length > 63 || !dns1123Label.test(namespace)) return undefined;
  if (name.length > 253 || !dns1123Subdomain.test(name)) return undefined;
  return { namespace, name };
}

interface ObjectRef {
  name: string;
  uid: string;
}

/** The private claims, as upstream's `kubernetes.io` block. */
export interface PrivateClaims {
  namespace: string;
  secret?: ObjectRef;
  serviceaccount: ObjectRef;
}

export interface TokenClaims {
  aud: string[];
  exp: number;
  iat: number;
  iss: string;
  jti: string;
  nbf: number;
  sub: string;
  [PRIVATE_CLAIM]: PrivateClaims;
}

/** Claims of a token for a ServiceAccount, optionally bound to a Secret, valid from `now` for `seconds`. */
export function tokenClaims(o: {
  issuer: string;
  audiences: readonly string[];
  serviceAccount: DeepReadonly<ApiObject>;
  secret?: DeepReadonly<ApiObject>;
  nowSeconds: number;
  expirationSeconds: number;
}): TokenClaims {
  const sa = o.serviceAccount.metadata;
  const priv: PrivateClaims = { namespace: sa.namespace!, serviceaccount: { name: sa.name!, uid: sa.uid! } };
  if (o.secret) priv.secret = { name: o.secret.metadata.name!, uid: o.secret.metadata.uid! };
  // keys in sorted order, as upstream's JWT builder writes them
  return {
    aud: [...o.audiences],
    exp: o.nowSeconds + o.expirationSeconds,
    iat: o.nowSeconds,
    iss: o.issuer,
    jti: randomUUID(),
    nbf: o.nowSeconds,
    sub: serviceAccountUsername(sa.namespace!, sa.name!),
    [PRIVATE_CLAIM]: sortedKeys(priv),
  };
}

function sortedKeys<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o).sort()) {
    const v = (o as Record<string, unknown>)[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) ? sortedKeys(v) : v;
  }
  return out as T;
}

/** Signs claims with the signing key (header: alg and kid, as upstream). */
export function signToken(key: SigningKey, claims: TokenClaims): Promise<string> {
  return new SignJWT(claims as unknown as Record<string, unknown>).setProtectedHeader({ alg: key.alg, kid: key.kid }).sign(key.privateKey);
}

// ---------------------------------------------------------------------------------------------
// Authentication

export interface ServiceAccountAuthenticatorConfig {
  keys: readonly VerificationKey[];
  issuers: readonly string[];
  /** --api-audiences: what a token must be for when the request names no audiences. */
  apiAudiences: readonly string[];
  /** Listers for --service-account-lookup (absent: no lookup). */
  lookup?: { serviceAccounts: Pick<Lister, 'get'>; secrets: Pick<Lister, 'get'> | undefined };
  now?: () => number;
  cacheSize?: number;
}

/** A token's verdict, cached until the token expires. */
type Verdict =
  | { kind: 'foreign' }
  | { kind: 'invalid'; error: AuthenticationError }
  | { kind: 'verified'; claims: TokenClaims; user: UserInfo; audiences: readonly string[]; forThisServer: boolean };

const FOREIGN: Verdict = { kind: 'foreign' };
/** How long a verdict that does not depend on time is kept (a token of another issuer, a bad signature). */
const STATIC_VERDICT_MS = 5 * 60_000;

const goQuoteList = (l: readonly string[]): string => `[${l.map((x) => JSON.stringify(x)).join(' ')}]`;

/** The claims of a JWT read without verification, or undefined if it is not a JWT. */
function unverifiedClaims(token: string): Record<string, unknown> | undefined {
  const first = token.indexOf('.');
  const second = first < 0 ? -1 : token.indexOf('.', first + 1);
  if (second < 0 || token.indexOf('.', second + 1) >= 0) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(token.slice(first + 1, second), 'base64url').toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const isRef = (v: unknown): v is ObjectRef => !!v && typeof v === 'object' && typeof (v as ObjectRef).name === 'string' && typeof (v as ObjectRef).uid === 'string';

/** The claims as upstream's validator needs them, or an error naming what is wrong. */
function checkedClaims(payload: Uint8Array): TokenClaims {
  let c: Record<string, unknown>;
  try {
    c = JSON.parse(Buffer.from(payload).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new AuthenticationError('service account token claims could not be decoded');
  }
  const priv = c[PRIVATE_CLAIM] as Record<string, unknown> | undefined;
  if (!priv || typeof priv.namespace !== 'string' || !isRef(priv.serviceaccount) || (priv.secret !== undefined && !isRef(priv.secret))) {
    throw new AuthenticationError('service account token claims could not be validated due to unexpected private claim');
  }
  for (const k of ['exp', 'iat', 'nbf']) {
    if (c[k] !== undefined && typeof c[k] !== 'number') throw new AuthenticationError(`service account token claims could not be validated: ${k} is not a number`);
  }
  const aud = typeof c.aud === 'string' ? [c.aud] : Array.isArray(c.aud) ? c.aud.filter((a): a is string => typeof a === 'string') : [];
  return { ...(c as unknown as TokenClaims), aud };
}

export function serviceAccountAuthenticator(cfg: ServiceAccountAuthenticatorConfig): Authenticator {
  const now = cfg.now ?? Date.now;
  const issuers = new Set(cfg.issuers);
  const cache = new TokenCache<Verdict>(cfg.cacheSize ?? 4096, now);

  /** Verifies the signature with the keys whose id matches first, then the others of the same algorithm. */
  const verify = async (token: string): Promise<Verdict> => {
    const headerKid = (() => {
      try {
        return (JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8')) as { kid?: unknown }).kid;
      } catch {
        return undefined;
      }
    })();
    const ordered = [...cfg.keys.filter((k) => k.kid === headerKid), ...cfg.keys.filter((k) => k.kid !== headerKid)];
    const reasons: string[] = [];
    for (const k of ordered) {
      try {
        const { payload } = await compactVerify(token, k.key, { algorithms: [k.alg] });
        const claims = checkedClaims(payload);
        if (!issuers.has(claims.iss)) return { kind: 'invalid', error: new AuthenticationError(`token issuer ${JSON.stringify(claims.iss)} is invalid`) };
        const priv = claims[PRIVATE_CLAIM];
        const user: UserInfo = {
          username: serviceAccountUsername(priv.namespace, priv.serviceaccount.name),
          uid: priv.serviceaccount.uid,
          groups: [...serviceAccountGroups(priv.namespace), ALL_AUTHENTICATED],
        };
        if (typeof claims.jti === 'string' && claims.jti) user.extra = { [CREDENTIAL_ID_EXTRA]: [`JTI=${claims.jti}`] };
        const audiences = claims.aud.length ? claims.aud : cfg.apiAudiences;
        // whether the token is for this server's own audiences: the question every ordinary request asks
        const forThisServer = cfg.apiAudiences.length === 0 || intersectAudiences(audiences, cfg.apiAudiences).length > 0;
        return { kind: 'verified', claims, user, audiences, forThisServer };
      } catch (e) {
        if (e instanceof AuthenticationError) return { kind: 'invalid', error: e };
        reasons.push((e as Error).message);
      }
    }
    const why = [...new Set(reasons)];
    return { kind: 'invalid', error: new AuthenticationError(why.length === 1 ? why[0]! : `[${why.join(', ')}]`) };
  };

  const expiry = (v: Verdict): number => (v.kind === 'verified' && typeof v.claims.exp === 'number' ? (v.claims.exp + LEEWAY_SECONDS) * 1000 : now() + STATIC_VERDICT_MS);

  const lookup = (c: TokenClaims): void => {
    if (!cfg.lookup) return;
    const priv = c[PRIVATE_CLAIM];
    const deletedBefore = now() - LEEWAY_SECONDS * 1000;
    const goneSince = (o: DeepReadonly<ApiObject>): boolean => !!o.metadata.deletionTimestamp && Date.parse(o.metadata.deletionTimestamp) < deletedBefore;
    const sa = cfg.lookup.serviceAccounts.get(priv.namespace, priv.serviceaccount.name);
    if (!sa) throw new AuthenticationError(`serviceaccounts ${JSON.stringify(priv.serviceaccount.name)} not found`);
    if (goneSince(sa)) throw new AuthenticationError(`service account ${priv.namespace}/${priv.serviceaccount.name} has been deleted`);
    if (sa.metadata.uid !== priv.serviceaccount.uid) {
      throw new AuthenticationError(`service account UID (${sa.metadata.uid}) does not match claim (${priv.serviceaccount.uid})`);
    }
    if (!priv.secret) return;
    const secret = cfg.lookup.secrets?.get(priv.namespace, priv.secret.name);
    if (!secret || goneSince(secret)) throw new AuthenticationError('service account token has been invalidated');
    if (secret.metadata.uid !== priv.secret.uid) {
      throw new AuthenticationError(`secret UID (${secret.metadata.uid}) does not match service account secret ref claim (${priv.secret.uid})`);
    }
  };

  /** The per-request checks of a verified token: time, audiences, lookup. */
  const accept = (v: Verdict, req: AuthnRequest): UserInfo | null => {
    if (v.kind === 'foreign') return null;
    if (v.kind === 'invalid') throw v.error;
    const t = now() / 1000;
    const c = v.claims;
    if (typeof c.exp === 'number' && t - LEEWAY_SECONDS > c.exp) throw new AuthenticationError('service account token has expired');
    if (typeof c.nbf === 'number' && t + LEEWAY_SECONDS < c.nbf) throw new AuthenticationError('service account token is not valid yet');
    if (typeof c.iat === 'number' && t + LEEWAY_SECONDS < c.iat) {
      throw new AuthenticationError('service account token claims could not be validated due to unexpected validation error');
    }
    const requested = req.audiences;
    const auds = requested ? intersectAudiences(v.audiences, requested) : undefined;
    if (requested ? auds!.length === 0 && cfg.apiAudiences.length !== 0 : !v.forThisServer) {
      throw new AuthenticationError(`token audiences ${goQuoteList(v.audiences)} is invalid for the target audiences ${goQuoteList(requested ?? cfg.apiAudiences)}`);
    }
    lookup(c);
    if (auds) req.acceptedAudiences = auds;
    return v.user;
  };

  return {
    name: 'service-account',
    authenticate(req) {
      const token = bearerToken(req);
      if (token === undefined) return null;
      const cached = cache.get(token);
      if (cached) return accept(cached, req);
      const claims = unverifiedClaims(token);
      if (!claims || typeof claims.iss !== 'string' || !issuers.has(claims.iss)) {
        if (claims) cache.set(token, FOREIGN, now() + STATIC_VERDICT_MS);
        return null;
      }
      return verify(token).then((v) => {
        cache.set(token, v, expiry(v));
        return accept(v, req);
      });
    },
  };
}
