/**
 * Bootstrap tokens (--enable-bootstrap-token-auth): a bearer token `<id>.<secret>` (six and sixteen
 * lower-case alphanumerics) names the Secret `bootstrap-token-<id>` in svc-system. The token is
 * accepted when that Secret has type bootstrap.svc.io/token, is not being deleted, holds the same
 * token-id and token-secret (compared in constant time), has not expired, is marked
 * usage-bootstrap-authentication=true and lists only valid auth-extra-groups. The user is
 * system:bootstrap:<id> in system:bootstrappers plus the extra groups (sorted, without repeats).
 * Like upstream, a token that matches no usable Secret is not refused here: it is simply not one of
 * ours, and a bearer token nobody accepts is refused at the end of the chain (factory.ts).
 * The rules on the Secret's data live here too, shared with the controllers that read these Secrets.
 */
import { timingSafeEqual } from 'node:crypto';
import type { ApiObject, UserInfo } from '../api/types.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';
import { type Authenticator, bearerToken } from './authenticator.js';

export const BOOTSTRAP_TOKEN_NAMESPACE = 'svc-system';
export const BOOTSTRAP_TOKEN_SECRET_TYPE = 'bootstrap.svc.io/token';
export const BOOTSTRAP_TOKEN_SECRET_PREFIX = 'bootstrap-token-';
export const BOOTSTRAP_USER_PREFIX = 'system:bootstrap:';
export const BOOTSTRAPPERS_GROUP = 'system:bootstrappers';

export const DataKeys = {
  tokenId: 'token-id',
  tokenSecret: 'token-secret',
  description: 'description',
  expiration: 'expiration',
  usageAuthentication: 'usage-bootstrap-authentication',
  usageSigning: 'usage-bootstrap-signing',
  extraGroups: 'auth-extra-groups',
} as const;

const tokenRe = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const secretNameRe = /^bootstrap-token-([a-z0-9]{6})$/;
const groupRe = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;
const rfc3339Re = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

type Secret = DeepReadonly<ApiObject & { type?: string; data?: Record<string, string> }>;

/** `<id>.<secret>` split, or undefined when the text is not a bootstrap token. */
export function parseBootstrapToken(token: string): { id: string; secret: string } | undefined {
  const m = tokenRe.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : undefined;
}

/** The token id a Secret's name carries, if it is named as a bootstrap token. */
export const tokenIdOfSecretName = (name: string): string | undefined => secretNameRe.exec(name)?.[1];

/** A data value of the Secret as text ('' when absent). */
export function secretData(s: Secret, key: string): string {
  const v = s.data?.[key];
  return v === undefined ? '' : Buffer.from(v, 'base64').toString('utf8');
}

/** When the token expires (ms since epoch), Infinity without an expiration, NaN when unparsable (treated as expired). */
export function expirationOf(s: Secret): number {
  const text = secretData(s, DataKeys.expiration);
  if (text === '') return Infinity;
  return rfc3339Re.test(text) ? Date.parse(text) : NaN;
}

/** Whether the token has expired at `now` (an unparsable expiration counts as expired, as upstream). */
export function hasExpired(s: Secret, now: number): boolean {
  const at = expirationOf(s);
  return Number.isNaN(at) || at <= now;
}

/** system:bootstrappers plus auth-extra-groups, sorted and without repeats; undefined when a group is invalid. */
export function bootstrapGroups(s: Secret): string[] | undefined {
  const groups = new Set([BOOTSTRAPPERS_GROUP]);
  const extra = secretData(s, DataKeys.extraGroups);
  for (const g of extra ? extra.split(',') : []) {
    if (!groupRe.test(g)) return undefined;
    groups.add(g);
  }
  return [...groups].sort();
}

/** The full token a Secret stands for, if its id and secret are well formed and its name matches. */
export function tokenOfSecret(s: Secret): { id: string; secret: string } | undefined {
  const id = secretData(s, DataKeys.tokenId);
  const secret = secretData(s, DataKeys.tokenSecret);
  if (tokenIdOfSecretName(s.metadata.name ?? '') !== id) return undefined;
  return parseBootstrapToken(`${id}.${secret}`);
}

export const isBootstrapTokenSecret = (s: Secret): boolean => s.type === BOOTSTRAP_TOKEN_SECRET_TYPE && !!s.data;

const sameText = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export function bootstrapTokenAuthenticator(secrets: Pick<Lister, 'get'>, now: () => number = Date.now): Authenticator {
  return {
    name: 'bootstrap-token',
    authenticate(req): UserInfo | null {
      const raw = bearerToken(req);
      const token = raw === undefined ? undefined : parseBootstrapToken(raw);
      if (!token) return null;
      const s = secrets.get(BOOTSTRAP_TOKEN_NAMESPACE, `${BOOTSTRAP_TOKEN_SECRET_PREFIX}${token.id}`) as Secret | undefined;
      if (!s || s.metadata.deletionTimestamp || !isBootstrapTokenSecret(s)) return null;
      if (!sameText(secretData(s, DataKeys.tokenSecret), token.secret)) return null;
      if (secretData(s, DataKeys.tokenId) !== token.id) return null;
      if (hasExpired(s, now())) return null;
      if (secretData(s, DataKeys.usageAuthentication) !== 'true') return null;
      const groups = bootstrapGroups(s);
      if (!groups) return null;
      return { username: `${BOOTSTRAP_USER_PREFIX}${token.id}`, groups };
    },
  };
}
