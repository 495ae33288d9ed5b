/**
 * OpenID Connect ID tokens (--oidc-* flags or the JWT authenticators of --authentication-config).
 * A bearer token whose unverified `iss` names a configured issuer is checked as upstream's go-oidc
 * verifier does, in its order: audience, expiry (and `nbf` with 5 minutes of leeway), signing
 * algorithm (asymmetric allow-list), signature against the issuer's discovered keys (jose); then the
 * claims are mapped (username, groups, uid, extra; claims or CEL), required claims and CEL claim
 * rules checked, and the user validated by the CEL user rules. Verified tokens are cached until
 * their `exp` (bounded), so a repeated token costs a map lookup; concurrent first uses of one token
 * share a single verification. No call to the provider happens per request.
 */
import type { CelValue } from '@bufbuild/cel';
import { compactVerify, decodeJwt, decodeProtectedHeader, errors as joseErrors, type JWTPayload } from 'jose';
import type { UserInfo } from '../api/types.js';
import type { CompiledJWTAuthenticator } from './authn-config.js';
import { ALL_AUTHENTICATED, AuthenticationError, type Authenticator, type AuthnRequest, bearerToken } from './authenticator.js';
import { celInput, type CompiledExpression, isError, stringList } from './claims-cel.js';
import { IssuerKeys, KeysUnavailableError } from './oidc-keys.js';
import { TokenCache } from './token-cache.js';

const NBF_LEEWAY_MS = 5 * 60_000;

const fail = (message: string): AuthenticationError => new AuthenticationError(message);
const iso = (ms: number): string => new Date(ms).toISOString();
const q = (s: unknown): string => JSON.stringify(s);
/** Go's %q of a []string: `["a" "b"]`. */
const goStringSlice = (xs: readonly unknown[]): string => `[${xs.map(q).join(' ')}]`;

type Claims = Record<string, unknown>;

/** A claim as a string, or why it is not one (Go's JSON wording). */
function stringClaim(c: Claims, name: string): string {
  if (!Object.hasOwn(c, name)) throw new Error('claim not present');
  const v = c[name];
  if (typeof v !== 'string') throw new Error(`json: cannot unmarshal ${v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v} into Go value of type string`);
  return v;
}

/** A groups claim: one string or an array of strings. */
function stringOrArrayClaim(c: Claims, name: string): string[] {
  const v = c[name];
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return [...v];
  throw new Error(`json: cannot unmarshal ${Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v} into Go value of type string`);
}

/** One JWT authenticator: one issuer, its keys and its mappings. */
export class JwtAuthenticator {
  readonly issuer: string;
  private readonly audiences: readonly string[];
  private readonly usesCel: boolean;

  constructor(
    readonly compiled: CompiledJWTAuthenticator,
    readonly keys: IssuerKeys,
    private readonly now: () => number = Date.now,
  ) {
    this.issuer = compiled.config.issuer.url;
    this.audiences = compiled.config.issuer.audiences;
    const c = compiled;
    this.usesCel = 'expression' in c.username || (!!c.groups && 'expression' in c.groups) || (!!c.uid && 'expression' in c.uid) || c.extra.length > 0 || c.claimRules.length > 0;
  }

