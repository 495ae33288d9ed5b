/**
 * The signing flags, spelled and defaulted as upstream's kube-controller-manager has them
 * (--cluster-signing-cert-file / -key-file for every built-in signer, or one pair per signer, and
 * --cluster-signing-duration), and what they resolve to: the CA each built-in signer signs with.
 * Without any file the signers use the cluster CA generated in --data-dir (when the serving
 * certificate is generated); with a given serving certificate and no signing files, nothing signs.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StartError } from '../api/start-error.js';
import { type BuiltinSigner, KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET, KUBELET_SERVING, LEGACY_UNKNOWN } from './signers.js';
import type { SigningCA } from './x509.js';

export interface CertificateSigningOptions {
  clusterSigningCertFile: string;
  clusterSigningKeyFile: string;
  clusterSigningDurationMs: number;
  clusterSigningKubeletServingCertFile: string;
  clusterSigningKubeletServingKeyFile: string;
  clusterSigningKubeletClientCertFile: string;
  clusterSigningKubeletClientKeyFile: string;
  clusterSigningKubeApiserverClientCertFile: string;
  clusterSigningKubeApiserverClientKeyFile: string;
  clusterSigningLegacyUnknownCertFile: string;
  clusterSigningLegacyUnknownKeyFile: string;
}

export interface CertificateFlagSpec {
  name: string;
  key: keyof CertificateSigningOptions;
  kind: 'string' | 'duration';
  def: unknown;
  help: string;
}

const file = (name: string, key: keyof CertificateSigningOptions, help: string): CertificateFlagSpec => ({ name, key, kind: 'string', def: '', help });

export const certificateFlags: CertificateFlagSpec[] = [
  file('cluster-signing-cert-file', 'clusterSigningCertFile', 'PEM CA certificate the built-in signers issue certificates with (default: the CA generated in --data-dir when the serving certificate is generated). Exclusive with the per-signer files.'),
  file('cluster-signing-key-file', 'clusterSigningKeyFile', 'PEM private key (RSA, ECDSA or Ed25519) of --cluster-signing-cert-file.'),
  { name: 'cluster-signing-duration', key: 'clusterSigningDurationMs', kind: 'duration', def: 8760 * 3_600_000, help: 'The longest lifetime of a signed certificate; a request\'s spec.expirationSeconds may ask for less.' },
  file('cluster-signing-kubelet-serving-cert-file', 'clusterSigningKubeletServingCertFile', 'CA certificate of the svc.io/kubelet-serving signer.'),
  file('cluster-signing-kubelet-serving-key-file', 'clusterSigningKubeletServingKeyFile', 'Private key of the svc.io/kubelet-serving signer.'),
  file('cluster-signing-kubelet-client-cert-file', 'clusterSigningKubeletClientCertFile', 'CA certificate of the svc.io/kube-apiserver-client-kubelet signer.'),
  file('cluster-signing-kubelet-client-key-file', 'clusterSigningKubeletClientKeyFile', 'Private key of the svc.io/kube-apiserver-client-kubelet signer.'),
  file('cluster-signing-kube-apiserver-client-cert-file', 'clusterSigningKubeApiserverClientCertFile', 'CA certificate of the svc.io/kube-apiserver-client signer.'),
  file('cluster-signing-kube-apiserver-client-key-file', 'clusterSigningKubeApiserverClientKeyFile', 'Private key of the svc.io/kube-apiserver-client signer.'),
  file('cluster-signing-legacy-unknown-cert-file', 'clusterSigningLegacyUnknownCertFile', 'CA certificate of the svc.io/legacy-unknown signer.'),
  file('cluster-signing-legacy-unknown-key-file', 'clusterSigningLegacyUnknownKeyFile', 'Private key of the svc.io/legacy-unknown signer.'),
];

const PER_SIGNER: readonly [BuiltinSigner, keyof CertificateSigningOptions, keyof CertificateSigningOptions][] = [
  [KUBELET_SERVING, 'clusterSigningKubeletServingCertFile', 'clusterSigningKubeletServingKeyFile'],
  [KUBE_APISERVER_CLIENT_KUBELET, 'clusterSigningKubeletClientCertFile', 'clusterSigningKubeletClientKeyFile'],
  [KUBE_APISERVER_CLIENT, 'clusterSigningKubeApiserverClientCertFile', 'clusterSigningKubeApiserverClientKeyFile'],
  [LEGACY_UNKNOWN, 'clusterSigningLegacyUnknownCertFile', 'clusterSigningLegacyUnknownKeyFile'],
];

/** upstream's check: the shared pair and per-signer pairs are exclusive. */
export function certificateFlagError(o: CertificateSigningOptions): string | undefined {
  const perSigner = PER_SIGNER.some(([, c, k]) => o[c] || o[k]);
  if ((o.clusterSigningCertFile || o.clusterSigningKeyFile) && perSigner) return 'cannot specify default and per controller certs at the same time';
  if (o.clusterSigningDurationMs <= 0) return '--cluster-signing-duration must be greater than 0';
  return undefined;
}

/** A CA from its two files; a problem is a start error naming the file. */
export function loadSigningCA(certFile: string, keyFile: string): SigningCA {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(certFile));
  } catch (e) {
    throw new StartError(`error reading CA cert file "${certFile}": ${(e as Error).message}`);
  }
  try {
    const key = createPrivateKey(readFileSync(keyFile));
    if (!cert.checkPrivateKey(key)) throw new Error('the private key does not match the certificate');
    return { cert, key };
  } catch (e) {
    throw new StartError(`error reading CA key file "${keyFile}": ${(e as Error).message}`);
  }
}

export interface SignerConfig {
  /** The CA of each built-in signer that signs here (absent: that signer has no files and does not sign). */
  cas: Partial<Record<BuiltinSigner, SigningCA>>;
  durationMs: number;
}

/** The signers' CAs from the flags, or the generated cluster CA in `dataDir` when `generated`. */
export function resolveSigners(o: CertificateSigningOptions, dataDir: string, generated: boolean): SignerConfig {
  const cas: Partial<Record<BuiltinSigner, SigningCA>> = {};
  let shared: [string, string] | undefined;
  if (o.clusterSigningCertFile || o.clusterSigningKeyFile) shared = [o.clusterSigningCertFile, o.clusterSigningKeyFile];
  else if (!PER_SIGNER.some(([, c, k]) => o[c] || o[k]) && generated && existsSync(join(dataDir, 'ca.key'))) shared = [join(dataDir, 'ca.crt'), join(dataDir, 'ca.key')];
  const loaded = new Map<string, SigningCA>();
  const load = (c: string, k: string): SigningCA => {
    const id = `${c}\n${k}`;
    if (!loaded.has(id)) loaded.set(id, loadSigningCA(c, k));
    return loaded.get(id)!;
  };
  for (const [signer, c, k] of PER_SIGNER) {
    const pair = o[c] || o[k] ? [o[c] as string, o[k] as string] : shared;
    if (pair) cas[signer] = load(pair[0]!, pair[1]!);
  }
  return { cas, durationMs: o.clusterSigningDurationMs };
}
