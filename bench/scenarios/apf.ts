/**
 * API Priority and Fairness (issue 29), in one run:
 *
 *   GET       one CSIDriver by an ordinary user (classified down to global-default, queued fairly) and
 *             by system:masters (exempt), on a server with APF and one with
 *             --enable-priority-and-fairness=false, alternating rounds (median of 3): APF's cost
 *   isolation node heartbeats (the scale bench's Lease PUTs with their resourceVersions, 5,000 Leases
 *             renewed every 10 s, as users in system:nodes over HTTP/2) alone, then while one user
 *             floods LISTs of 2,000 ConfigMaps from as many connections as the generator keeps busy:
 *             the heartbeats' p99 and refusals, the flood's answers and 429s; with APF and without
 *
 * Both servers run with AlwaysAllow authorization, so that the figures are APF's and not RBAC's.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Mode, H2Client, load, type LoadResult, median, percentile, type Proc, SetupClient, sleep, startApiServer, treeCpuSeconds, WARMUP_SECONDS } from '../lib.js';
import { LEASE_NS, NodeLeases } from './heartbeat.js';

const USER_TOKEN = 'bench-user-token';
const FLOOD_TOKEN = 'bench-flood-token';
/** Heartbeats are sent as these users, all in system:nodes (one connection each). */
const NODE_USERS = 8;
const nodeToken = (i: number) => `bench-node-token-${i}`;
const TOKENS = [
  `${USER_TOKEN},bench-user,uid-user`,
  `${FLOOD_TOKEN},bench-flooder,uid-flood`,
  ...Array.from({ length: NODE_USERS }, (_, i) => `${nodeToken(i)},system:node:bench-${i},uid-node-${i},"system:nodes"`),
];
const LEASES = 5000;
const RENEW_SECONDS = 10;
const FLOOD_OBJECTS = 2000;
/** Connections the flood generator keeps busy, each with one LIST in flight: more than one flow may queue (6 queues of 50). */
const FLOOD_CONNECTIONS = 512;
const GET_ROUNDS = 3;

export interface ApfGetRow {
  scenario: string;
  on: LoadResult;
  off: LoadResult;
  ratio: number;
  /** The servers' CPU per request (µs, median of the rounds): steadier than req/s on shared cores. */
  onCpuUs: number;
  offCpuUs: number;
}

export interface HeartbeatRun {
  p50: number;
  p99: number;
  puts: number;
  refused: number;
}