  /** Verifies a token whose `iss` is this issuer; resolves to the user and when the token expires. */
  async verify(token: string): Promise<{ user: UserInfo; expiresAt: number }> {
    if (!this.keys.ready) throw fail('oidc: authenticator not initialized');
    let header;
    let claims: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      claims = decodeJwt(token);
    } catch (e) {
      throw fail(`oidc: verify token: oidc: malformed jwt: ${(e as Error).message}`);
    }
    this.checkClaimsBeforeSignature(header.alg, claims);
    await this.checkSignature(token, header);
    const user = this.mapUser(claims);
    return { user: { ...user, groups: [...user.groups, ALL_AUTHENTICATED] }, expiresAt: (claims.exp as number) * 1000 };
  }

  private checkClaimsBeforeSignature(alg: string | undefined, claims: JWTPayload): void {
    const aud = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
    if (!this.audiences.some((a) => aud.includes(a))) {
      throw fail(
        this.audiences.length === 1
          ? `oidc: verify token: oidc: expected audience ${q(this.audiences[0])} got ${goStringSlice(aud)}`
          : `oidc: verify token: oidc: expected audience in ${goStringSlice([...this.audiences].sort())} got ${goStringSlice(aud)}`,
      );
    }
    const now = this.now();
    const exp = typeof claims.exp === 'number' ? claims.exp * 1000 : Number.NEGATIVE_INFINITY;
    if (!(exp >= now)) throw fail(`oidc: verify token: oidc: token is expired (Token Expiry: ${Number.isFinite(exp) ? iso(exp) : '0001-01-01T00:00:00Z'})`);
    if (typeof claims.nbf === 'number' && now + NBF_LEEWAY_MS < claims.nbf * 1000) {
      throw fail(`oidc: verify token: oidc: current time ${iso(now)} before the nbf (not before) time: ${iso(claims.nbf * 1000)}`);
    }
    if (!alg || !this.compiled.signingAlgs.includes(alg)) {
      throw fail(`oidc: verify token: oidc: id token signed with unsupported algorithm, expected ${goStringSlice(this.compiled.signingAlgs)} got ${q(alg ?? '')}`);
    }
  }

  private async checkSignature(token: string, header: Parameters<IssuerKeys['keyFor']>[0]): Promise<void> {
    let keys;
    try {
      keys = await this.keys.keyFor(header);
    } catch (e) {
      if (e instanceof KeysUnavailableError) throw fail(`oidc: verify token: failed to verify signature: ${e.message}`);
      if (e instanceof joseErrors.JWKSNoMatchingKey) throw fail('oidc: verify token: failed to verify signature: failed to verify id token signature');
      throw fail(`oidc: verify token: failed to verify signature: ${(e as Error).message}`);
    }
    for (const key of Array.isArray(keys) ? keys : [keys]) {
      try {
        await compactVerify(token, key, { algorithms: [...this.compiled.signingAlgs] });
        return;
      } catch {
        // the next candidate key may match
      }
    }
    throw fail('oidc: verify token: failed to verify signature: failed to verify id token signature');
  }

  private mapUser(claims: Claims): UserInfo {
    const c = this.compiled;
    const input = this.usesCel ? { claims: celInput(claims) } : undefined;
    const username = this.username(claims, input);
    const groups = this.groups(claims, input);
    const user: UserInfo = { username, groups };
    const uid = this.uid(claims, input);
    if (uid) user.uid = uid;
    const extra = this.extra(input);
    if (extra) user.extra = extra;

    for (const { claim, value } of c.requiredClaims) {
      if (!Object.hasOwn(claims, claim)) throw fail(`oidc: required claim ${claim} not present in ID token`);
      let got: string;
      try {
        got = stringClaim(claims, claim);
      } catch (e) {
        throw fail(`oidc: parse claim ${claim}: ${(e as Error).message}`);
      }
      if (got !== value) throw fail(`oidc: required claim ${claim} value does not match. Got = ${got}, want = ${value}`);
    }
    this.checkRules(c.claimRules, input!, 'oidc: error evaluating claim validation expression');
    if (c.userRules.length) {
      const userInput = { user: { username: user.username, uid: user.uid ?? '', groups: user.groups, extra: user.extra ?? {} } };
      this.checkRules(c.userRules, userInput, 'oidc: error evaluating user info validation rule');
    }
    return user;
  }

  private username(claims: Claims, input: Record<string, unknown> | undefined): string {
    const m = this.compiled.username;
    if ('expression' in m) {
      const v = evaluate(m.expression, input!, 'oidc: error evaluating username claim expression');
      if (typeof v !== 'string') throw fail('oidc: error evaluating username claim expression: username claim expression must return a string');
      if (v === '') throw fail('oidc: empty username via CEL expression is not allowed');
      return v;
    }
    let name: string;
    try {
      name = stringClaim(claims, m.claim);
    } catch (e) {
      throw fail(`oidc: parse username claims ${q(m.claim)}: ${(e as Error).message}`);
    }
    if (m.claim === 'email' && Object.hasOwn(claims, 'email_verified')) {
      const verified = claims.email_verified;
      if (typeof verified !== 'boolean') throw fail("oidc: parse 'email_verified' claim: json: cannot unmarshal into Go value of type bool");
      if (!verified) throw fail('oidc: email not verified');
    }
    if (name === '') throw fail(`oidc: parse username claims ${q(m.claim)}: empty username is not allowed`);
    return m.prefix + name;
  }

  private groups(claims: Claims, input: Record<string, unknown> | undefined): string[] {
    const m = this.compiled.groups;
    if (!m) return [];
    if ('claim' in m) {
      if (!Object.hasOwn(claims, m.claim)) return [];
      try {
        return stringOrArrayClaim(claims, m.claim).map((g) => m.prefix + g);
      } catch (e) {
        throw fail(`oidc: parse groups claim ${q(m.claim)}: ${(e as Error).message}`);
      }
    }
    const list = stringList(evaluate(m.expression, input!, 'oidc: error evaluating group claim expression'));
    if (list instanceof Error) throw fail(`oidc: error evaluating group claim expression: ${list.message}`);
    return list;
  }

  private uid(claims: Claims, input: Record<string, unknown> | undefined): string {
    const m = this.compiled.uid;
    if (!m) return '';
    if ('claim' in m) {
      try {
        return stringClaim(claims, m.claim);
      } catch (e) {
        throw fail(`oidc: parse uid claim ${q(m.claim)}: ${(e as Error).message}`);
      }
    }
    const v = evaluate(m.expression, input!, 'oidc: error evaluating uid claim expression');
    if (typeof v !== 'string') throw fail('oidc: error evaluating uid claim expression: uid claim expression must return a string');
    return v;
  }

  private extra(input: Record<string, unknown> | undefined): Record<string, string[]> | undefined {
    if (!this.compiled.extra.length) return undefined;
    const out: Record<string, string[]> = {};
    for (const { key, expression } of this.compiled.extra) {
      const list = stringList(evaluate(expression, input!, 'oidc: error evaluating extra claim expression'));
      if (list instanceof Error) throw fail(`oidc: error evaluating extra claim expression: ${expression.expression}: ${list.message}`);
      if (list.length) out[key] = list;
    }
    return Object.keys(out).length ? out : undefined;
  }

  private checkRules(rules: readonly { rule: CompiledExpression; message: string }[], input: Record<string, unknown>, what: string): void {
    for (const { rule, message } of rules) {
      const v = evaluate(rule, input, what);
      if (typeof v !== 'boolean') throw fail(`${what}: validation expression must return a boolean`);
      if (!v) throw fail(`${what}: validation expression '${rule.expression}' failed: ${message}`);
    }
  }
}

