/**
 * Preloaded (`node --import`) into a server the tests spawn as a child process (spawnServer): its
 * first-start keys are the ones the test process set aside for it from the key pool (a file named by
 * SVC_TEST_RSA_KEYS, taken whole and removed at load, so processes the server forks generate their
 * own), then generated as usual.
 */
import { readFileSync, rmSync } from 'node:fs';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { setRsaKeySource, newRsaPrivateKey } from '../../core/api/generated-keys.js';

const file = process.env.SVC_TEST_RSA_KEYS;
if (file) {
  let blocks: string[] = [];
  try {
    blocks = readFileSync(file, 'utf8').match(/-----BEGIN RSA PRIVATE KEY-----[\s\S]+?-----END RSA PRIVATE KEY-----\n/g) ?? [];
    rmSync(file, { force: true });
  } catch {
    // taken already (by the process that forked this one)
  }
  const keys: KeyObject[] = blocks.map((b) => createPrivateKey(b));
  setRsaKeySource(() => {
    const k = keys.shift();
    if (k) return k;
    setRsaKeySource(undefined);
    return newRsaPrivateKey();
  });
}
