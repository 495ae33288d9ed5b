/**
 * gRPC beside HTTPS, on one server serving both (--grpc-port): GET one CSIDriver and CREATE ConfigMaps
 * with the same number of requests in flight (HTTPS through autocannon on keep-alive connections, gRPC
 * through the project's typed client, calls multiplexed on a few connections), then watch fan-out:
 * 1,000 gRPC watchers on 10 connections while a writer creates ConfigMaps at a fixed rate, with the
 * delay from each write's acknowledgement to each delivery.
 */
import { performance } from 'node:perf_hooks';
import { ResourceClient, type Ref } from '../../core/grpc/client.js';
import { AUTH as auth, cpuSeconds, fmt, freePort, load, type LoadResult, peakRssMiB, SetupClient, startApiServer, table, TOKEN, WARMUP_SECONDS } from '../lib.js';
import { watchFanout } from './watch.js';

export interface GrpcRow {
  scenario: string;
  transport: string;
  result: LoadResult;
}

const IN_FLIGHT = 32;
const GRPC_CONNECTIONS = 8;
const CSI: Ref = { group: 'storage.svc.io', version: 'v1', resource: 'csidrivers', name: 'bench.csi.example.com' };
const CM: Ref = { version: 'v1', resource: 'configmaps', namespace: 'default' };

const percentile = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0);

/** Runs `call` with IN_FLIGHT calls at once for `seconds`; rate and latency percentiles. */
async function drive(clients: ResourceClient[], seconds: number, call: (c: ResourceClient) => Promise<unknown>): Promise<LoadResult> {
  const run = async (secs: number, record: boolean) => {
    const latencies: number[] = [];
    let errors = 0;
    const until = performance.now() + secs * 1000;
    const worker = async (c: ResourceClient) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          await call(c);
          if (record) latencies.push(performance.now() - t0);
        } catch {
          errors++;
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, (_, i) => worker(clients[i % clients.length]!)));
    latencies.sort((a, b) => a - b);
    return { rps: latencies.length / secs, p50: percentile(latencies, 50), p99: percentile(latencies, 99), errors, non2xx: 0 };
  };
  await run(WARMUP_SECONDS, false);
  return run(seconds, true);
}

async function withServer<T>(fn: (s: { url: string; ca: string; grpcPort: number; clients: ResourceClient[] }) => Promise<T>): Promise<T> {
  const grpcPort = await freePort();
  const s = await startApiServer([`--grpc-port=${grpcPort}`]);
  const clients = Array.from({ length: GRPC_CONNECTIONS }, () => new ResourceClient({ server: `127.0.0.1:${grpcPort}`, ca: s.ca, token: TOKEN }));
  try {
    await Promise.all(clients.map((c) => c.ready()));
    return await fn({ url: s.url, ca: s.ca, grpcPort, clients });
  } finally {
    for (const c of clients) c.close();
    await s.stop();
  }
}

export async function grpcGetAndCreate(duration: number): Promise<GrpcRow[]> {
  const rows: GrpcRow[] = [];
  await withServer(async (s) => {
    const setup = new SetupClient(s.url, s.ca);
    await setup.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: CSI.name }, spec: { attachRequired: true } });
    setup.close();
    const url = `${s.url}/apis/storage.svc.io/v1/csidrivers/${CSI.name}`;
    rows.push({ scenario: 'GET one CSIDriver (JSON)', transport: 'HTTPS', result: await load({ url, headers: auth, duration, connections: IN_FLIGHT, tlsOptions: { ca: s.ca } }) });
    rows.push({ scenario: 'GET one CSIDriver (JSON)', transport: 'gRPC', result: await drive(s.clients, duration, (c) => c.get(CSI, { accept: 'application/json' })) });
    rows.push({ scenario: 'GET one CSIDriver (protobuf)', transport: 'HTTPS', result: await load({ url, headers: { ...auth, accept: 'application/vnd.svc.protobuf' }, duration, connections: IN_FLIGHT, tlsOptions: { ca: s.ca } }) });
    rows.push({ scenario: 'GET one CSIDriver (protobuf)', transport: 'gRPC', result: await drive(s.clients, duration, (c) => c.get(CSI)) });
    const body = JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } });
    const created = await load({ url: `${s.url}/api/v1/namespaces/default/configmaps`, method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body, duration, connections: IN_FLIGHT, tlsOptions: { ca: s.ca } });
    rows.push({ scenario: 'CREATE ConfigMap (durable)', transport: 'HTTPS', result: created });
    rows.push({ scenario: 'CREATE ConfigMap (durable)', transport: 'gRPC', result: await drive(s.clients, duration, (c) => c.create(CM, body, { accept: 'application/json' })) });
  });
  return rows;
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

const RV = /"resourceVersion":"(\d+)"/;

