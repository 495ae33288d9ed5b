/**
 * First-start credentials in --data-dir when no serving certificate is given: a CA, a serving
 * certificate for localhost / 127.0.0.1 / ::1 / the bind address, an admin client certificate
 * (CN svc-admin, O system:masters) and admin.kubeconfig embedding them. Existing files are reused, so
 * a restart keeps the same CA and the kubeconfig stays valid.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { newRsaPrivateKey } from '../api/generated-keys.js';
import type forge from 'node-forge';

export interface TlsMaterial {
  cert: string;
  key: string;
  /** CA bundle that client certificates are verified against ('' when client certs are not used). */
  clientCA: string;
  /** The CA of the serving certificate, when generated (written into admin.kubeconfig). */
  servingCA?: string;
  kubeconfigPath?: string;
}

const requireHere = createRequire(import.meta.url);
let forgeModule: typeof forge | undefined;
/** node-forge loads when a certificate is made or read: a restart that finds its certificates loads none of it. */
const forgeLib = (): typeof forge => (forgeModule ??= requireHere('node-forge') as typeof forge);

type Issuer = { cert: forge.pki.Certificate; key: forge.pki.PrivateKey };

function serial(): string {
  return forgeLib().util.bytesToHex(forgeLib().random.getBytesSync(16)).replace(/^[89a-f]/, '1');
}

/**
 * A 2048-bit RSA key pair made by OpenSSL (node:crypto) and handed to forge, which builds and signs
 * the certificates: forge's own JavaScript key generation took most of a first start (about half a
 * second a key, three keys).
 */
function rsaKeyPair(): { publicKey: forge.pki.rsa.PublicKey; privateKey: forge.pki.rsa.PrivateKey } {
  const privateKey = newRsaPrivateKey();
  const key = forgeLib().pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()) as forge.pki.rsa.PrivateKey;
  return { privateKey: key, publicKey: forgeLib().pki.rsa.setPublicKey(key.n, key.e) };
}

function makeCert(opts: {
  subject: { name: string; value: string }[];
  issuer?: Issuer;
  isCA?: boolean;
  extKeyUsage?: { serverAuth?: boolean; clientAuth?: boolean };
  altNames?: { type: number; value?: string; ip?: string }[];
  years: number;
}): { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey } {
  const keys = rsaKeyPair();
  const cert = forgeLib().pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  const now = new Date();
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + opts.years * 365 * 24 * 3600_000);
  cert.setSubject(opts.subject);
  cert.setIssuer(opts.issuer ? opts.issuer.cert.subject.attributes : opts.subject);
  const exts: object[] = [{ name: 'basicConstraints', cA: !!opts.isCA, critical: true }];
  exts.push(
    opts.isCA
      ? { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true }
      : { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
  );
  if (opts.extKeyUsage) exts.push({ name: 'extKeyUsage', ...opts.extKeyUsage });
  if (opts.altNames) exts.push({ name: 'subjectAltName', altNames: opts.altNames });
  exts.push({ name: 'subjectKeyIdentifier' });
  cert.setExtensions(exts);
  cert.sign((opts.issuer?.key ?? keys.privateKey) as forge.pki.rsa.PrivateKey, forgeLib().md.sha256.create());
  return { cert, key: keys.privateKey };
}

const pem = (c: forge.pki.Certificate): string => forgeLib().pki.certificateToPem(c);
const keyPem = (k: forge.pki.rsa.PrivateKey): string => forgeLib().pki.privateKeyToPem(k);

/** The generated CA in `dir`, as the issuer of further certificates. */
function loadCA(dir: string): Issuer {
  return {
    cert: forgeLib().pki.certificateFromPem(readFileSync(join(dir, 'ca.crt'), 'utf8')),
    key: forgeLib().pki.privateKeyFromPem(readFileSync(join(dir, 'ca.key'), 'utf8')),
  };
}

/** Host to put in the kubeconfig for a bind address (wildcards mean loopback). */
export function clientHost(bindAddress: string): string {
  if (bindAddress === '0.0.0.0' || bindAddress === '' || bindAddress === '::') return '127.0.0.1';
  return isIP(bindAddress) === 6 ? `[${bindAddress}]` : bindAddress;
}

