/**
 * gRPC beside HTTPS, on one server serving both (--grpc-port). GET one CSIDriver and CREATE ConfigMaps
 * with 32 requests in flight: HTTPS through autocannon on 32 keep-alive HTTP/1.1 connections, gRPC
 * through a lean HTTP/2 load generator (bench/grpc-load.ts: 4 connections x 8 calls, the request
 * framed once), and GET once more through the project's typed client; CREATE in alternating rounds
 * (the store grows under each load, which must not favour the first); with the server's CPU per
 * request, the figure that does not depend on which client spends more of the shared cores. Then
 * watch fan-out: 1,000 gRPC watchers on 10 connections (read as lean as the HTTPS fan-out's raw
 * sockets) beside 1,000 HTTPS watchers, while a writer creates ConfigMaps at a fixed rate; the delay
 * is from each write's acknowledgement to each delivery.
 */
import { connect, type ClientHttp2Session } from 'node:http2';
import { performance } from 'node:perf_hooks';
import { ResourceClient, type Ref } from '../../core/grpc/client.js';
import { methodOf, RESOURCES_SERVICE, type RequestMessage, type UnaryMethod } from '../../core/grpc/proto.js';
import { CONNECTION_WINDOW, grpcFrame, grpcLoad, STREAM_WINDOW } from '../grpc-load.js';
import { AUTH as auth, cpuSeconds, fmt, freePort, load, type LoadResult, peakRssMiB, SetupClient, startApiServer, startBareServer, table, TOKEN, WARMUP_SECONDS } from '../lib.js';
import { watchFanout } from './watch.js';

export interface GrpcRow {
  scenario: string;
  transport: string;
  result: LoadResult;
  /** Server CPU per answered request, in µs. */
  cpuPerRequestUs: number;
  /** Rate as a share of the HTTPS row's, in percent: the median of alternating rounds' ratios, when measured so. */
  vsHttps?: number;
}

/** Rounds of CREATE, HTTPS and gRPC alternating: the store grows under each load, which must not favour the first. */
const CREATE_ROUNDS = 3;

const median = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};

/** One row from alternating rounds: mean rate, latencies and CPU; errors summed. */
function mergedRounds(rounds: GrpcRow[], vsHttps?: number): GrpcRow {
  const mean = (f: (r: GrpcRow) => number): number => rounds.reduce((a, r) => a + f(r), 0) / rounds.length;
  const result: LoadResult = {
    rps: mean((r) => r.result.rps),
    p50: mean((r) => r.result.p50),
    p99: mean((r) => r.result.p99),
    errors: rounds.reduce((a, r) => a + r.result.errors, 0),
    non2xx: rounds.reduce((a, r) => a + r.result.non2xx, 0),
  };
  return { scenario: rounds[0]!.scenario, transport: rounds[0]!.transport, result, cpuPerRequestUs: mean((r) => r.cpuPerRequestUs), vsHttps };
}

const IN_FLIGHT = 32;
const CSI_NAME = 'bench.csi.example.com';
const CSI: Ref = { group: 'storage.svc.io', version: 'v1', resource: 'csidrivers', name: CSI_NAME };
const CM: Ref = { version: 'v1', resource: 'configmaps', namespace: 'default' };

const percentile = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0);

/** Runs a load (warm-up included) and measures the server's CPU over it. */
async function withCpu(pid: number, scenario: string, transport: string, run: () => Promise<LoadResult>): Promise<GrpcRow> {
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const result = await run();
  const cpuShare = (cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000);
  console.log(`  ${scenario} [${transport}]: ${fmt(result.rps)} req/s`);
  return { scenario, transport, result, cpuPerRequestUs: result.rps ? (cpuShare * 1e6) / result.rps : 0 };
}

/** The typed client (core/grpc/client.ts) with IN_FLIGHT calls on 4 connections, after a warm-up. */
async function typedClientLoad(clients: ResourceClient[], seconds: number, call: (c: ResourceClient) => Promise<unknown>): Promise<LoadResult> {
  const run = async (secs: number) => {
    const latencies: number[] = [];
    let errors = 0;
    const until = performance.now() + secs * 1000;
    const worker = async (c: ResourceClient) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          await call(c);
          latencies.push(performance.now() - t0);
        } catch {
          errors++;
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, (_, i) => worker(clients[i % clients.length]!)));
    latencies.sort((a, b) => a - b);
    return { rps: latencies.length / secs, p50: percentile(latencies, 50), p99: percentile(latencies, 99), errors, non2xx: 0 };
  };
  await run(WARMUP_SECONDS);
  return run(seconds);
}

