/**
 * Starts a real svc-apiserver for a test: a fresh LMDB directory under the OS temp dir, a loopback
 * port chosen by the OS, generated certificates, and a token file with an admin token (group
 * system:masters) and a few plain users. In-process by default; `spawnServer` runs the binary as a
 * child process (for crash and restart tests).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiServer } from '../../core/server/server.js';
import { parseFlags, type ServerOptions } from '../../core/server/options.js';
import { InlineExecutor, PoolExecutor } from '../../workers/pool.js';
import { Client } from './client.js';
import { setRsaKeySource } from '../../core/api/generated-keys.js';
import { pooledRsaKey } from './key-pool.js';

// a server's first-start keys come from the pool made ahead of time (one key per use, as generated)
setRsaKeySource(pooledRsaKey);

export const ADMIN_TOKEN = 'admin-token-0123456789';
export const ALICE_TOKEN = 'alice-token-0123456789';
export const BOB_TOKEN = 'bob-token-0123456789';

export function tempDir(prefix = 'svc-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function writeTokenFile(dir: string): string {
  const path = join(dir, 'tokens.csv');
  writeFileSync(
    path,
    [`${ADMIN_TOKEN},admin,uid-admin,"system:masters"`, `${ALICE_TOKEN},alice,uid-alice,"dev,qa"`, `${BOB_TOKEN},bob,uid-bob`].join('\n') + '\n',
  );
  return path;
}

export interface TestServer {
  server: ApiServer;
  url: string;
  dataDir: string;
  ca: string;
  /** Client authenticated with the admin token. */
  admin: Client;
  /** Client with no credentials (anonymous). */
  anon: Client;
  stop(): Promise<void>;
}

/**
 * Flags as the CLI takes them, e.g. ['--workers=0']; --data-dir, --secure-port and --token-auth-file
 * are filled in. `more`: options no flag sets (a test's clocks).
 */
export async function startServer(extraFlags: string[] = [], keepDir?: string, more: Partial<ServerOptions> = {}): Promise<TestServer> {
  const dataDir = keepDir ?? tempDir();
  // authorization is the product's default (Node,RBAC) unless a test names a mode: the admin token is in system:masters
  const flags = [`--data-dir=${dataDir}`, '--secure-port=0', `--token-auth-file=${writeTokenFile(dataDir)}`, '--workers=0', ...extraFlags];
  const opts: ServerOptions = { ...parseFlags(flags), ...more };
  const server = new ApiServer(opts);
  await server.start((registry, settings, timings) => (opts.workers > 0 ? new PoolExecutor(opts.workers, settings, timings) : new InlineExecutor(registry)));
  const ca = readFileSync(join(dataDir, 'ca.crt'), 'utf8');
  const url = server.url;
  const admin = new Client({ url, ca, token: ADMIN_TOKEN });
  const anon = new Client({ url, ca });
  return {
    server,
    url,
    dataDir,
    ca,
    admin,
    anon,
    async stop() {
      admin.close();
      anon.close();
      await server.stop();
      if (!keepDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const binPath = fileURLToPath(new URL('../../bin/svc-apiserver.js', import.meta.url));
const keyPoolPreload = new URL('./key-pool-preload.js', import.meta.url).href;

export interface SpawnedServer {
  proc: ChildProcess;
  url: string;
  dataDir: string;
  ca: string;
  admin: Client;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * The environment for a server run as a child process: the test's own, less tap's process-info hook
 * (an --import in NODE_OPTIONS that tap gives every process below a test, for coverage, which npm test
 * turns off): it made each start of the binary, and of each acceptor it forks, about a second slower.
 */
export function childEnv(env?: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const nodeOptions = (process.env.NODE_OPTIONS ?? '')
    .split(/\s+/)
    .filter((o) => o !== '' && !o.includes('@tapjs/processinfo'))
    .join(' ');
  return { ...process.env, NODE_OPTIONS: nodeOptions, ...env };
}

/** Runs the real binary; resolves once it prints its serving line. */
export async function spawnServer(dataDir: string, port: number, extraFlags: string[] = [], env?: Readonly<Record<string, string>>): Promise<SpawnedServer> {
  const tokenFile = writeTokenFile(dataDir);
  // the first-start keys it would generate, set aside from this process's pool (a restart on the same dir makes none)
  const keysDir = tempDir('svc-keys-');
  const keysFile = join(keysDir, 'keys.pem');
  writeFileSync(keysFile, Array.from({ length: 4 }, () => pooledRsaKey().export({ type: 'pkcs1', format: 'pem' }).toString()).join(''), { mode: 0o600 });
  const proc = spawn(process.execPath, ['--import', keyPoolPreload, binPath, `--data-dir=${dataDir}`, `--secure-port=${port}`, `--token-auth-file=${tokenFile}`, ...extraFlags], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...childEnv(env), SVC_TEST_RSA_KEYS: keysFile },
  });
  proc.on('exit', () => rmSync(keysDir, { recursive: true, force: true }));
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 30000);
    const check = () => {
      if (out.includes('serving on')) {
        clearTimeout(t);
        resolve();
      }
    };
    proc.stdout!.on('data', check);
    proc.on('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`server exited with ${code}: ${out}`));
    });
  });
  const url = `https://127.0.0.1:${port}`;
  const ca = readFileSync(join(dataDir, 'ca.crt'), 'utf8');
  const admin = new Client({ url, ca, token: ADMIN_TOKEN });
  return {
    proc,
    url,
    dataDir,
    ca,
    admin,
    output: () => out,
    kill: (signal: NodeJS.Signals = 'SIGKILL') =>
      new Promise<void>((resolve) => {
        admin.close();
        // a process that already ended (by a signal too: exitCode stays null then) has no exit event to come
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill(signal);
      }),
  };
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