function evaluate(e: CompiledExpression, input: Record<string, unknown>, what: string): CelValue {
  const v = e.evaluate(input);
  if (isError(v)) throw fail(`${what}: ${v.message}`);
  return v;
}

/** The unverified `iss` of a compact JWT, or undefined when the token is not one. */
export function untrustedIssuer(token: string): string | undefined {
  if (token.charCodeAt(0) === 123 /* { */) return undefined;
  const first = token.indexOf('.');
  const second = first < 0 ? -1 : token.indexOf('.', first + 1);
  if (second < 0 || token.indexOf('.', second + 1) >= 0) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(token.slice(first + 1, second), 'base64url').toString('utf8')) as { iss?: unknown };
    if (typeof payload?.iss !== 'string') return undefined;
    return payload.iss === 'accounts.google.com' ? 'https://accounts.google.com' : payload.iss;
  } catch {
    return undefined;
  }
}

/** A bearer token none of the configured issuers claims (thrown as one shared instance: this is the common miss). */
const notOurs = new AuthenticationError('oidc: token is not a JWT of a configured issuer');

interface JwtSet {
  byIssuer: Map<string, JwtAuthenticator>;
  cache: TokenCache<UserInfo>;
  inflight: Map<string, Promise<UserInfo>>;
}

/** The method: every configured JWT authenticator, replaced as a whole when the configuration reloads. */
export class OidcAuthenticator implements Authenticator {
  readonly name = 'oidc';
  private set: JwtSet;

  constructor(authenticators: readonly JwtAuthenticator[], private readonly cacheSize = 4096) {
    this.set = this.makeSet(authenticators);
  }

  get authenticators(): JwtAuthenticator[] {
    return [...this.set.byIssuer.values()];
  }

  /** Swaps in a new set (a reload); the old one's keys stop refreshing and its cache is dropped. */
  replace(authenticators: readonly JwtAuthenticator[]): void {
    const old = this.set;
    this.set = this.makeSet(authenticators);
    for (const a of old.byIssuer.values()) a.keys.close();
  }

  close(): void {
    for (const a of this.set.byIssuer.values()) a.keys.close();
  }

  authenticate(req: AuthnRequest): UserInfo | null | Promise<UserInfo> {
    const token = bearerToken(req);
    if (token === undefined) return null;
    const set = this.set;
    const hit = set.cache.get(token);
    if (hit) return hit;
    const pending = set.inflight.get(token);
    if (pending) return pending;
    const iss = untrustedIssuer(token);
    const a = iss === undefined ? undefined : set.byIssuer.get(iss);
    if (!a) throw notOurs;
    const p = a.verify(token).then(
      ({ user, expiresAt }) => {
        set.inflight.delete(token);
        set.cache.set(token, user, expiresAt);
        return user;
      },
      (e: Error) => {
        set.inflight.delete(token);
        throw e instanceof AuthenticationError ? e : new AuthenticationError(e.message);
      },
    );
    set.inflight.set(token, p);
    return p;
  }

  private makeSet(authenticators: readonly JwtAuthenticator[]): JwtSet {
    return { byIssuer: new Map(authenticators.map((a) => [a.issuer, a])), cache: new TokenCache(this.cacheSize), inflight: new Map() };
  }
}

/** Starts one JWT authenticator: its keys are discovered in the background. */
export function startJwtAuthenticator(c: CompiledJWTAuthenticator, log: (m: string) => void, now: () => number = Date.now): JwtAuthenticator {
  const keys = new IssuerKeys({
    issuer: c.config.issuer.url,
    discoveryURL: c.config.issuer.discoveryURL,
    ca: c.config.issuer.certificateAuthority,
    log,
  }).start();
  return new JwtAuthenticator(c, keys, now);
}
