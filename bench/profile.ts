/**
 * `node dist/bench/profile.js [get|list|create|lease] [--workers=N] [--acceptors=N] [--duration=N] [--admission=webhook|policy]`:
 * where the main thread's microseconds go for one kind of request (with several acceptors, the main
 * threads of all the server's processes together: each writes its own profile). The server runs under V8's sampling profiler
 * (--cpu-prof, main thread only), takes the load after a warm-up, and on exit writes its profile;
 * each sample's self time is given to the area of the code it was in (by source file: ours by folder,
 * Node's by module, V8's own entries as they are) and printed per request. `--admission=webhook` first
 * configures one validating webhook (the bench's loopback webhook process, which allows) and
 * `--admission=policy` a ValidatingAdmissionPolicy of three rules, as the admission bench does.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { AUTH as auth, cpuSeconds, fmt, type Proc, SetupClient, startAdmissionWebhook, startApiServer, table, WARMUP_SECONDS } from './lib.js';
import { BINDING, POLICY, WEBHOOK_CONFIG } from './scenarios/admission.js';

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

/** CPU seconds (user+system) of one thread of a process: the main thread's tid is the pid. */
function threadCpuSeconds(pid: number, tid = pid): number {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

interface Scenario {
  setup(c: SetupClient): Promise<void>;
  opts: Partial<autocannon.Options> & { path: string };
}

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
};

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const name = args.find((a) => !a.startsWith('--')) ?? 'get';
  const workers = args.find((a) => a.startsWith('--workers='))?.split('=')[1] ?? '0';
  const acceptors = args.find((a) => a.startsWith('--acceptors='))?.split('=')[1] ?? '1';
  const duration = Number(args.find((a) => a.startsWith('--duration='))?.split('=')[1] ?? 8);
  const sc = scenarios[name];
  if (!sc) throw new Error(`unknown scenario ${name}: one of ${Object.keys(scenarios).join(', ')}`);

  const profDir = mkdtempSync(join(tmpdir(), 'svc-profile-'));
  // other server flags pass through (--enable-priority-and-fairness=false, say)
  const extra = args.filter((a) => a.startsWith("--") && !/^--(workers|acceptors|duration|admission|functions)=/.test(a));
  // --functions=N: also the N functions with the most self time
  const byFunction = Number(args.find((a) => a.startsWith('--functions='))?.split('=')[1] ?? 0);
  const admission = args.find((a) => a.startsWith('--admission='))?.split('=')[1];
  if (admission !== undefined && admission !== 'webhook' && admission !== 'policy') throw new Error(`unknown --admission=${admission}: webhook or policy`);
  const s = await startApiServer([`--workers=${workers}`, `--acceptors=${acceptors}`, ...extra], [], ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=100']);
  const url = s.url;
  const ca = s.ca;
  const c = new SetupClient(url, ca);
  await sc.setup(c);
  let hook: Proc | undefined;
  if (admission === 'webhook') {
    hook = await startAdmissionWebhook(s.dir);
    const r = await c.send('POST', '/apis/admissionregistration.svc.io/v1/validatingwebhookconfigurations', WEBHOOK_CONFIG(hook.url, ca));
    if (r.status !== 201) throw new Error(`webhook configuration: ${r.status} ${r.text}`);
  } else if (admission === 'policy') {
    const p = await c.send('POST', '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies', POLICY);
    const b = await c.send('POST', '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicybindings', BINDING);
    if (p.status !== 201 || b.status !== 201) throw new Error(`policy: ${p.status} ${p.text}; binding: ${b.status} ${b.text}`);
  }
  c.close();
  const opts: autocannon.Options = { headers: auth, pipelining: 1, ...sc.opts, url: `${url}${sc.opts.path}`, tlsOptions: { ca } };
  await autocannon({ ...opts, duration: WARMUP_SECONDS });
  // V8's profile clock is the machine's monotonic clock in microseconds, which hrtime reads too
  const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);
  const pid = s.proc.pid!;
  const cpuBefore = { main: threadCpuSeconds(pid), all: cpuSeconds(pid) };
  const from = monotonicUs();
  const r = await autocannon({ ...opts, duration });
  const to = monotonicUs();
  const cpuUs = { main: (threadCpuSeconds(pid) - cpuBefore.main) * 1e6, all: (cpuSeconds(pid) - cpuBefore.all) * 1e6 };
  // a graceful stop writes the profile
  await new Promise<void>((resolve) => {
    s.proc.once('exit', () => resolve());
    s.proc.kill('SIGTERM');
  });
  await s.stop();
  await hook?.stop();
  const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
  if (!files.length) throw new Error('no profile written');
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as CpuProfile;
    for (const [k, v] of selfTimeByArea(profile, from, to)) areas.set(k, (areas.get(k) ?? 0) + v);
    if (byFunction) for (const [k, v] of selfTimeByArea(profile, from, to, functionOf)) functions.set(k, (functions.get(k) ?? 0) + v);
  }
  const n = Math.max(1, r.requests.total);
  const rows = [...areas].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]);
  const busy = rows.reduce((s, [, v]) => s + v, 0);
  // the samples count wall time while the thread is busy, descheduled time included on a loaded
  // machine; the kernel's CPU time of the main thread is the true cost, shared out by the samples
  const mainCpu = acceptors === '1' ? cpuUs.main / n : busy / n;
  console.log(`${name}${admission ? ` (${admission})` : ''} with --workers=${workers} --acceptors=${acceptors} (${files.length} profiles): ${fmt(r.requests.average)} req/s, ${n} requests; main thread busy ${fmt(busy / n, 1)} us a request in samples (idle ${fmt((areas.get('(idle)') ?? 0) / n, 1)} us); main thread CPU ${fmt(cpuUs.main / n, 1)} us, process CPU ${fmt(cpuUs.all / n, 1)} us a request (kernel's count)`);
  console.log(`profiles in ${profDir}, load from ${from} to ${to} (profile clock, us)`);
  console.log(table(['area (main thread, self time)', 'us / request', 'share', 'CPU us / request'], rows.slice(0, 30).map(([k, v]) => [k, fmt(v / n, 2), `${fmt((100 * v) / busy, 1)}%`, fmt((mainCpu * v) / busy, 1)])));
  if (byFunction) {
    const fs = [...functions].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, byFunction);
    console.log(table(['function (main thread, self time)', 'us / request', 'share', 'CPU us / request'], fs.map(([k, v]) => [k, fmt(v / n, 2), `${fmt((100 * v) / busy, 1)}%`, fmt((mainCpu * v) / busy, 1)])));
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
