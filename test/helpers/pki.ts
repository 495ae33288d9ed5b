/**
 * Test PKI: CAs and leaf certificates made on the spot (keys from node:crypto, certificates built and
 * signed with node-forge), for the TLS counterparts the tests run: OpenID providers, webhooks,
 * authenticating proxies and client-certificate users.
 */
import forge from 'node-forge';
import { pooledRsaKey } from './key-pool.js';

export interface KeyPair {
  cert: string;
  key: string;
}

export interface CA extends KeyPair {
  issue(opts: { cn: string; orgs?: string[]; hosts?: string[]; server?: boolean; client?: boolean; days?: number; notBefore?: Date }): KeyPair;
}

let serialCounter = 1;

function rsaKeys(): { publicKey: forge.pki.PublicKey; privateKey: forge.pki.rsa.PrivateKey; pem: string } {
  const privateKey = pooledRsaKey();
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const priv = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { privateKey: priv, publicKey: forge.pki.setRsaPublicKey(priv.n, priv.e), pem };
}

function build(opts: {
  subject: forge.pki.CertificateField[];
  issuer?: { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey };
  isCA: boolean;
  hosts?: string[];
  server?: boolean;
  client?: boolean;
  days: number;
  notBefore?: Date;
}): { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey; keyPem: string } {
  const k = rsaKeys();
  const cert = forge.pki.createCertificate();
  cert.publicKey = k.publicKey;
  cert.serialNumber = (0x1000 + serialCounter++).toString(16) + Date.now().toString(16);
  const start = opts.notBefore ?? new Date(Date.now() - 60_000);
  cert.validity.notBefore = start;
  cert.validity.notAfter = new Date(start.getTime() + opts.days * 86_400_000);
  cert.setSubject(opts.subject);
  cert.setIssuer(opts.issuer ? opts.issuer.cert.subject.attributes : opts.subject);
  const exts: object[] = [{ name: 'basicConstraints', cA: opts.isCA, critical: true }];
  exts.push(opts.isCA ? { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true } : { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true });
  if (!opts.isCA) exts.push({ name: 'extKeyUsage', serverAuth: !!opts.server, clientAuth: !!opts.client });
  if (opts.hosts?.length) exts.push({ name: 'subjectAltName', altNames: opts.hosts.map((h) => (/^[\d.]+$|:/.test(h) ? { type: 7, ip: h } : { type: 2, value: h })) });
  exts.push({ name: 'subjectKeyIdentifier' });
  cert.setExtensions(exts);
  cert.sign(opts.issuer?.key ?? k.privateKey, forge.md.sha256.create());
  return { cert, key: k.privateKey, keyPem: k.pem };
}

/** A new self-signed CA that issues leaf certificates. */
export function makeCA(cn = 'test-ca'): CA {
  const ca = build({ subject: [{ name: 'commonName', value: cn }], isCA: true, days: 3650 });
  return {
    cert: forge.pki.certificateToPem(ca.cert),
    key: ca.keyPem,
    issue(o) {
      const leaf = build({
        subject: [{ name: 'commonName', value: o.cn }, ...(o.orgs ?? []).map((value) => ({ name: 'organizationName', value }))],
        issuer: ca,
        isCA: false,
        hosts: o.hosts,
        server: o.server,
        client: o.client,
        days: o.days ?? 365,
        notBefore: o.notBefore,
      });
      return { cert: forge.pki.certificateToPem(leaf.cert), key: leaf.keyPem };
    },
  };
}

/** A serving certificate for loopback (127.0.0.1, ::1, localhost). */
export function loopbackServing(ca: CA, cn = 'localhost'): KeyPair {
  return ca.issue({ cn, hosts: ['127.0.0.1', '::1', 'localhost'], server: true });
}

let shared: { ca: CA; serving: KeyPair } | undefined;

/** One CA and loopback serving certificate per test process (RSA signing in JS is the slow part). */
export function sharedLoopbackPki(): { ca: CA; serving: KeyPair } {
  if (!shared) {
    const ca = makeCA('svc-test-remote-ca');
    shared = { ca, serving: loopbackServing(ca) };
  }
  return shared;
}
