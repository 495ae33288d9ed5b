/**
 * The RSA 2048 private keys a server makes for itself on a first start: its CA, serving and admin
 * certificates (core/server/certs.ts) and the service account signing key. One place, with a
 * test-only source: generating four keys was most of a test server's start, and the tests hand in
 * keys made ahead of time (test/helpers/key-pool.ts), still a different key for every use.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';

let source: (() => KeyObject) | undefined;

export function newRsaPrivateKey(): KeyObject {
  return source?.() ?? generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 0x10001 }).privateKey;
}

/** Test-only: where new keys come from (undefined: generated on the spot). */
export function setRsaKeySource(next: (() => KeyObject) | undefined): void {
  source = next;
}
