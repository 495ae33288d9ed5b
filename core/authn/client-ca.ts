/**
 * A CA bundle that client certificates are checked against. The listener trusts the union of
 * --client-ca-file and --requestheader-client-ca-file, so TLS only says "chains to one of them";
 * which one is decided here: a certificate of the peer's chain is one of the bundle's CAs, or was
 * issued and signed by one (name match plus a signature check by node:crypto, within the CA's
 * validity, CA flag set). Certificates are compared by content, never by subject name alone, since
 * unrelated CAs may share a name.
 */
import { X509Certificate } from 'node:crypto';
import type { PeerIdentity } from './authenticator.js';

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

export class CABundle {
  readonly certificates: readonly X509Certificate[];
  private readonly fingerprints: ReadonlySet<string>;

  /** Throws when a block is not a certificate; an empty bundle is allowed (it trusts nothing). */
  constructor(pem: string) {
    this.certificates = (pem.match(PEM_BLOCK) ?? []).map((b) => new X509Certificate(b));
    this.fingerprints = new Set(this.certificates.map((c) => c.fingerprint256));
  }

  get size(): number {
    return this.certificates.length;
  }

  /** Whether the two bundles share a certificate. */
  overlaps(other: CABundle): boolean {
    return other.certificates.some((c) => this.fingerprints.has(c.fingerprint256));
  }

  /** Whether the transport verified the peer's certificate and its chain passes through this bundle. */
  verifies(peer: PeerIdentity, now = Date.now()): boolean {
    if (!peer.authorized) return false;
    for (const der of peer.certificateChain()) {
      const cert = new X509Certificate(der);
      if (this.fingerprints.has(cert.fingerprint256)) return true;
      for (const ca of this.certificates) {
        if (!ca.ca || now < Date.parse(ca.validFrom) || now > Date.parse(ca.validTo)) continue;
        if (cert.checkIssued(ca) && cert.verify(ca.publicKey)) return true;
      }
    }
    return false;
  }
}
