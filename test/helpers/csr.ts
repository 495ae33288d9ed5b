/**
 * Certificate signing requests for tests, made as a joining client makes them: a key generated on
 * the spot (RSA through node:crypto, handed to node-forge, which builds and signs the PKCS#10
 * request), or an ECDSA P-256 request made by the openssl command (what kubelets send).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { pooledRsaKey } from './key-pool.js';
import forge from 'node-forge';

export interface MadeCsr {
  /** The PEM CERTIFICATE REQUEST. */
  pem: string;
  /** The private key (PEM), to use with the issued certificate. */
  keyPem: string;
}

export interface CsrSubject {
  cn: string;
  orgs?: string[];
  dns?: string[];
  ips?: string[];
  emails?: string[];
  uris?: string[];
}

/** An RSA 2048 request signed by its own key with SHA-256. */
export function rsaCsr(subject: CsrSubject): MadeCsr {
  const privateKey = pooledRsaKey();
  const keyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  csr.setSubject([{ name: 'commonName', value: subject.cn }, ...(subject.orgs ?? []).map((value) => ({ name: 'organizationName', value }))]);
  const altNames = [
    ...(subject.dns ?? []).map((value) => ({ type: 2, value })),
    ...(subject.ips ?? []).map((ip) => ({ type: 7, ip })),
    ...(subject.emails ?? []).map((value) => ({ type: 1, value })),
    ...(subject.uris ?? []).map((value) => ({ type: 6, value })),
  ];
  if (altNames.length) csr.setAttributes([{ name: 'extensionRequest', extensions: [{ name: 'subjectAltName', altNames }] }]);
  csr.sign(key, forge.md.sha256.create());
  return { pem: forge.pki.certificationRequestToPem(csr), keyPem };
}

/** An ECDSA P-256 request made by openssl (the kind of key kubelets generate); or an Ed25519 one. */
export function ecCsr(subject: CsrSubject, keyType: 'ec' | 'ed25519' = 'ec'): MadeCsr {
  const key = keyType === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey : generateKeyPairSync('ed25519').privateKey;
  const keyPem = key.export({ type: 'pkcs8', format: 'pem' }).toString();
  const subj = `${(subject.orgs ?? []).map((o) => `/O=${o}`).join('')}/CN=${subject.cn}`;
  const san = [...(subject.dns ?? []).map((d) => `DNS:${d}`), ...(subject.ips ?? []).map((i) => `IP:${i}`)];
  const dir = mkdtempSync(join(tmpdir(), 'csr-'));
  try {
    writeFileSync(join(dir, 'key.pem'), keyPem, { mode: 0o600 });
    const args = ['req', '-new', '-key', join(dir, 'key.pem'), '-subj', subj, ...(san.length ? ['-addext', `subjectAltName=${san.join(',')}`] : [])];
    return { pem: execFileSync('openssl', args).toString(), keyPem };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The request's PEM with one byte of its signature changed (the request no longer verifies). */
export function tamperedSignature(pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  der[der.length - 5]! ^= 0xff;
  return `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE REQUEST-----\n`;
}

export const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A CertificateSigningRequest object asking `signerName` for `usages`. */
export function csrObject(name: string, pem: string, signerName: string, usages: string[], more: Record<string, unknown> = {}, apiVersion = 'certificates.svc.io/v1') {
  return { apiVersion, kind: 'CertificateSigningRequest', metadata: { name }, spec: { request: b64(pem), signerName, usages, ...more } };
}