/** `watchers` gRPC watches on `connections` connections; a writer at `rate` writes/s for `seconds`. */
export async function grpcWatchFanout(o: { watchers: number; connections: number; rate: number; seconds: number }): Promise<GrpcFanout> {
  const grpcPort = await freePort();
  const s = await startApiServer([`--grpc-port=${grpcPort}`, '--watch-cache-size=100000']);
  const pid = s.proc.pid!;
  const clients = Array.from({ length: o.connections }, () => new ResourceClient({ server: `127.0.0.1:${grpcPort}`, ca: s.ca, token: TOKEN }));
  const ac = new AbortController();
  const seen: Map<number, number>[] = [];
  try {
    const setup = new SetupClient(s.url, s.ca);
    await setup.send('POST', '/api/v1/namespaces', { metadata: { name: 'fanout' } });
    const ref: Ref = { version: 'v1', resource: 'configmaps', namespace: 'fanout' };
    for (let i = 0; i < o.watchers; i++) {
      const mine = new Map<number, number>();
      seen.push(mine);
      const stream = clients[i % clients.length]!.watch(ref, { accept: 'application/json', signal: ac.signal, options: { resourceVersion: '0', timeoutSeconds: '3600' } });
      void (async () => {
        try {
          for await (const ev of stream) {
            const m = RV.exec(ev.raw.toString('latin1'));
            if (m) mine.set(Number(m[1]), performance.now());
          }
        } catch {
          // the watch ends when the bench cancels it
        }
      })();
    }
    await new Promise((r) => setTimeout(r, 1000));
    const acks = new Map<number, number>();
    const total = Math.round(o.rate * o.seconds);
    const cpu0 = cpuSeconds(pid);
    const wall0 = performance.now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const wait = wall0 + (i * 1000) / o.rate - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      inflight.push(
        setup.send('POST', '/api/v1/namespaces/fanout/configmaps', { metadata: { generateName: 'w-' }, data: { i: String(i) } }).then((r) => {
          acks.set(Number(RV.exec(r.text)?.[1]), performance.now());
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
    ac.abort();
    for (const c of clients) c.close();
    await s.stop();
  }
}

/** The `grpc` group's table: each gRPC figure beside the HTTPS one of the same run. */
export async function grpcSection(duration: number): Promise<string> {
  const rows: string[][] = [];
  const cells = (r: GrpcRow, https?: GrpcRow) => [
    r.scenario,
    r.transport,
    fmt(r.result.rps),
    `${fmt(r.result.p50, 1)} ms`,
    `${fmt(r.result.p99, 1)} ms`,
    https ? `${fmt((100 * r.result.rps) / https.result.rps)}%` : '100%',
    r.result.errors + r.result.non2xx ? `${r.result.errors} errors, ${r.result.non2xx} non-2xx` : '',
  ];
  const measured = await grpcGetAndCreate(duration);
  for (const r of measured) {
    const https = measured.find((x) => x.scenario === r.scenario && x.transport === 'HTTPS');
    console.log(`  ${r.scenario} [${r.transport}]: ${fmt(r.result.rps)} req/s`);
    rows.push(cells(r, r.transport === 'gRPC' ? https : undefined));
  }
  const out = [table(['scenario (default mode, 32 in flight)', 'transport', 'req/s', 'p50', 'p99', 'vs HTTPS', 'errors'], rows)];
  const rate = 100;
  const g = await grpcWatchFanout({ watchers: 1000, connections: 10, rate, seconds: 8 });
  console.log(`  watch fan-out [gRPC] 1000 watchers on 10 connections x ${rate} writes/s: p99 ${fmt(g.p99, 1)} ms, ${g.delivered}/${g.expected}`);
  const h = await watchFanout({ name: 'pool (default)', flags: [] }, { watchers: 1000, rates: [rate], seconds: 8, targetP99Ms: 250 });
  const hs = h.steps[0]!;
  out.push(
    table(
      ['watch fan-out, 1,000 watchers', 'connections', 'writes', 'delivered', 'p50 delay', 'p99 delay', 'server CPU', 'peak RSS MiB'],
      [
        ['HTTPS (HTTP/1.1)', '1,000', `${rate}/s (achieved ${fmt(hs.achievedRate)}/s)`, `${hs.delivered}/${hs.expected}`, `${fmt(hs.p50, 1)} ms`, `${fmt(hs.p99, 1)} ms`, `${fmt(hs.cpuPercent)}%`, fmt(h.peakRssMiB)],
        ['gRPC', '10', `${rate}/s (achieved ${fmt(g.achievedRate)}/s)`, `${g.delivered}/${g.expected}`, `${fmt(g.p50, 1)} ms`, `${fmt(g.p99, 1)} ms`, `${fmt(g.cpuPercent)}%`, fmt(g.peakRssMiB)],
      ],
    ),
  );
  return out.join('\n\n');
}