export interface IsolationRow {
  mode: string;
  alone: HeartbeatRun;
  flooded: HeartbeatRun;
  floodAnswers: number;
  flood429: number;
  floodOther: number;
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` });
const generatorPath = fileURLToPath(new URL('../load-generator.js', import.meta.url));

interface FloodResult {
  codes: Record<string, number>;
  errors: number;
  timeouts: number;
}

/** autocannon in its own process, so that the flood's answers do not slow the bench's own measurements. */
function floodProcess(opts: Record<string, unknown>): Promise<FloodResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [generatorPath, JSON.stringify(opts)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as FloodResult) : reject(new Error(`load generator exited ${code}`))));
  });
}
const CSI = '/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com';

async function server(apf: boolean): Promise<Proc> {
  const s = await startApiServer(['--authorization-mode=AlwaysAllow', ...(apf ? [] : ['--enable-priority-and-fairness=false'])], TOKENS);
  const c = new SetupClient(s.url, s.ca);
  await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' }, spec: { attachRequired: true } });
  c.close();
  return s;
}

/** GET by each credential on both servers, in alternating rounds; the median round of each. */
export async function apfGet(duration: number): Promise<ApfGetRow[]> {
  const on = await server(true);
  const off = await server(false);
  try {
    const rows: ApfGetRow[] = [];
    for (const [name, token] of [
      ['GET one CSIDriver, ordinary user (global-default)', USER_TOKEN],
      ['GET one CSIDriver, system:masters (exempt)', 'bench-admin-token'],
    ] as const) {
      const ons: LoadResult[] = [];
      const offs: LoadResult[] = [];
      const onCpu: number[] = [];
      const offCpu: number[] = [];
      for (let i = 0; i < GET_ROUNDS; i++) {
        for (const [s, into, cpu] of [
          [on, ons, onCpu],
          [off, offs, offCpu],
        ] as const) {
          const r = await load({ url: `${s.url}${CSI}`, headers: auth(token), duration, tlsOptions: { ca: s.ca } });
          into.push(r);
          // one more measured load, timed by the server's CPU (the warm-up of load() is not in it)
          const cpu0 = treeCpuSeconds(s.proc.pid!);
          const again = await load({ url: `${s.url}${CSI}`, headers: auth(token), duration, tlsOptions: { ca: s.ca } });
          cpu.push(((treeCpuSeconds(s.proc.pid!) - cpu0) * 1e6) / Math.max(1, again.rps * (duration + WARMUP_SECONDS)));
        }
      }
      const mid = (xs: LoadResult[]) => xs.slice().sort((a, b) => a.rps - b.rps)[Math.floor(xs.length / 2)]!;
      const ratios = ons.map((o, i) => (o.rps / offs[i]!.rps) * 100);
      rows.push({ scenario: name, on: mid(ons), off: mid(offs), ratio: median(ratios), onCpuUs: median(onCpu), offCpuUs: median(offCpu) });
    }
    return rows;
  } finally {
    await on.stop();
    await off.stop();
  }
}

/** `LEASES` Leases renewed every RENEW_SECONDS by system:nodes users for `seconds` (after a warm-up). */
async function heartbeats(clients: H2Client[], nodes: NodeLeases, seconds: number, during?: () => void): Promise<HeartbeatRun> {
  const rate = LEASES / RENEW_SECONDS;
  const warm = Math.round(rate * WARMUP_SECONDS);
  const total = warm + Math.round(rate * seconds);
  const latencies: number[] = [];
  let refused = 0;
  const chains: Promise<void>[] = [];
  const t0 = performance.now();
  for (let k = 0; k < total; k++) {
    const wait = t0 + (k * 1000) / rate - performance.now();
    if (wait > 1) await sleep(wait);
    if (k === warm) during?.();
    const i = k % LEASES;
    const counted = k >= warm;
    chains[i] = (chains[i] ?? Promise.resolve()).then(async () => {
      const t = performance.now();
      const ok = await nodes.renew(clients[i % clients.length]!, i);
      if (!counted) return;
      latencies.push(performance.now() - t);
      if (!ok) refused++;
    });
  }
  await Promise.all(chains);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), puts: latencies.length, refused };
}

async function isolation(mode: Mode, duration: number): Promise<IsolationRow> {
  const s = await startApiServer(['--authorization-mode=AlwaysAllow', ...mode.flags], TOKENS);
  try {
    const setup = new SetupClient(s.url, s.ca);
    await setup.send('POST', '/api/v1/namespaces', { metadata: { name: 'flood' } });
    await setup.send('POST', '/api/v1/namespaces', { metadata: { name: LEASE_NS } });
    await setup.many(FLOOD_OBJECTS, 32, (i) => ['POST', '/api/v1/namespaces/flood/configmaps', { metadata: { name: `cm-${i}` }, data: { key: `value-${i}`, other: 'x'.repeat(200) } }]);
    const admin = new H2Client(s.url, s.ca, 4);
    const nodes = await NodeLeases.create(admin, LEASES, 32);
    admin.close();
    setup.close();
    const clients = Array.from({ length: NODE_USERS }, (_, i) => new H2Client(s.url, s.ca, 1, auth(nodeToken(i))));
    try {
      const alone = await heartbeats(clients, nodes, duration);
      let flood: Promise<FloodResult> | undefined;
      const flooded = await heartbeats(clients, nodes, duration, () => {
        flood = floodProcess({
          url: `${s.url}/api/v1/namespaces/flood/configmaps`,
          headers: auth(FLOOD_TOKEN),
          connections: FLOOD_CONNECTIONS,
          duration,
          tlsOptions: { ca: s.ca },
          timeout: 30,
        });
      });
      const f = await flood!;
      const count = (c: string) => f.codes[c] ?? 0;
      const answers = Object.values(f.codes).reduce((a, c) => a + c, 0);
      return { mode: mode.name, alone, flooded, floodAnswers: answers, flood429: count('429'), floodOther: answers - count('200') - count('429') + f.errors + f.timeouts };
    } finally {
      for (const c of clients) c.close();
    }
  } finally {
    await s.stop();
  }
}

export async function apfIsolation(duration: number): Promise<IsolationRow[]> {
  const rows: IsolationRow[] = [];
  for (const mode of [
    { name: 'APF (default)', flags: [] },
    { name: '--enable-priority-and-fairness=false', flags: ['--enable-priority-and-fairness=false'] },
  ]) {
    rows.push(await isolation(mode, duration));
  }
  return rows;
}
