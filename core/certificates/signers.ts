/**
 * The built-in signers (upstream's `kubernetes.io/...` names, spelled `svc.io/...` here; the upstream
 * spelling names the same signer), what each demands of a request before it signs (upstream's
 * isRequestForSigner functions: usages, the kubelet signers' subject and alternative-name rules),
 * and how long what it signs lives (upstream's duration: the signer's TTL, shortened by
 * spec.expirationSeconds, never below ten minutes; backdated five minutes unless short-lived).
 */
import type { CertificateRequest } from './x509.js';

export const KUBE_APISERVER_CLIENT = 'svc.io/kube-apiserver-client';
export const KUBE_APISERVER_CLIENT_KUBELET = 'svc.io/kube-apiserver-client-kubelet';
export const KUBELET_SERVING = 'svc.io/kubelet-serving';
export const LEGACY_UNKNOWN = 'svc.io/legacy-unknown';

export const BUILTIN_SIGNERS = [KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET, KUBELET_SERVING, LEGACY_UNKNOWN] as const;
export type BuiltinSigner = (typeof BUILTIN_SIGNERS)[number];

/** `kubernetes.io/kubelet-serving` -> `svc.io/kubelet-serving`; other names as they are. */
export function canonicalSignerName(name: string): string {
  return name.startsWith('kubernetes.io/') ? `svc.io/${name.slice('kubernetes.io/'.length)}` : name;
}

/** The built-in signer a name means in either spelling, or undefined. */
export function builtinSigner(name: string | undefined): BuiltinSigner | undefined {
  const c = canonicalSignerName(name ?? '');
  return (BUILTIN_SIGNERS as readonly string[]).includes(c) ? (c as BuiltinSigner) : undefined;
}

export const isLegacyUnknown = (name: string | undefined): boolean => builtinSigner(name) === LEGACY_UNKNOWN;

const sameSet = (a: ReadonlySet<string>, b: readonly string[]): boolean => a.size === b.length && b.every((x) => a.has(x));

const KUBELET_SERVING_USAGES = ['digital signature', 'key encipherment', 'server auth'];
const KUBELET_SERVING_USAGES_NO_RSA = ['digital signature', 'server auth'];
const KUBELET_CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];
const KUBELET_CLIENT_USAGES_NO_RSA = ['digital signature', 'client auth'];

const onlySystemNodes = (req: CertificateRequest): boolean => req.subject.organizations.length === 1 && req.subject.organizations[0] === 'system:nodes';

/** upstream's ValidateKubeletClientCSR: `system:node:<name>` in `system:nodes`, no alternative names, client usages. */
export function kubeletClientProblem(req: CertificateRequest, usages: ReadonlySet<string>): string | undefined {
  if (!onlySystemNodes(req)) return 'subject organization is not system:nodes';
  if (req.dnsNames.length) return 'DNS subjectAltNames are not allowed';
  if (req.emailAddresses.length) return 'Email subjectAltNames are not allowed';
  if (req.ipAddresses.length) return 'IP subjectAltNames are not allowed';
  if (req.uris.length) return 'URI subjectAltNames are not allowed';
  if (!req.subject.commonName.startsWith('system:node:')) return 'subject common name does not begin with system:node:';
  if (!sameSet(usages, KUBELET_CLIENT_USAGES) && !sameSet(usages, KUBELET_CLIENT_USAGES_NO_RSA)) return `usages did not match [${[...KUBELET_CLIENT_USAGES].sort().join(' ')}]`;
  return undefined;
}

/** upstream's ValidateKubeletServingCSR: `system:node:<name>` in `system:nodes`, DNS or IP names only, serving usages. */
export function kubeletServingProblem(req: CertificateRequest, usages: ReadonlySet<string>): string | undefined {
  if (!onlySystemNodes(req)) return 'subject organization is not system:nodes';
  if (!req.dnsNames.length && !req.ipAddresses.length) return 'DNS or IP subjectAltName is required';
  if (req.emailAddresses.length) return 'Email subjectAltNames are not allowed';
  if (req.uris.length) return 'URI subjectAltNames are not allowed';
  if (!sameSet(usages, KUBELET_SERVING_USAGES) && !sameSet(usages, KUBELET_SERVING_USAGES_NO_RSA)) return `usages did not match [${[...KUBELET_SERVING_USAGES].sort().join(' ')}]`;
  if (!req.subject.commonName.startsWith('system:node:')) return 'subject common name does not begin with system:node:';
  return undefined;
}

function apiserverClientProblem(usages: readonly string[]): string | undefined {
  let clientAuth = false;
  for (const u of usages) {
    if (u === 'client auth') clientAuth = true;
    else if (u !== 'digital signature' && u !== 'key encipherment') return `invalid usage for client certificate: ${u}`;
  }
  return clientAuth ? undefined : 'missing required usage for client certificate: client auth';
}

/** Why `signer` refuses to sign this request (the Failed condition's message), or undefined. */
export function signerProblem(signer: BuiltinSigner, req: CertificateRequest, usages: readonly string[]): string | undefined {
  const set = new Set(usages);
  switch (signer) {
    case KUBELET_SERVING:
      return kubeletServingProblem(req, set);
    case KUBE_APISERVER_CLIENT_KUBELET:
      return kubeletClientProblem(req, set);
    case KUBE_APISERVER_CLIENT:
      return apiserverClientProblem(usages);
    case LEGACY_UNKNOWN:
      // no restriction, for compatibility (upstream)
      return undefined;
  }
}

const MIN_DURATION_MS = 10 * 60_000;
const BACKDATE_MS = 5 * 60_000;
const SHORT_MS = 8 * 3_600_000;

/** The lifetime of a certificate: the signer's TTL, or less when the request asks for less (at least ten minutes). */
export function certificateDurationMs(ttlMs: number, expirationSeconds: number | undefined): number {
  if (expirationSeconds === undefined || expirationSeconds === null) return ttlMs;
  const requested = expirationSeconds * 1000;
  if (requested > ttlMs) return ttlMs;
  if (requested < MIN_DURATION_MS) return MIN_DURATION_MS;
  return requested;
}

/** NotBefore and NotAfter as upstream's PermissiveSigningPolicy sets them; an expired CA is an error. */
export function validityWindow(now: number, durationMs: number, caNotAfter: number): { notBefore: Date; notAfter: Date } {
  const notBefore = now - BACKDATE_MS;
  let notAfter = durationMs < SHORT_MS ? now + durationMs : now + durationMs - BACKDATE_MS;
  if (notAfter >= caNotAfter) notAfter = caNotAfter;
  if (notBefore >= caNotAfter) throw new Error(`the signer has expired: NotAfter=${new Date(caNotAfter).toISOString()}`);
  if (now >= caNotAfter) throw new Error(`refusing to sign a certificate that expired in the past: NotAfter=${new Date(caNotAfter).toISOString()}`);
  return { notBefore: new Date(notBefore), notAfter: new Date(notAfter) };
}