const requestBytes = (method: UnaryMethod, req: RequestMessage): Buffer => methodOf<RequestMessage, unknown>(RESOURCES_SERVICE, method).requestSerialize(req);
const ref = (r: Ref): NonNullable<RequestMessage['ref']> => ({ group: '', namespace: '', name: '', subresource: '', ...r });

export async function grpcGetAndCreate(duration: number): Promise<GrpcRow[]> {
  const grpcPort = await freePort();
  const s = await startApiServer([`--grpc-port=${grpcPort}`]);
  const pid = s.proc.pid!;
  const clients = Array.from({ length: 4 }, () => new ResourceClient({ server: `127.0.0.1:${grpcPort}`, ca: s.ca, token: TOKEN }));
  const grpcUrl = `https://127.0.0.1:${grpcPort}`;
  const grpcLoadWarm = async (o: Omit<Parameters<typeof grpcLoad>[0], 'seconds'>): Promise<LoadResult> => {
    await grpcLoad({ ...o, seconds: WARMUP_SECONDS });
    return grpcLoad({ ...o, seconds: duration });
  };
  const lean = (method: UnaryMethod, req: RequestMessage): Promise<LoadResult> =>
    grpcLoadWarm({ url: grpcUrl, ca: s.ca, path: `/${RESOURCES_SERVICE}/${method}`, message: requestBytes(method, req), token: TOKEN, connections: 4, streamsPerConnection: IN_FLIGHT / 4 });
  const https = (o: Parameters<typeof load>[0]) => load({ duration, connections: IN_FLIGHT, tlsOptions: { ca: s.ca }, ...o });
  try {
    const setup = new SetupClient(s.url, s.ca);
    await setup.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: CSI_NAME }, spec: { attachRequired: true } });
    setup.close();
    const rows: GrpcRow[] = [];
    const get = (accept: string): RequestMessage => ({ ref: ref(CSI), options: {}, body: Buffer.alloc(0), content_type: '', accept });
    const csiUrl = `${s.url}/apis/storage.svc.io/v1/csidrivers/${CSI_NAME}`;
    for (const [label, accept] of [['JSON', 'application/json'], ['protobuf', 'application/vnd.svc.protobuf']] as const) {
      const scenario = `GET one CSIDriver (${label})`;
      rows.push(await withCpu(pid, scenario, 'HTTPS', () => https({ url: csiUrl, headers: { ...auth, accept } })));
      rows.push(await withCpu(pid, scenario, 'gRPC', () => lean('Get', get(accept))));
      // the same lean client on the HTTPS API over HTTP/2: what HTTP/2 itself costs, beside what gRPC adds
      const h2 = { url: s.url, ca: s.ca, path: new URL(csiUrl).pathname, message: new Uint8Array(), token: TOKEN, plainGet: accept, connections: 4, streamsPerConnection: IN_FLIGHT / 4 };
      rows.push(await withCpu(pid, scenario, 'HTTPS, HTTP/2', () => grpcLoadWarm(h2)));
    }
    // the ceilings of each side in this run: bare node:https with the HTTPS load, bare grpc-js with the gRPC one
    for (const grpc of [false, true]) {
      const bare = await startBareServer(s.dir, grpc);
      try {
        const transport = grpc ? 'bare grpc-js (fixed answer, no API work)' : 'bare node:https (fixed 1 KB answer)';
        const run = grpc
          ? () => grpcLoadWarm({ url: bare.url, ca: s.ca, path: `/${RESOURCES_SERVICE}/Get`, message: requestBytes('Get', get('application/json')), token: TOKEN, connections: 4, streamsPerConnection: IN_FLIGHT / 4 })
          : () => https({ url: bare.url });
        rows.push(await withCpu(bare.proc.pid!, 'GET one CSIDriver (JSON)', transport, run));
      } finally {
        await bare.stop();
      }
    }
    await Promise.all(clients.map((c) => c.ready()));
    rows.push(await withCpu(pid, 'GET one CSIDriver (protobuf)', 'gRPC, typed client', () => typedClientLoad(clients, duration, (c) => c.get(CSI))));
    const body = JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } });
    const scenario = 'CREATE ConfigMap (durable)';
    const create: RequestMessage = { ref: ref(CM), options: {}, body: Buffer.from(body), content_type: 'application/json', accept: 'application/json' };
    const overHttps: GrpcRow[] = [];
    const overGrpc: GrpcRow[] = [];
    for (let round = 0; round < CREATE_ROUNDS; round++) {
      overHttps.push(await withCpu(pid, scenario, 'HTTPS', () => https({ url: `${s.url}/api/v1/namespaces/default/configmaps`, method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body })));
      overGrpc.push(await withCpu(pid, scenario, 'gRPC', () => lean('Create', create)));
    }
    rows.push(mergedRounds(overHttps), mergedRounds(overGrpc, median(overGrpc.map((g, i) => (100 * g.result.rps) / overHttps[i]!.result.rps))));
    return rows;
  } finally {
    for (const c of clients) c.close();
    await s.stop();
  }
}

