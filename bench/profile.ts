/**
 * `node dist/bench/profile.js [get|list|create|lease] [--workers=N] [--acceptors=N] [--duration=N]`:
 * where the main thread's microseconds go for one kind of request (with several acceptors, the main
 * threads of all the server's processes together: each writes its own profile). The server runs under V8's sampling profiler
 * (--cpu-prof, main thread only), takes the load after a warm-up, and on exit writes its profile;
 * each sample's self time is given to the area of the code it was in (by source file: ours by folder,
 * Node's by module, V8's own entries as they are) and printed per request.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { AUTH as auth, fmt, SetupClient, startApiServer, table, WARMUP_SECONDS } from './lib.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
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

/** Self time by area, in microseconds, of the samples between `from` and `to` (microseconds of the profile's clock). */
export function selfTimeByArea(p: CpuProfile, from = 0, to = Infinity): Map<string, number> {
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
    const area = areaOf(node.callFrame);
    out.set(area, (out.get(area) ?? 0) + dt);
  }
  return out;
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
  const extra = args.filter((a) => a.startsWith("--") && !/^--(workers|acceptors|duration)=/.test(a));
  const s = await startApiServer([`--workers=${workers}`, `--acceptors=${acceptors}`, ...extra], [], ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=100']);
  const url = s.url;
  const ca = s.ca;
  const c = new SetupClient(url, ca);
  await sc.setup(c);
  c.close();
  const opts: autocannon.Options = { headers: auth, pipelining: 1, ...sc.opts, url: `${url}${sc.opts.path}`, tlsOptions: { ca } };
  await autocannon({ ...opts, duration: WARMUP_SECONDS });
  // V8's profile clock is the machine's monotonic clock in microseconds, which hrtime reads too
  const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);
  const from = monotonicUs();
  const r = await autocannon({ ...opts, duration });
  const to = monotonicUs();
  // a graceful stop writes the profile
  await new Promise<void>((resolve) => {
    s.proc.once('exit', () => resolve());
    s.proc.kill('SIGTERM');
  });
  await s.stop();
  const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
  if (!files.length) throw new Error('no profile written');
  const areas = new Map<string, number>();
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as CpuProfile;
    for (const [k, v] of selfTimeByArea(profile, from, to)) areas.set(k, (areas.get(k) ?? 0) + v);
  }
  const n = Math.max(1, r.requests.total);
  const rows = [...areas].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]);
  const busy = rows.reduce((s, [, v]) => s + v, 0);
  console.log(`${name} with --workers=${workers} --acceptors=${acceptors} (${files.length} profiles): ${fmt(r.requests.average)} req/s, ${n} requests; main thread busy ${fmt(busy / n, 1)} us a request (idle ${fmt((areas.get('(idle)') ?? 0) / n, 1)} us)`);
  console.log(table(['area (main thread, self time)', 'us / request', 'share'], rows.slice(0, 30).map(([k, v]) => [k, fmt(v / n, 2), `${fmt((100 * v) / busy, 1)}%`])));
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