export function kubeconfigYaml(server: string, caPem: string, certPem: string, keyPemText: string, user = 'svc-admin'): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${b64(caPem)}`,
    `    server: ${server}`,
    '  name: svc',
    'contexts:',
    '- context:',
    '    cluster: svc',
    `    user: ${user}`,
    `  name: ${user}@svc`,
    `current-context: ${user}@svc`,
    'preferences: {}',
    'users:',
    `- name: ${user}`,
    '  user:',
    `    client-certificate-data: ${b64(certPem)}`,
    `    client-key-data: ${b64(keyPemText)}`,
    '',
  ].join('\n');
}

/**
 * Ensures generated credentials exist under `dir` and returns the serving material; writes
 * admin.kubeconfig pointing at https://<host>:<port>.
 */
export function ensureGeneratedTls(dir: string, bindAddress: string, port: number): TlsMaterial {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => join(dir, n);
  if (!existsSync(f('ca.crt')) || !existsSync(f('ca.key'))) {
    const ca = makeCert({ subject: [{ name: 'commonName', value: 'svc-ca' }], isCA: true, years: 10 });
    writeFileSync(f('ca.key'), keyPem(ca.key), { mode: 0o600 });
    writeFileSync(f('ca.crt'), pem(ca.cert));
  }
  // the CA is read only to issue a certificate that is missing
  let ca: Issuer | undefined;
  const issuer = (): Issuer => (ca ??= loadCA(dir));
  if (!existsSync(f('apiserver.crt')) || !existsSync(f('apiserver.key'))) {
    const ips = new Set(['127.0.0.1', '::1']);
    const dns = new Set(['localhost', 'svc', 'svc.default', 'svc.default.svc', 'svc.default.svc.cluster.local']);
    if (isIP(bindAddress) && bindAddress !== '0.0.0.0' && bindAddress !== '::') ips.add(bindAddress);
    const altNames = [...[...dns].map((value) => ({ type: 2, value })), ...[...ips].map((ip) => ({ type: 7, ip }))];
    const srv = makeCert({ subject: [{ name: 'commonName', value: 'svc-apiserver' }], issuer: issuer(), extKeyUsage: { serverAuth: true }, altNames, years: 1 });
    writeFileSync(f('apiserver.key'), keyPem(srv.key), { mode: 0o600 });
    writeFileSync(f('apiserver.crt'), pem(srv.cert));
  }
  if (!existsSync(f('admin.crt')) || !existsSync(f('admin.key'))) {
    const admin = makeCert({
      subject: [
        { name: 'commonName', value: 'svc-admin' },
        { name: 'organizationName', value: 'system:masters' },
      ],
      issuer: issuer(),
      extKeyUsage: { clientAuth: true },
      years: 1,
    });
    writeFileSync(f('admin.key'), keyPem(admin.key), { mode: 0o600 });
    writeFileSync(f('admin.crt'), pem(admin.cert));
  }
  const caPem = readFileSync(f('ca.crt'), 'utf8');
  const kubeconfigPath = f('admin.kubeconfig');
  if (port > 0) writeAdminKubeconfig(dir, bindAddress, port);
  return {
    cert: readFileSync(f('apiserver.crt'), 'utf8'),
    key: readFileSync(f('apiserver.key'), 'utf8'),
    clientCA: caPem,
    servingCA: caPem,
    kubeconfigPath,
  };
}

/** Writes admin.kubeconfig for https://<host>:<port> with the generated CA and admin certificate. */
export function writeAdminKubeconfig(dir: string, bindAddress: string, port: number): void {
  const f = (n: string) => join(dir, n);
  const server = `https://${clientHost(bindAddress)}:${port}`;
  const text = kubeconfigYaml(server, readFileSync(f('ca.crt'), 'utf8'), readFileSync(f('admin.crt'), 'utf8'), readFileSync(f('admin.key'), 'utf8'));
  // rewritten only when it changes: truncating a file waits on the filesystem's journal, which a busy
  // disk can make last a second, and a restart on the same port has nothing new to say
  const path = f('admin.kubeconfig');
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return;
  writeFileSync(path, text, { mode: 0o600 });
}

/** Issues a client certificate from the generated CA (used by tests and tools). */
export function issueClientCert(dir: string, user: string, groups: string[]): { cert: string; key: string } {
  const c = makeCert({
    subject: [{ name: 'commonName', value: user }, ...groups.map((g) => ({ name: 'organizationName', value: g }))],
    issuer: loadCA(dir),
    extKeyUsage: { clientAuth: true },
    years: 1,
  });
  return { cert: pem(c.cert), key: keyPem(c.key) };
}