export interface GrpcFanout {
  watchers: number;
  connections: number;
  rate: number;
  achievedRate: number;
  delivered: number;
  expected: number;
  p50: number;
  p99: number;
  cpuPercent: number;
  peakRssMiB: number;
}

const RV_JSON = /"resourceVersion":"(\d+)"/g;

/** One raw gRPC watch stream: records when each resourceVersion arrives (JSON objects, scanned, not decoded). */
function openWatch(session: ClientHttp2Session, frame: Buffer, seen: Map<number, number>): void {
  const stream = session.request({ ':method': 'POST', ':path': `/${RESOURCES_SERVICE}/Watch`, 'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${TOKEN}` });
  let tail = '';
  stream.setEncoding('latin1');
  stream.on('data', (chunk: string) => {
    const now = performance.now();
    const text = tail + chunk;
    RV_JSON.lastIndex = 0;
    let lastEnd = 0;
    for (let m = RV_JSON.exec(text); m; m = RV_JSON.exec(text)) {
      seen.set(Number(m[1]), now);
      lastEnd = RV_JSON.lastIndex;
    }
    tail = text.slice(Math.max(lastEnd, text.length - 40));
  });
  stream.on('error', () => undefined);
  stream.end(frame);
}

/** `watchers` gRPC watches on `connections` connections; a writer at `rate` writes/s for `seconds`. */
export async function grpcWatchFanout(o: { watchers: number; connections: number; rate: number; seconds: number }): Promise<GrpcFanout> {
  const grpcPort = await freePort();
  const s = await startApiServer([`--grpc-port=${grpcPort}`, '--watch-cache-size=100000']);
  const pid = s.proc.pid!;
  const sessions: ClientHttp2Session[] = [];
  const seen: Map<number, number>[] = [];
  try {
    const setup = new SetupClient(s.url, s.ca);
    await setup.send('POST', '/api/v1/namespaces', { metadata: { name: 'fanout' } });
    for (let i = 0; i < o.connections; i++) {
      const session = connect(`https://127.0.0.1:${grpcPort}`, { ca: s.ca, servername: 'localhost', settings: { initialWindowSize: STREAM_WINDOW } });
      session.once('connect', () => session.setLocalWindowSize(CONNECTION_WINDOW));
      sessions.push(session);
    }
    const req: RequestMessage = { ref: ref({ version: 'v1', resource: 'configmaps', namespace: 'fanout' }), options: { resourceVersion: '0', timeoutSeconds: '3600' }, body: Buffer.alloc(0), content_type: '', accept: 'application/json' };
    const frame = grpcFrame(methodOf<RequestMessage, unknown>(RESOURCES_SERVICE, 'Watch').requestSerialize(req));
    for (let i = 0; i < o.watchers; i++) {
      const mine = new Map<number, number>();
      seen.push(mine);
      openWatch(sessions[i % sessions.length]!, frame, mine);
    }
    await new Promise((r) => setTimeout(r, 1000));
    const acks = new Map<number, number>();
    const total = Math.round(o.rate * o.seconds);
    const cpu0 = cpuSeconds(pid);
    const wall0 = performance.now();
    const inflight: Promise<void>[] = [];
    const rvOf = /"resourceVersion":"(\d+)"/;
    for (let i = 0; i < total; i++) {
      const wait = wall0 + (i * 1000) / o.rate - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      inflight.push(
        setup.send('POST', '/api/v1/namespaces/fanout/configmaps', { metadata: { generateName: 'w-' }, data: { i: String(i) } }).then((r) => {
          acks.set(Number(rvOf.exec(r.text)?.[1]), performance.now());
        }),
      );
    }
    await Promise.all(inflight);
    const writeSeconds = (performance.now() - wall0) / 1000;
    const settleUntil = performance.now() + 3000;
    while (performance.now() < settleUntil && !seen.every((m) => [...acks.keys()].every((rv) => m.has(rv)))) await new Promise((r) => setTimeout(r, 100));
    const cpu = cpuSeconds(pid) - cpu0;
    const wall = (performance.now() - wall0) / 1000;
    setup.close();
    const delays: number[] = [];
    for (const m of seen) for (const [rv, ack] of acks) if (m.has(rv)) delays.push(Math.max(0, m.get(rv)! - ack));
    delays.sort((a, b) => a - b);
    return {
      watchers: o.watchers,
      connections: o.connections,
      rate: o.rate,
      achievedRate: acks.size / writeSeconds,
      delivered: delays.length,
      expected: acks.size * o.watchers,
      p50: percentile(delays, 50),
      p99: percentile(delays, 99),
      cpuPercent: (100 * cpu) / wall,
      peakRssMiB: peakRssMiB(pid),
    };
  } finally {
    for (const x of sessions) x.destroy();
    await s.stop();
  }
}

/** The `grpc` group's tables: each gRPC figure beside the HTTPS one of the same run. */
export async function grpcSection(duration: number): Promise<string> {
  const measured = await grpcGetAndCreate(duration);
  const rows = measured.map((r) => {
    const https = measured.find((x) => x.scenario === r.scenario && x.transport === 'HTTPS')!;
    // rows of the same scenario compare with its HTTPS (HTTP/1.1, autocannon) row
    const vs = r === https ? '100%' : `${fmt(r.vsHttps ?? (100 * r.result.rps) / https.result.rps)}%${r.vsHttps !== undefined ? ` (median of ${CREATE_ROUNDS} alternating rounds)` : ''}`;
    const errs = r.result.errors + r.result.non2xx ? `${r.result.errors} errors, ${r.result.non2xx} non-2xx` : '';
    return [r.scenario, r.transport, fmt(r.result.rps), `${fmt(r.result.p50, 1)} ms`, `${fmt(r.result.p99, 1)} ms`, vs, `${fmt(r.cpuPerRequestUs)} µs`, errs];
  });
  const out = [table(['scenario (32 in flight, default mode)', 'transport', 'req/s', 'p50', 'p99', 'req/s vs HTTPS', 'server CPU / request', 'errors'], rows)];
  const fanRows: string[][] = [];
  for (const rate of [100, 400]) {
    const h = await watchFanout({ name: 'pool (default)', flags: [] }, { watchers: 1000, rates: [rate], seconds: 8, targetP99Ms: 250 });
    const hs = h.steps[0]!;
    const g = await grpcWatchFanout({ watchers: 1000, connections: 10, rate, seconds: 8 });
    console.log(`  watch fan-out [gRPC] 1000 watchers on 10 connections x ${rate} writes/s: p99 ${fmt(g.p99, 1)} ms, ${g.delivered}/${g.expected}`);
    fanRows.push(
      ['HTTPS (HTTP/1.1)', '1,000', `${rate}/s (achieved ${fmt(hs.achievedRate)}/s)`, `${hs.delivered}/${hs.expected}`, `${fmt(hs.p50, 1)} ms`, `${fmt(hs.p99, 1)} ms`, `${fmt(hs.cpuPercent)}%`, fmt(h.peakRssMiB)],
      ['gRPC', '10', `${rate}/s (achieved ${fmt(g.achievedRate)}/s)`, `${g.delivered}/${g.expected}`, `${fmt(g.p50, 1)} ms`, `${fmt(g.p99, 1)} ms`, `${fmt(g.cpuPercent)}%`, fmt(g.peakRssMiB)],
    );
  }
  out.push(table(['watch fan-out, 1,000 watchers', 'connections', 'writes', 'delivered', 'p50 delay', 'p99 delay', 'server CPU', 'peak RSS MiB'], fanRows));
  return out.join('\n\n');
}
