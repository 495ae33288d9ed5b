/**
 * Media types over the wire: GET one CSIDriver and LIST 1,000 ConfigMaps answered in JSON and in
 * protobuf (Accept: application/vnd.svc.protobuf), and CBOR when its gate is on, on one server with
 * rounds alternating between the formats, so drift in the machine's load hits each alike. Targets: a
 * protobuf LIST at least 1.3x JSON's req/s; encodings are memoized per object version, so GET differs
 * little. The load client reads answers as bytes (bench/byte-client.ts): autocannon's decoding of
 * every body into a string costs it ten times more for a binary list than for a JSON one. Each row
 * also gives the server's CPU time per request (all its threads), steadier than req/s on a shared
 * machine; "vs JSON" is the median over rounds of the format's req/s over JSON's in the same round.
 */
import { measureBytes } from '../byte-client.js';
import { AUTH, cpuSeconds, type LoadResult, type Mode, SetupClient, startApiServer, WARMUP_SECONDS } from '../lib.js';

export interface MediaRow {
  scenario: string;
  mode: string;
  format: string;
  result: LoadResult;
  /** Rate as a share of JSON's, in percent (median of the rounds' ratios). */
  ofJson: number;
  /** Server CPU microseconds per request (median of the rounds). */
  serverUs: number;
}

const ROUNDS = 3;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const FORMATS: [string, string][] = [
  ['JSON', 'application/json'],
  ['protobuf', 'application/vnd.svc.protobuf'],
  ['CBOR', 'application/cbor'],
];

export async function mediaTypes(mode: Mode, duration: number): Promise<MediaRow[]> {
  const s = await startApiServer([...mode.flags, '--feature-gates=CBORServingAndStorage=true']);
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' }, spec: { attachRequired: true } });
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'bench' } });
    await c.many(1000, 32, (i) => ['POST', '/api/v1/namespaces/bench/configmaps', { metadata: { name: `cm-${i}`, labels: { app: 'bench' } }, data: { key: `value-${i}`, other: 'x'.repeat(64) } }]);
    c.close();
    const subjects: [string, string, number][] = [
      ['GET one CSIDriver', '/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com', 32],
      ['LIST 1,000 ConfigMaps', '/api/v1/namespaces/bench/configmaps', 8],
    ];
    const rows: MediaRow[] = [];
    for (const [scenario, path, connections] of subjects) {
      const runs = new Map<string, { r: LoadResult; serverUs: number }[]>(FORMATS.map(([f]) => [f, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [format, accept] of FORMATS) {
          const o = { url: `${s.url}${path}`, headers: { ...AUTH, accept }, duration, connections, ca: s.ca };
          await measureBytes(o, WARMUP_SECONDS);
          const cpu0 = cpuSeconds(s.proc.pid!);
          const r = await measureBytes(o);
          const serverUs = ((cpuSeconds(s.proc.pid!) - cpu0) * 1e6) / Math.max(1, r.rps * duration);
          runs.get(format)!.push({ r, serverUs });
        }
      }
      const mean = (xs: { r: LoadResult }[], f: (r: LoadResult) => number): number => xs.reduce((a, x) => a + f(x.r), 0) / xs.length;
      const json = runs.get('JSON')!;
      for (const [format] of FORMATS) {
        const xs = runs.get(format)!;
        const result = { rps: mean(xs, (r) => r.rps), p50: mean(xs, (r) => r.p50), p99: mean(xs, (r) => r.p99), errors: mean(xs, (r) => r.errors), non2xx: mean(xs, (r) => r.non2xx) };
        const ofJson = median(xs.map((x, i) => (100 * x.r.rps) / json[i]!.r.rps));
        rows.push({ scenario, mode: mode.name, format, result, ofJson, serverUs: median(xs.map((x) => x.serverUs)) });
      }
    }
    return rows;
  } finally {
    await s.stop();
  }
}
