/**
 * X.509 client certificates, verified by TLS against --client-ca-file: the subject CN is the user
 * name and each O is a group. A presented certificate that does not verify is a rejected credential.
 * The identity is read once per connection, but the validity period is checked on every request, as
 * upstream does: a certificate that expires while its keep-alive connection stays open stops working.
 * When --client-ca-file changes (core/authn/dynamic-ca-file.ts) each connection is judged again
 * against the new bundle on its next request: a CA taken out of the file stops its certificates at
 * once; a certificate of a CA added to it works from the next connection (the handshake of an open
 * one verified it against the old bundle).
 */
import type { UserInfo } from '../api/types.js';
import { AuthenticationError, type Authenticator, type PeerIdentity } from './authenticator.js';
import type { CABundle } from './client-ca.js';
import type { CAContent } from './dynamic-ca-file.js';

const CLIENT_AUTH_EKU = '1.3.6.1.5.5.7.3.2';

interface CertIdentity {
  user: UserInfo;
  notBefore: number;
  notAfter: number;
}

function identityOf(peer: PeerIdentity, trusted: CABundle | undefined): CertIdentity | AuthenticationError | null {
  const cert = peer.certificate();
  if (!cert) return null;
  if (!peer.authorized) return new AuthenticationError(`x509: ${peer.authorizationError ?? 'certificate signed by unknown authority'}`);
  // the listener may also trust the front proxy's CA: only --client-ca-file makes users
  if (trusted && !trusted.verifies(peer)) return new AuthenticationError('x509: certificate signed by unknown authority');
  if (cert.ext_key_usage && !cert.ext_key_usage.includes(CLIENT_AUTH_EKU)) {
    return new AuthenticationError('x509: certificate specifies an incompatible key usage');
  }
  const cn = cert.subject?.CN;
  const username = Array.isArray(cn) ? cn[0] : cn;
  if (!username) return new AuthenticationError('x509: certificate has no common name');
  const o = cert.subject?.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? [...o] : [o];
  return { user: { username, groups }, notBefore: Date.parse(cert.valid_from), notAfter: Date.parse(cert.valid_to) };
}

/** `trusted`: the --client-ca-file bundle, needed when the listener trusts other CAs too. */
export function x509Authenticator(now: () => number = Date.now, trusted?: CAContent): Authenticator {
  // the verdict of a connection, and the bundle it was reached with
  const perConnection = new WeakMap<object, { bundle: CABundle | undefined; id: CertIdentity | AuthenticationError | null }>();
  return {
    name: 'x509',
    authenticate({ peer }) {
      if (!peer) return null;
      const bundle = trusted?.bundle;
      let seen = perConnection.get(peer.connection);
      if (seen === undefined || seen.bundle !== bundle) {
        seen = { bundle, id: identityOf(peer, bundle) };
        perConnection.set(peer.connection, seen);
      }
      const id = seen.id;
      if (id instanceof AuthenticationError) throw id;
      if (!id) return null;
      const t = now();
      if (t > id.notAfter) throw new AuthenticationError('x509: certificate has expired or is not yet valid: current time is after the certificate\'s NotAfter');
      if (t < id.notBefore) throw new AuthenticationError('x509: certificate has expired or is not yet valid: current time is before the certificate\'s NotBefore');
      return id.user;
    },
  };
}
