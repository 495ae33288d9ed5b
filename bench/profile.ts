/**
 * `node dist/bench/profile.js [get|list|create|lease] [--workers=N] [--acceptors=N] [--duration=N]`:
 * where the main thread's microseconds go for one kind of request (with several acceptors, the main
 * threads of all the server's processes together: each writes its own profile). The server runs under V8's sampling profiler
 * (--cpu-prof, main thread only), takes the load after a warm-up, and on exit writes its profile;
 * each sample's self time is given to the area of the code it was in (by source file: ours by folder,
 * Node's by module, V8's own entries as they are) and printed per request.
 *
 * Beside it, always: the CPU of every thread of the server's processes (user and system, from
 * /proc/<pid>/task/<tid>/stat around the measured window) per request, and the syscalls that make a
 * write durable or cost the kernel's time (counted by `perf stat` on their tracepoints when perf is
 * there).
 *
 * `lease` is the scale group's node heartbeats (5,000 Leases renewed at 500 PUT/s over HTTP/2, each
 * with its last resourceVersion), an open-loop load: its CPU per PUT includes what the server spends
 * between requests (timers, housekeeping, collection of its heap). Options:
 *   --objects=N      N ConfigMaps of the scale group's shape stored first (cached in --seed-dir=DIR,
 *                    default $TMPDIR/svc-profile-seed-N, and copied for each run)
 *   --no-cpu-prof    no V8 profiler (it slows the main thread about 1.7x): the thread table alone
 *   --loop-probe     the main thread's event-loop delay histogram and every GC pause (loop-probe.ts)
 *   --node-arg=X     an option of node itself for the server (repeatable; e.g. --node-arg=--trace-gc)
 *   --leases=N --rate=R   the heartbeats' size and rate (lease only)
 *   --server-log=FILE     the server's output after its start (with --node-arg=--trace-gc, say)
 * `--admission=webhook` first configures one validating webhook (the bench's loopback webhook process,
 * which allows) and `--admission=policy` a ValidatingAdmissionPolicy of three rules, as the admission
 * bench does; `--functions=N` adds the N functions with the most self time.
 */
import { spawn, type ChildProcess, execFileSync } from 'node:child_process';
import { cpSync, createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { fileURLToPath } from 'node:url';
import { AUTH as auth, fmt, type Proc, processTree, restartApiServer, SetupClient, startApiServer, table, WARMUP_SECONDS } from './lib.js';
import { configureAdmission } from './scenarios/admission.js';
import { heartbeats, loadObjects, type MeasuredWindow } from './scenarios/scale.js';
import { type ThreadTicks, threadTicks } from './scenarios/threads.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber?: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** The area a frame's source belongs to: our folders, Node's modules, V8's own entries. */
export function areaOf(frame: { functionName: string; url: string }): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : `native ${functionName || '(anonymous)'}`;
  const ours = /\/dist\/((?:core|workers|bin)\/[^/]+(?:\/[^/]+)?)\//.exec(url) ?? /\/dist\/((?:core|workers|bin))\//.exec(url);
  if (ours) return ours[1]!;
  const nodeMod = /^node:(.*)$/.exec(url);
  if (nodeMod) {
    const m = nodeMod[1]!;
    if (m.startsWith('internal/tls') || m === '_tls_wrap' || m === 'tls') return 'node: tls';
    if (m.startsWith('internal/http2') || m === 'http2') return 'node: http2';
    if (m.startsWith('_http') || m === 'http' || m === 'https' || m.startsWith('internal/http')) return 'node: http';
    if (m.startsWith('internal/streams') || m === 'stream') return 'node: streams';
    if (m === 'net' || m.startsWith('internal/stream_base') || m.startsWith('internal/net')) return 'node: net';
    if (m.startsWith('internal/url') || m === 'url') return 'node: url';
    if (m.startsWith('internal/worker') || m.startsWith('internal/process/task_queues') || m.startsWith('internal/timers') || m === 'timers') return 'node: timers, tasks, workers';
    return `node: ${m.split('/').slice(0, 2).join('/')}`;
  }
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return `npm: ${dep[1]}`;
  return 'other';
}

/** A frame's function and source file (the last two path parts), for `--functions`. */
export function functionOf(frame: { functionName: string; url: string; lineNumber?: number }): string {
  const file = frame.url.split('/').slice(-2).join('/');
  return `${frame.functionName || '(anonymous)'} ${file}${frame.url ? `:${(frame.lineNumber ?? 0) + 1}` : ''}`;
}

