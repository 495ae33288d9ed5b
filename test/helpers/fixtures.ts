/**
 * Shared test fixtures: temp directories removed when the test file's process exits, data dirs
 * pre-seeded with one set of generated certificates (RSA key generation is the slow part of a first
 * start), servers started on them, and the Status assertion every error test uses.
 */
import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { ensureGeneratedTls } from '../../core/server/certs.js';
import type { Response } from './client.js';
import { startServer, tempDir, type TestServer } from './server.js';

const made: string[] = [];
process.once('exit', () => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A temp dir removed when this test process exits. */
export function tmp(prefix?: string): string {
  const d = tempDir(prefix);
  made.push(d);
  return d;
}

const TLS_FILES = ['ca.crt', 'ca.key', 'apiserver.crt', 'apiserver.key', 'admin.crt', 'admin.key'];
let tlsTemplate: string | undefined;

/** A data dir holding this process's one set of generated certificates. */
export function seededDir(prefix = 'svc-test-'): string {
  if (!tlsTemplate) {
    tlsTemplate = tmp('svc-tls-');
    ensureGeneratedTls(tlsTemplate, '127.0.0.1', 0);
  }
  const dir = tmp(prefix);
  for (const f of TLS_FILES) copyFileSync(join(tlsTemplate, f), join(dir, f));
  return dir;
}

/** startServer on a seeded data dir, removed again on stop. */
export async function startSeeded(flags: string[] = []): Promise<TestServer> {
  const dir = seededDir();
  const s = await startServer(flags, dir);
  return {
    ...s,
    async stop() {
      await s.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Asserts an error response: a v1 Failure Status with this code and reason (and message, if given). */
export function expectStatus(tt: Test, r: Pick<Response, 'status' | 'json' | 'text'>, code: number, reason: string, message?: string | RegExp): void {
  tt.equal(r.status, code, `HTTP ${code} (got ${r.status}: ${r.text.slice(0, 400)})`);
  tt.equal(r.json?.kind, 'Status', 'body is a Status');
  tt.equal(r.json?.apiVersion, 'v1', 'Status apiVersion v1');
  tt.equal(r.json?.status, 'Failure', 'status Failure');
  tt.equal(r.json?.code, code, 'Status.code');
  tt.equal(r.json?.reason, reason, 'Status.reason');
  if (typeof message === 'string') tt.equal(r.json?.message, message, 'Status.message');
  else if (message) tt.match(r.json?.message, message, 'Status.message');
}
