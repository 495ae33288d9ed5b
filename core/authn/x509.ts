/**
 * X.509 client certificates, verified by TLS against --client-ca-file: the subject CN is the user
 * name and each O is a group. A presented certificate that does not verify is a rejected credential.
 * The identity is computed once per TLS connection.
 */
import type { TLSSocket, PeerCertificate } from 'node:tls';
import type { UserInfo } from '../api/types.js';
import { AuthenticationError, type Authenticator } from './authenticator.js';

const CLIENT_AUTH_EKU = '1.3.6.1.5.5.7.3.2';
const perSocket = new WeakMap<TLSSocket, UserInfo | AuthenticationError | null>();

function identityOf(socket: TLSSocket): UserInfo | AuthenticationError | null {
  const cert = socket.getPeerCertificate() as PeerCertificate & { ext_key_usage?: string[] };
  if (!cert || Object.keys(cert).length === 0) return null;
  if (!socket.authorized) return new AuthenticationError(`x509: ${socket.authorizationError ?? 'certificate signed by unknown authority'}`);
  if (cert.ext_key_usage && !cert.ext_key_usage.includes(CLIENT_AUTH_EKU)) {
    return new AuthenticationError('x509: certificate specifies an incompatible key usage');
  }
  const cn = cert.subject?.CN;
  const username = Array.isArray(cn) ? cn[0] : cn;
  if (!username) return new AuthenticationError('x509: certificate has no common name');
  const o = cert.subject?.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? [...o] : [o];
  return { username, groups };
}

export function x509Authenticator(): Authenticator {
  return {
    name: 'x509',
    authenticate({ socket }) {
      if (!socket || typeof socket.getPeerCertificate !== 'function') return null;
      let id = perSocket.get(socket);
      if (id === undefined) {
        id = identityOf(socket);
        perSocket.set(socket, id);
      }
      if (id instanceof AuthenticationError) throw id;
      return id;
    },
  };
}
