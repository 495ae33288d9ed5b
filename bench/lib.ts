/**
 * Benchmark plumbing: spawning servers (the API server binary and the bare baseline), reading a
 * process's peak RSS and CPU time from /proc, running autocannon, and printing result tables.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import autocannon from 'autocannon';

export const TOKEN = 'bench-admin-token';
/** The admin's credential, as a request header. */
export const AUTH = { authorization: `Bearer ${TOKEN}` } as const;

/** A way to run the server under load (e.g. with or without the worker pool). */
export interface Mode {
  name: string;
  flags: string[];
}
const binPath = fileURLToPath(new URL('../bin/svc-apiserver.js', import.meta.url));
const barePath = fileURLToPath(new URL('./bare-server.js', import.meta.url));
const bareGrpcPath = fileURLToPath(new URL('./bare-grpc-server.js', import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Proc {
  proc: ChildProcess;
  url: string;
  dir: string;
  ca: string;
  stop(): Promise<void>;
}

async function waitFor(proc: ChildProcess, marker: string): Promise<void> {
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`process did not start: ${out}`)), 60_000);
    const onData = (c: Buffer) => {
      out += c.toString();
      if (out.includes(marker)) {
        clearTimeout(t);
        resolve();
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    proc.on('exit', (code) => reject(new Error(`process exited with ${code}: ${out}`)));
  });
}

function stopper(proc: ChildProcess, dir: string | undefined): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      const done = () => {
        if (dir) rmSync(dir, { recursive: true, force: true });
        resolve();
      };
      if (proc.exitCode !== null) return done();
      proc.once('exit', done);
      proc.kill('SIGKILL');
    });
}

/** The system's jemalloc (Debian's libjemalloc2), which `npm start` preloads when it is there; '' when not. */
function jemallocPath(): string {
  const found = existsSync('/usr/lib') ? readdirSync('/usr/lib').map((d) => join('/usr/lib', d, 'libjemalloc.so.2')).find((f) => existsSync(f)) : undefined;
  return found ?? '';
}

/** The allocator settings `npm start` runs the server with (see bin/svc-apiserver.ts). */
export const SERVER_ALLOCATOR_ENV = { LD_PRELOAD: jemallocPath(), MALLOC_CONF: 'background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0', MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' } as const;

/** Starts svc-apiserver with a fresh data dir and an admin bearer token (`nodeArgs`: options of node itself, e.g. --cpu-prof). */
export async function startApiServer(flags: string[], extraTokenLines: readonly string[] = [], nodeArgs: readonly string[] = []): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  writeFileSync(join(dir, 'tokens.csv'), [`${TOKEN},bench-admin,uid-bench,"system:masters"`, ...extraTokenLines, ''].join('\n'));
  const port = await freePort();
  const proc = spawn(process.execPath, [...nodeArgs, binPath, `--data-dir=${dir}`, `--secure-port=${port}`, `--token-auth-file=${join(dir, 'tokens.csv')}`, ...flags], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...SERVER_ALLOCATOR_ENV },
  });
  await waitFor(proc, 'serving on');
  return { proc, url: `https://127.0.0.1:${port}`, dir, ca: readFileSync(join(dir, 'ca.crt'), 'utf8'), stop: stopper(proc, dir) };
}

/** Starts the bare node:https baseline (or, `grpc`, the bare grpc-js one) using an API server data dir's certificate. */
export async function startBareServer(certDir: string, grpc = false): Promise<Proc> {
  const port = await freePort();
  const proc = spawn(process.execPath, [grpc ? bareGrpcPath : barePath, certDir, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  await waitFor(proc, 'serving on');
  return { proc, url: `https://127.0.0.1:${port}`, dir: certDir, ca: '', stop: stopper(proc, undefined) };
}

/** A memory figure of a process from /proc/<pid>/status, in MiB. */
function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/** Peak resident set size of a process in MiB. */
export const peakRssMiB = (pid: number): number => statusMiB(pid, 'VmHWM');

/** Current resident set size of a process in MiB. */
export const rssMiB = (pid: number): number => statusMiB(pid, 'VmRSS');

/** The fields of /proc/<pid>/stat after the command name (the first is the state, field 3). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** User+system CPU seconds consumed by a process so far. */
export function cpuSeconds(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Minor page faults of a process so far. Under a steady load a server either reuses its heap's pages
 * (about none per request) or keeps faulting fresh ones in as V8 promotes young objects (about 0.6 per
 * GET here), and the second runs 25-45% slower: the figure tells which state a row was measured in.
 */
export function minorFaults(pid: number): number {
  return Number(statFields(pid)[7]);
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** Seconds of unrecorded load before each measurement, so JIT warm-up is not in the figures. */
export const WARMUP_SECONDS = 2;

export async function load(opts: autocannon.Options): Promise<LoadResult> {
  await autocannon({ connections: 32, pipelining: 1, ...opts, duration: WARMUP_SECONDS });
  const r = await autocannon({ connections: 32, duration: 10, pipelining: 1, ...opts });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx };
}

/** A fixed-width text table. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(cells[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.slice(1).map(line)].join('\n');
}

export const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Minimal HTTPS JSON client for bench setup (not measured). */
export class SetupClient {
  private readonly agent: Agent;
  constructor(
    private readonly url: string,
    ca: string,
  ) {
    this.agent = new Agent({ keepAlive: true, ca, maxSockets: 64 });
  }
  send(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; text: string }> {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { ...AUTH };
    if (data) {
      headers['content-type'] = contentType;
      headers['content-length'] = String(data.length);
    }
    return new Promise((resolve, reject) => {
      const req = request(new URL(path, this.url), { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      });
      req.on('error', reject);
      req.end(data);
    });
  }
  /** Runs `n` requests built by `make(i)` with `concurrency` in flight; throws on any non-2xx. */
  async many(n: number, concurrency: number, make: (i: number) => [string, string, unknown?]): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const i = next++;
        const [m, p, b] = make(i);
        const r = await this.send(m, p, b);
        if (r.status >= 300) throw new Error(`${m} ${p}: ${r.status} ${r.text}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  }
  close(): void {
    this.agent.destroy();
  }
}