/** Self time by area, in microseconds, of the samples between `from` and `to` (microseconds of the profile's clock). */
export function selfTimeByArea(p: CpuProfile, from = 0, to = Infinity, key: (frame: ProfileNode['callFrame']) => string = areaOf): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    if (t < from || t > to) continue;
    // a sample's time is the delta to the next one
    const dt = p.timeDeltas[i + 1] ?? 0;
    const node = byId.get(p.samples[i]!);
    if (!node) continue;
    const area = key(node.callFrame);
    out.set(area, (out.get(area) ?? 0) + dt);
  }
  return out;
}

/** What a load did in its measured window. */
interface Driven {
  requests: number;
  perSecond: number;
  note?: string;
}

interface Scenario {
  setup(c: SetupClient): Promise<void>;
  /** A closed-loop autocannon load... */
  opts?: Partial<autocannon.Options> & { path: string };
  /** ... or one the scenario drives itself (warm-up included), calling `window` around the measured part. */
  drive?(s: Proc, seconds: number, window: MeasuredWindow, args: string[]): Promise<Driven>;
}

const numArg = (args: string[], name: string, dflt: number): number => Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);

const scenarios: Record<string, Scenario> = {
  get: {
    async setup(c) {
      await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' }, spec: { attachRequired: true } });
    },
    opts: { path: '/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com', connections: 32 },
  },
  list: {
    async setup(c) {
      await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'bench' } });
      await c.many(1000, 32, (i) => ['POST', '/api/v1/namespaces/bench/configmaps', { metadata: { name: `cm-${i}`, labels: { app: 'bench' } }, data: { key: `value-${i}`, other: 'x'.repeat(64) } }]);
    },
    opts: { path: '/api/v1/namespaces/bench/configmaps', connections: 8 },
  },
  create: {
    async setup() {},
    opts: {
      path: '/api/v1/namespaces/default/configmaps',
      connections: 64,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } }),
    },
  },
  lease: {
    async setup() {},
    async drive(s, seconds, window, args) {
      const leases = numArg(args, 'leases', 5000);
      const rate = numArg(args, 'rate', 500);
      const h = await heartbeats(s, leases, leases / rate, seconds, window, 20);
      const over100 = h.slow.filter((x) => x.ms > 100);
      const note =
        `heartbeats: ${fmt(h.leases)} Leases at ${fmt(h.rate)} PUT/s, ${fmt(h.puts)} PUTs${h.errors ? ` (${h.errors} failed)` : ''}: ` +
        `p50 ${fmt(h.p50, 1)} ms, p99 ${fmt(h.p99, 1)} ms, max ${fmt(h.max, 0)} ms; ${h.slow.length} over 20 ms, ${over100.length} over 100 ms` +
        (h.slow.length ? `\n  slow PUTs (s into the window: ms): ${h.slow.slice(0, 40).map((x) => `${fmt(x.at, 2)}: ${fmt(x.ms)}`).join(', ')}` : '');
      return { requests: h.puts, perSecond: h.rate, note };
    },
  },
};


/** Per-thread CPU between two readings, in microseconds a request (threads grouped by name, the main threads apart). */
function threadTable(before: Map<number, ThreadTicks>, after: Map<number, ThreadTicks>, requests: number): string {
  const tick = 1e6 / 100;
  const groups = new Map<string, { user: number; sys: number; n: number }>();
  for (const [tid, a] of after) {
    const b = before.get(tid);
    const user = (a.utime - (b?.utime ?? 0)) * tick;
    const sys = (a.stime - (b?.stime ?? 0)) * tick;
    const key = tid === a.pid ? `main thread (${a.name})` : a.name;
    const g = groups.get(key) ?? { user: 0, sys: 0, n: 0 };
    g.user += user;
    g.sys += sys;
    g.n++;
    groups.set(key, g);
  }
  const rows = [...groups].sort((x, y) => y[1].user + y[1].sys - (x[1].user + x[1].sys));
  const total = rows.reduce((s, [, g]) => s + g.user + g.sys, 0);
  const per = (x: number) => fmt(x / requests, 1);
  return table(
    ['thread (server processes)', 'threads', 'user us / req', 'sys us / req', 'share'],
    [
      ...rows.filter(([, g]) => g.user + g.sys > 0).map(([k, g]) => [k, g.n, per(g.user), per(g.sys), `${fmt((100 * (g.user + g.sys)) / Math.max(1, total), 1)}%`]),
      ['all', after.size, per(rows.reduce((s, [, g]) => s + g.user, 0)), per(rows.reduce((s, [, g]) => s + g.sys, 0)), '100%'],
    ],
  );
}

