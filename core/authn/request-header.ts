/**
 * Authenticating proxy (--requestheader-*): a front proxy that has authenticated the user passes the
 * identity in headers. They are believed only from a client whose certificate chains to
 * --requestheader-client-ca-file and, when --requestheader-allowed-names is given, whose common name
 * is one of them; from anyone else the headers are ignored (the certificate is then a rejected
 * credential of this method, and the next method, x509, may still accept it against
 * --client-ca-file). The user is the first non-empty value of the username headers; uid likewise
 * (feature RemoteRequestHeaderUID); groups are every value of the group headers; extra keys come
 * from headers with an extra prefix (the rest of the name, lower-cased and percent-decoded).
 * Node joins repeated header lines with ", ", so values are split back on ", ".
 */
import type { UserInfo } from '../api/types.js';
import { AuthenticationConfigError } from './authn-config.js';
import { AuthenticationError, type Authenticator, type Headers, type PeerIdentity } from './authenticator.js';
import type { CABundle } from './client-ca.js';
import type { CAContent } from './dynamic-ca-file.js';

export interface RequestHeaderOptions {
  requestheaderClientCAFile: string;
  requestheaderAllowedNames: string[];
  requestheaderUsernameHeaders: string[];
  requestheaderUidHeaders: string[];
  requestheaderGroupHeaders: string[];
  requestheaderExtraHeadersPrefix: string[];
}

export interface RequestHeaderDeps {
  /** The --requestheader-client-ca-file bundle (read again when the file changes: dynamic-ca-file.ts). */
  requestHeaderCA: CAContent;
  /** The --client-ca-file bundle, to refuse an overlap without allowed names. */
  clientCA?: CAContent;
  featureGates?: Readonly<Record<string, boolean>>;
}

function values(h: Headers, name: string): string[] {
  const v = h[name];
  if (v === undefined) return [];
  const all = Array.isArray(v) ? v : [v];
  return all.flatMap((x) => x.split(', ')).filter((x) => x !== '');
}

const firstValue = (h: Headers, names: readonly string[]): string | undefined => {
  for (const n of names) {
    const v = values(h, n)[0];
    if (v) return v;
  }
  return undefined;
};

function unescapeKey(k: string): string {
  try {
    return decodeURIComponent(k);
  } catch {
    return k;
  }
}

export function requestHeaderAuthenticator(o: RequestHeaderOptions, d: RequestHeaderDeps): Authenticator {
  if (o.requestheaderUidHeaders.length && d.featureGates?.RemoteRequestHeaderUID !== true) {
    throw new AuthenticationConfigError('--requestheader-uid-headers requires the "RemoteRequestHeaderUID" feature to be enabled');
  }
  // checked at start, as upstream (a later change of either file is not checked again)
  if (d.clientCA && o.requestheaderAllowedNames.length === 0) {
    if (d.requestHeaderCA.bundle.overlaps(d.clientCA.bundle)) {
      throw new AuthenticationConfigError(
        '--requestheader-client-ca-file and --client-ca-file contain overlapping certificates; --requestheader-allowed-names must be specified to ensure regular client certificates cannot set authenticating proxy headers for arbitrary users',
      );
    }
  }
  const lower = (xs: string[]): string[] => xs.map((x) => x.trim().toLowerCase()).filter(Boolean);
  const userHeaders = lower(o.requestheaderUsernameHeaders);
  const uidHeaders = lower(o.requestheaderUidHeaders);
  const groupHeaders = lower(o.requestheaderGroupHeaders);
  const extraPrefixes = lower(o.requestheaderExtraHeadersPrefix);
  const allowed = new Set(o.requestheaderAllowedNames);

  // whether a connection's certificate may speak for users: decided once per connection and bundle
  const proxies = new WeakMap<object, { bundle: CABundle; verdict: true | AuthenticationError }>();
  const proxyVerdict = (peer: PeerIdentity): true | AuthenticationError => {
    const trusted = d.requestHeaderCA.bundle;
    let seen = proxies.get(peer.connection);
    if (seen === undefined || seen.bundle !== trusted) {
      const cert = peer.certificate()!;
      const cn = Array.isArray(cert.subject?.CN) ? cert.subject.CN[0] : cert.subject?.CN;
      let verdict: true | AuthenticationError;
      if (!trusted.verifies(peer)) verdict = new AuthenticationError('requestheader: x509: certificate signed by unknown authority');
      else if (allowed.size && !allowed.has(cn ?? '')) verdict = new AuthenticationError(`requestheader: x509: subject with cn=${cn ?? ''} is not in the allowed list`);
      else verdict = true;
      seen = { bundle: trusted, verdict };
      proxies.set(peer.connection, seen);
    }
    return seen.verdict;
  };

  return {
    name: 'requestheader',
    authenticate({ headers, peer }) {
      if (!peer || !peer.certificate()) return null;
      const verdict = proxyVerdict(peer);
      if (verdict !== true) throw verdict;
      const username = firstValue(headers, userHeaders);
      if (!username) return null;
      const user: UserInfo = { username, groups: groupHeaders.flatMap((h) => values(headers, h)) };
      const uid = firstValue(headers, uidHeaders);
      if (uid) user.uid = uid;
      if (extraPrefixes.length) {
        const extra: Record<string, string[]> = {};
        for (const name in headers) {
          const prefix = extraPrefixes.find((p) => name.startsWith(p));
          if (!prefix) continue;
          const key = unescapeKey(name.slice(prefix.length).toLowerCase());
          (extra[key] ??= []).push(...values(headers, name));
        }
        if (Object.keys(extra).length) user.extra = extra;
      }
      return user;
    },
  };
}
