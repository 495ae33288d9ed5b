/**
 * Benchmark plumbing: spawning servers (the API server binary and the bare baseline), reading a
 * process's peak RSS and CPU time from /proc, running autocannon, and printing result tables.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { type ClientHttp2Session, type ClientHttp2Stream, connect as h2connect, type OutgoingHttpHeaders } from 'node:http2';
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
const admissionWebhookPath = fileURLToPath(new URL('./admission-webhook-server.js', import.meta.url));

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
  /** Kills the process (SIGKILL) and removes its data dir. */
  stop(): Promise<void>;
  /** Stops the process as an operator would (SIGTERM), waits for it to exit, and keeps its data dir. */
  terminate(): Promise<void>;
}

async function waitFor(proc: ChildProcess, marker: string, timeoutMs = 60_000): Promise<void> {
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`process did not start: ${out}`)), timeoutMs);
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

function terminator(proc: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
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
  const s = await spawnApiServer(dir, flags, nodeArgs);
  await waitFor(s.proc, 'serving on');
  s.ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
  return s;
}

/** Spawns svc-apiserver on a data dir that startApiServer made (the token file is there), on a free port. */
async function spawnApiServer(dir: string, flags: readonly string[], nodeArgs: readonly string[] = []): Promise<Proc> {
  const port = await freePort();
  const proc = spawn(process.execPath, [...nodeArgs, binPath, `--data-dir=${dir}`, `--secure-port=${port}`, `--token-auth-file=${join(dir, 'tokens.csv')}`, ...flags], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...SERVER_ALLOCATOR_ENV },
  });
  const ca = existsSync(join(dir, 'ca.crt')) ? readFileSync(join(dir, 'ca.crt'), 'utf8') : '';
  return { proc, url: `https://127.0.0.1:${port}`, dir, ca, stop: stopper(proc, dir), terminate: terminator(proc) };
}

export interface Restarted {
  server: Proc;
  /** From spawn to the process's "serving on" line (ms). */
  servingMs: number;
  /** From spawn to the first /readyz answered 200 (ms), polled every 10 ms. */
  readyMs: number;
}

/** Starts svc-apiserver again on the data dir of a server that was terminated, timing it to ready. */
export async function restartApiServer(dir: string, flags: readonly string[], timeoutMs = 600_000, nodeArgs: readonly string[] = []): Promise<Restarted> {
  const t0 = performance.now();
  const server = await spawnApiServer(dir, flags, nodeArgs);
  const serving = waitFor(server.proc, 'serving on', timeoutMs).then(() => performance.now() - t0);
  serving.catch(() => undefined); // awaited below; an early exit must not be an unhandled rejection meanwhile
  const agent = new Agent({ keepAlive: true, ca: server.ca });
  let readyMs = 0;
  try {
    while (readyMs === 0) {
      if (performance.now() - t0 > timeoutMs) throw new Error('/readyz did not answer 200');
      if (server.proc.exitCode !== null) await serving; // rejects with the process's output
      const status = await new Promise<number>((resolve) => {
        const req = request(`${server.url}/readyz`, { headers: AUTH, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', () => resolve(0));
        req.end();
      });
      if (status === 200) readyMs = performance.now() - t0;
      else await sleep(10);
    }
    return { server, servingMs: await serving, readyMs };
  } catch (e) {
    await server.stop();
    throw e;
  } finally {
    agent.destroy();
  }
}

/** Starts the bare node:https baseline (or, `grpc`, the bare grpc-js one) using an API server data dir's certificate. */
export async function startBareServer(certDir: string, grpc = false): Promise<Proc> {
  const port = await freePort();
  const proc = spawn(process.execPath, [grpc ? bareGrpcPath : barePath, certDir, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  await waitFor(proc, 'serving on');
  return { proc, url: `https://127.0.0.1:${port}`, dir: certDir, ca: '', stop: stopper(proc, undefined), terminate: terminator(proc) };
}

/** Starts an allowing admission webhook (bench/admission-webhook-server.ts) with an API server data dir's certificate. */
export async function startAdmissionWebhook(certDir: string): Promise<Proc> {
  const port = await freePort();
  const proc = spawn(process.execPath, [admissionWebhookPath, certDir, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  await waitFor(proc, 'serving admission webhook');
  return { proc, url: `https://127.0.0.1:${port}`, dir: certDir, ca: '', stop: stopper(proc, undefined), terminate: terminator(proc) };
}

/** A memory figure of a process from /proc/<pid>/status, in MiB. */
function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssAnon' | 'RssFile'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/**
 * Peak resident set size of a process and its descendants in MiB (a server of several acceptor
 * processes is measured whole): the sum of each one's peak, an upper bound when they peak apart.
 */
export const peakRssMiB = (pid: number): number => overTree(pid, (p) => statusMiB(p, 'VmHWM'));

/** Current resident set size of a process and its descendants in MiB. */
export const rssMiB = (pid: number): number => overTree(pid, (p) => statusMiB(p, 'VmRSS'));

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
 * A process and all its descendants (a server that forks acceptor or worker processes is measured
 * whole): from /proc/<pid>/task/<tid>/children where the kernel has them (CONFIG_PROC_CHILDREN),
 * else from the parent pid of every process in /proc/<pid>/stat.
 */
export function processTree(pid: number): number[] {
  const childrenOf = childrenFiles(pid) ? childrenByTask : childrenByScan();
  const out: number[] = [];
  for (const todo = [pid]; todo.length; ) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...childrenOf(p));
  }
  return out;
}

const childrenFiles = (pid: number): boolean => existsSync(`/proc/${pid}/task/${pid}/children`);

function childrenByTask(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) if (c.trim()) out.push(Number(c));
    }
  } catch {
    // the process or thread ended meanwhile
  }
  return out;
}

function childrenByScan(): (pid: number) => number[] {
  const byParent = new Map<number, number[]>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const ppid = Number(statFields(Number(e))[1]);
      byParent.set(ppid, [...(byParent.get(ppid) ?? []), Number(e)]);
    } catch {
      // ended meanwhile
    }
  }
  return (pid) => byParent.get(pid) ?? [];
}