/** Syscalls counted by `perf stat` on their tracepoints over the server's processes, or undefined without perf. */
const SYSCALLS = ['fdatasync', 'fsync', 'msync', 'pwrite64', 'writev', 'write', 'read', 'futex', 'epoll_wait', 'madvise', 'mprotect', 'munmap', 'mmap'];
function startSyscallCount(pid: number): { stop(): Promise<Map<string, number>> } | undefined {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const events = SYSCALLS.map((n) => `syscalls:sys_enter_${n}`).join(',');
  const p: ChildProcess = spawn('perf', ['stat', '-x', ',', '-e', events, '-p', processTree(pid).join(',')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return {
    stop: () =>
      new Promise((resolve) => {
        p.once('exit', () => {
          const out = new Map<string, number>();
          for (const line of err.split('\n')) {
            const [count, , event] = line.split(',');
            const m = /sys_enter_(\w+)/.exec(event ?? '');
            if (m && count && /^\d+$/.test(count)) out.set(m[1]!, Number(count));
          }
          resolve(out);
        });
        p.kill('SIGINT');
      }),
  };
}

/** A server holding `objects` ConfigMaps of the scale group's shape: a copy of a seed data dir made once. */
async function serverWithObjects(objects: number, seedDir: string, flags: string[], nodeArgs: string[]): Promise<Proc> {
  if (!existsSync(join(seedDir, 'store', 'data.mdb'))) {
    console.log(`seeding ${fmt(objects)} ConfigMaps into ${seedDir}`);
    const s = await startApiServer([]);
    await loadObjects(s, objects, Math.min(100, objects));
    await s.terminate();
    rmSync(seedDir, { recursive: true, force: true });
    cpSync(s.dir, seedDir, { recursive: true });
    await s.stop();
  }
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  cpSync(seedDir, dir, { recursive: true });
  return (await restartApiServer(dir, flags, 600_000, nodeArgs)).server;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const name = args.find((a) => !a.startsWith('--')) ?? 'get';
  const workers = args.find((a) => a.startsWith('--workers='))?.split('=')[1] ?? '0';
  const acceptors = args.find((a) => a.startsWith('--acceptors='))?.split('=')[1] ?? '1';
  const duration = numArg(args, 'duration', 8);
  const objects = numArg(args, 'objects', 0);
  const cpuProf = !args.includes('--no-cpu-prof');
  const loopProbe = args.includes('--loop-probe');
  const byFunction = numArg(args, 'functions', 0);
  const admission = args.find((a) => a.startsWith('--admission='))?.split('=')[1];
  if (admission !== undefined && admission !== 'webhook' && admission !== 'policy') throw new Error(`unknown --admission=${admission}: webhook or policy`);
  const sc = scenarios[name];
  if (!sc) throw new Error(`unknown scenario ${name}: one of ${Object.keys(scenarios).join(', ')}`);

  const profDir = mkdtempSync(join(tmpdir(), 'svc-profile-'));
  const probeFile = join(profDir, 'loop-probe.json');
  const ours = /^--(workers|acceptors|duration|objects|seed-dir|node-arg|leases|rate|server-log|admission|functions)=|^--(no-cpu-prof|loop-probe)$/;
  // other server flags pass through (--enable-priority-and-fairness=false, say)
  const extra = args.filter((a) => a.startsWith('--') && !ours.test(a));
  const nodeArgs = [
    ...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=100'] : []),
    ...(loopProbe ? [`--import=${fileURLToPath(new URL('./loop-probe.js', import.meta.url))}`] : []),
    ...args.filter((a) => a.startsWith('--node-arg=')).map((a) => a.slice('--node-arg='.length)),
  ];
  if (loopProbe) process.env.LOOP_PROBE_FILE = probeFile;
  const flags = [`--workers=${workers}`, `--acceptors=${acceptors}`, ...extra];
  const seedDir = args.find((a) => a.startsWith('--seed-dir='))?.split('=')[1] ?? join(tmpdir(), `svc-profile-seed-${objects}`);
  const s = objects > 0 ? await serverWithObjects(objects, seedDir, flags, nodeArgs) : await startApiServer(flags, [], nodeArgs);
  const pid = s.proc.pid!;
  const serverLog = args.find((a) => a.startsWith('--server-log='))?.split('=')[1];
  if (serverLog) {
    const log = createWriteStream(serverLog);
    s.proc.stdout!.pipe(log);
    s.proc.stderr!.pipe(log);
  }
  const url = s.url;
  const ca = s.ca;
  const c = new SetupClient(url, ca);
  await sc.setup(c);
  const hook = admission ? await configureAdmission(c, admission, s.dir, ca) : undefined;
  c.close();
  // V8's profile clock is the machine's monotonic clock in microseconds, which hrtime reads too
  const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);
  let from = 0;
  let to = 0;
  let ticks0 = new Map<number, ThreadTicks>();
  let ticks1 = ticks0;
  let syscalls: ReturnType<typeof startSyscallCount>;
  let counted: Promise<Map<string, number>> | undefined;
  const window: MeasuredWindow = {
    start() {
      if (loopProbe) s.proc.kill('SIGUSR2');
      from = monotonicUs();
      ticks0 = threadTicks(pid);
      syscalls = startSyscallCount(pid);
    },
    end() {
      ticks1 = threadTicks(pid);
      to = monotonicUs();
      if (loopProbe) s.proc.kill('SIGUSR2');
      counted = syscalls?.stop();
    },
  };
  let driven: Driven;
  if (sc.drive) driven = await sc.drive(s, duration, window, args);
  else {
    const opts: autocannon.Options = { headers: auth, pipelining: 1, ...sc.opts!, url: `${url}${sc.opts!.path}`, tlsOptions: { ca } };
    await autocannon({ ...opts, duration: WARMUP_SECONDS });
    window.start();
    const r = await autocannon({ ...opts, duration });
    window.end();
    driven = { requests: r.requests.total, perSecond: r.requests.average };
  }
  const sys = await counted;
  await new Promise((r) => setTimeout(r, 300));
  const probe = loopProbe && existsSync(probeFile) ? (JSON.parse(readFileSync(probeFile, 'utf8')) as Record<string, unknown>) : undefined;
  // a graceful stop writes the profile
  await new Promise<void>((resolve) => {
    s.proc.once('exit', () => resolve());
    s.proc.kill('SIGTERM');
  });
  await s.stop();
  await hook?.stop();
  const n = Math.max(1, driven.requests);
  const seconds = (to - from) / 1e6;
  console.log(`${name}${admission ? ` (${admission})` : ''} with ${flags.join(' ')}${objects ? `, ${fmt(objects)} ConfigMaps stored` : ''}: ${fmt(driven.perSecond)} req/s, ${n} requests in ${fmt(seconds, 1)} s`);
  if (driven.note) console.log(driven.note);
  console.log(threadTable(ticks0, ticks1, n));
  if (sys?.size) console.log(table(['syscall (all server threads)', 'per request', 'per second'], [...sys].filter(([, v]) => v > 0).map(([k, v]) => [k, fmt(v / n, 2), fmt(v / seconds)])));
  if (probe) console.log(`main thread (loop-probe): ${JSON.stringify(probe)}`);
  if (!cpuProf) return;
  const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
  if (!files.length) throw new Error('no profile written');
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as CpuProfile;
    for (const [k, v] of selfTimeByArea(profile, from, to)) areas.set(k, (areas.get(k) ?? 0) + v);
    if (byFunction) for (const [k, v] of selfTimeByArea(profile, from, to, functionOf)) functions.set(k, (functions.get(k) ?? 0) + v);
  }
  const rows = [...areas].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]);
  const busy = rows.reduce((s, [, v]) => s + v, 0);
  console.log(`main thread (${files.length} profiles): busy ${fmt(busy / n, 1)} us a request (idle ${fmt((areas.get('(idle)') ?? 0) / n, 1)} us)`);
  console.log(table(['area (main thread, self time)', 'us / request', 'share'], rows.slice(0, 30).map(([k, v]) => [k, fmt(v / n, 2), `${fmt((100 * v) / busy, 1)}%`])));
  if (byFunction) {
    const top = [...functions].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, byFunction);
    console.log(table(['function (main thread, self time)', 'us / request', 'share'], top.map(([k, v]) => [k, fmt(v / n, 2), `${fmt((100 * v) / busy, 1)}%`])));
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
