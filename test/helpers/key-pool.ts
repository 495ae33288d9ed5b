/**
 * RSA 2048 private keys made ahead of time for the tests. Generating keys was most of a test
 * server's start (four keys: CA, serving, admin client, service account signer) and of the test
 * PKI's certificates, in every file. The keys live in one file under the OS temp dir that grows as
 * the tests need keys: a test process takes the keys in order, each at most once, so every server
 * and certificate within a file still has its own key (the same as generating them), and makes
 * (and appends) a new key when the file has no more. Keys are only reused by other test processes,
 * which never talk to each other.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const poolFile = join(tmpdir(), 'svc-apiserver-test-rsa2048-keys.pem');
/** Enough for the file that needs the most; a file past it generates the rest itself. */
const poolLimit = 400;
const blockRe = /-----BEGIN RSA PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+?-----END RSA PRIVATE KEY-----\n/g;

let pool: string[] | undefined;
let next = 0;

function readPool(): string[] {
  try {
    // only whole blocks: another process may be appending
    return readFileSync(poolFile, 'utf8').match(blockRe) ?? [];
  } catch {
    return [];
  }
}

/** A private key this process has not used before. */
export function pooledRsaKey(): KeyObject {
  pool ??= readPool();
  while (next < pool.length) {
    try {
      return createPrivateKey(pool[next++]!);
    } catch {
      // a damaged block: skip it
    }
  }
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 0x10001 });
  // one write with O_APPEND: concurrent processes add whole blocks
  if (pool.length < poolLimit) {
    try {
      appendFileSync(poolFile, privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(), { mode: 0o600 });
    } catch {
      // a pool file this user cannot write (another user's): this process generates its keys
    }
  }
  return privateKey;
}