/** Sums a per-process figure over a process tree (processes that end while being read count 0). */
function overTree(pid: number, f: (p: number) => number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      sum += f(p);
    } catch {
      // ended meanwhile
    }
  }
  return sum;
}

/** Resident set size of a process and its descendants in MiB (`part`: its anonymous memory or its mapped file pages only). */
export const treeRssMiB = (pid: number, part: 'VmRSS' | 'RssAnon' | 'RssFile' = 'VmRSS'): number => overTree(pid, (p) => statusMiB(p, part));

/**
 * CPU seconds of a process and its descendants so far: utime + stime of each, plus cutime + cstime
 * (what children that ended and were waited for had used).
 */
export const treeCpuSeconds = (pid: number): number =>
  overTree(pid, (p) => {
    const f = statFields(p);
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
  });

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

/** The p-th percentile of some figures (nearest rank, 0 when there are none). */
export const percentile = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : 0;
};

export const median = (xs: readonly number[]): number => percentile(xs, 50);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Minimal HTTPS JSON client for bench setup (not measured). */
export class SetupClient implements Sender {
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
  many(n: number, concurrency: number, make: (i: number) => [string, string, unknown?]): Promise<void> {
    return sendMany(this, n, concurrency, make);
  }
  close(): void {
    this.agent.destroy();
  }
}

/** Something that sends a JSON request and hands back the answer's status and text. */
export interface Sender {
  send(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }>;
}

/** Calls `run(i)` for i in [0, n) with `concurrency` calls in flight. */
export async function concurrently(n: number, concurrency: number, run: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await run(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

function sendMany(c: Sender, n: number, concurrency: number, make: (i: number) => [string, string, unknown?]): Promise<void> {
  return concurrently(n, concurrency, async (i) => {
    const [m, p, b] = make(i);
    const r = await c.send(m, p, b);
    if (r.status >= 300) throw new Error(`${m} ${p}: ${r.status} ${r.text}`);
  });
}

/**
 * An HTTP/2 client over a few connections (streams handed out round-robin), as the admin: many
 * requests in flight on few sockets, as client-go sends them.
 */
export class H2Client implements Sender {
  readonly sessions: ClientHttp2Session[];
  private next = 0;
  constructor(
    url: string,
    ca: string,
    connections = 1,
    /** The credential its requests carry (the admin's unless given). */
    private readonly auth: Readonly<Record<string, string>> = AUTH,
  ) {
    this.sessions = Array.from({ length: connections }, () => {
      const s = h2connect(url, { ca, servername: 'localhost' });
      s.on('error', () => undefined);
      return s;
    });
  }
  /** Opens a stream on the next connection. */
  stream(method: string, path: string, headers: OutgoingHttpHeaders = {}): ClientHttp2Stream {
    const s = this.sessions[this.next++ % this.sessions.length]!;
    return s.request({ ':method': method, ':path': path, ...this.auth, ...headers }, { endStream: method === 'GET' || method === 'DELETE' });
  }
  send(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = this.stream(method, path, data ? { 'content-type': 'application/json', 'content-length': data.length } : {});
    return new Promise((resolve, reject) => {
      let status = 0;
      const chunks: Buffer[] = [];
      req.on('response', (h) => (status = Number(h[':status'])));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ status, text: Buffer.concat(chunks).toString() }));
      req.on('error', reject);
      if (data) req.end(data);
    });
  }
  /** Runs `n` requests built by `make(i)` with `concurrency` in flight; throws on any non-2xx. */
  many(n: number, concurrency: number, make: (i: number) => [string, string, unknown?]): Promise<void> {
    return sendMany(this, n, concurrency, make);
  }
  close(): void {
    for (const s of this.sessions) s.close();
  }
}
