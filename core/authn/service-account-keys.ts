/**
 * The keys of service account tokens: the one private key that signs (--service-account-signing-key-file,
 * or a key generated in --data-dir next to a generated serving certificate) and every public key that
 * verifies (--service-account-key-file, repeatable, default --tls-private-key-file, plus the signing
 * key's own). PEM files may hold RSA or ECDSA private keys (PKCS#1, PKCS#8, SEC 1), public keys
 * (PKIX, PKCS#1) or certificates; other blocks (EC PARAMETERS) are skipped, as upstream's parser does.
 * A file that cannot be read or holds no usable key stops the start with an error naming it.
 * Key ids are upstream's: the unpadded base64url SHA-256 of the key's PKIX DER.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StartError } from '../api/start-error.js';
import { newRsaPrivateKey } from '../api/generated-keys.js';

export type SigningAlgorithm = 'RS256' | 'ES256' | 'ES384' | 'ES512';

export interface VerificationKey {
  key: KeyObject;
  kid: string;
  /** The algorithm tokens signed with this key carry (RSA: RS256; ECDSA: by curve). */
  alg: SigningAlgorithm;
}

export interface SigningKey extends VerificationKey {
  privateKey: KeyObject;
}

/** Where a key generated for a generated serving certificate is kept. */
export const GENERATED_SIGNING_KEY = 'service-account.key';

const pemBlockRe = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

export function keyId(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64url');
}

/** The JWS algorithm of a public key, or undefined for a kind tokens cannot use. */
export function algorithmOf(publicKey: KeyObject): SigningAlgorithm | undefined {
  if (publicKey.asymmetricKeyType === 'rsa') return 'RS256';
  if (publicKey.asymmetricKeyType !== 'ec') return undefined;
  const curve = publicKey.asymmetricKeyDetails?.namedCurve;
  return curve === 'prime256v1' ? 'ES256' : curve === 'secp384r1' ? 'ES384' : curve === 'secp521r1' ? 'ES512' : undefined;
}

function readKeyFile(flag: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new StartError(`${flag}: cannot read key file "${file}": ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** The public key one PEM block stands for, if it is a key or certificate at all. */
function publicKeyOfBlock(type: string, pem: string): KeyObject | undefined {
  try {
    if (type === 'CERTIFICATE') return new X509Certificate(pem).publicKey;
    if (type.endsWith('PRIVATE KEY')) return createPublicKey(createPrivateKey(pem));
    if (type.endsWith('PUBLIC KEY')) return createPublicKey(pem);
  } catch {
    // an unparsable block is skipped; a file with no usable key at all is an error below
  }
  return undefined;
}

/** Every RSA or ECDSA public key in a PEM file. */
export function loadVerificationKeys(file: string, flag = '--service-account-key-file'): VerificationKey[] {
  const text = readKeyFile(flag, file);
  const keys: VerificationKey[] = [];
  for (const m of text.matchAll(pemBlockRe)) {
    const key = publicKeyOfBlock(m[1]!, m[0]);
    const alg = key && algorithmOf(key);
    if (key && alg) keys.push({ key, kid: keyId(key), alg });
  }
  if (keys.length === 0) throw new StartError(`${flag}: failed to parse key file "${file}": data does not contain any valid RSA or ECDSA public keys`);
  return keys;
}

/** The private key of a PEM file (the first private key block). */
export function loadSigningKey(file: string, flag = '--service-account-signing-key-file'): SigningKey {
  const text = readKeyFile(flag, file);
  for (const m of text.matchAll(pemBlockRe)) {
    if (!m[1]!.endsWith('PRIVATE KEY')) continue;
    let privateKey: KeyObject;
    try {
      privateKey = createPrivateKey(m[0]);
    } catch {
      continue;
    }
    const key = createPublicKey(privateKey);
    const alg = algorithmOf(key);
    if (!alg) throw new StartError(`${flag}: key in "${file}" is neither RSA nor ECDSA on P-256, P-384 or P-521`);
    return { privateKey, key, kid: keyId(key), alg };
  }
  throw new StartError(`${flag}: failed to parse key file "${file}": data does not contain a valid RSA or ECDSA private key`);
}

/** The signing key kept in the data dir, created (RSA 2048) on first use. */
export function ensureGeneratedSigningKey(dataDir: string): string {
  const file = join(dataDir, GENERATED_SIGNING_KEY);
  if (!existsSync(file)) {
    writeFileSync(file, newRsaPrivateKey().export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 });
  }
  return file;
}

/** Keys without repeats (the same key given twice, or the signing key also listed as a verifier). */
export function uniqueKeys(keys: readonly VerificationKey[]): VerificationKey[] {
  const seen = new Set<string>();
  return keys.filter((k) => !seen.has(k.kid) && (seen.add(k.kid), true));
}

/** The service account keys and audiences the options give. */
export interface ServiceAccountKeys {
  /** The key that signs (absent: TokenRequest is not served). */
  signer: SigningKey | undefined;
  /** Every key that verifies, the signing key first. */
  verifiers: VerificationKey[];
  /** --api-audiences, or the first issuer. */
  apiAudiences: string[];
}

export function resolveServiceAccountKeys(
  o: { serviceAccountSigningKeyFile: string; serviceAccountKeyFiles: readonly string[]; serviceAccountIssuers: readonly string[]; apiAudiences: readonly string[] },
  /** The serving key file, and whether it was generated in `dataDir`. */
  tls: { keyFile: string; generated: boolean; dataDir: string },
): ServiceAccountKeys {
  const signingFile = o.serviceAccountSigningKeyFile || (tls.generated ? ensureGeneratedSigningKey(tls.dataDir) : '');
  const signer = signingFile ? loadSigningKey(signingFile) : undefined;
  const files = o.serviceAccountKeyFiles.length ? o.serviceAccountKeyFiles : tls.keyFile ? [tls.keyFile] : [];
  const loaded = files.flatMap((f) => loadVerificationKeys(f, o.serviceAccountKeyFiles.length ? '--service-account-key-file' : '--tls-private-key-file'));
  const verifiers = uniqueKeys([...(signer ? [signer] : []), ...loaded].map(({ key, kid, alg }) => ({ key, kid, alg })));
  const apiAudiences = o.apiAudiences.length ? [...o.apiAudiences] : o.serviceAccountIssuers.slice(0, 1);
  return { signer, verifiers, apiAudiences };
}
