/**
 * The cost of the audit log: GET one CSIDriver and CREATE ConfigMaps against a server writing every
 * request at Metadata level to a file (both stages, as a policy of `level: Metadata` writes them) and
 * scraped for /metrics every second, beside the same server without audit and unscraped, in the same run. Both servers run side by side and the loads
 * alternate between them (three rounds each) so drift hits both alike; the ratios are the medians of the
 * rounds' ratios. Beside req/s, each server's
 * CPU time per request (user + system, all its threads) is measured: on a machine shared with other
 * work it is the steadier figure of what the audit costs.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AUTH as auth, cpuSeconds, type LoadResult, load, minorFaults, type Mode, type Proc, SetupClient, startApiServer, WARMUP_SECONDS } from '../lib.js';

export interface AuditRow {
  scenario: string;
  mode: string;
  plain: LoadResult;
  audited: LoadResult;
  /** Server CPU microseconds per request (warm-up included in both the time and the count). */
  plainCpuUs: number;
  auditedCpuUs: number;
  /** Minor page faults per request (see minorFaults in bench/lib.ts). */
  plainFaults: number;
  auditedFaults: number;
  /** Bytes of audit log written per audited request. */
  logBytesPerRequest: number;
  /** Audited rate as a share of the plain one, in percent: the median of the rounds' ratios (each round's pair ran moments apart). */
  ratio: number;
  /** Plain CPU per request as a share of the audited one, in percent: the median of the rounds' ratios. */
  cpuRatio: number;
}

const median = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};

/** One load, with the server's CPU time per request. */
interface Measured {
  r: LoadResult;
  cpuUs: number;
  faults: number;
  /** Audit log bytes per request, when the log grew without rotating meanwhile. */
  logBytes?: number;
}

/** Scrapes /metrics every second while `during` runs, as a Prometheus server would (the audited side's load). */
async function scrapedEverySecond<T>(s: Proc, during: Promise<T>): Promise<T> {
  const c = new SetupClient(s.url, s.ca);
  let scrapes = 0;
  const timer = setInterval(() => {
    c.send('GET', '/metrics').then(
      (r) => (r.status === 200 ? scrapes++ : console.warn(`  audit bench: a scrape answered ${r.status}`)),
      (e: Error) => console.warn(`  audit bench: a scrape failed: ${e.message}`),
    );
  }, 1000);
  try {
    return await during;
  } finally {
    clearInterval(timer);
    c.close();
    if (scrapes === 0) console.warn('  audit bench: no scrape completed');
  }
}

async function measured(s: Proc, duration: number, run: (s: Proc) => Promise<LoadResult>, log?: string): Promise<Measured> {
  const before = cpuSeconds(s.proc.pid!);
  const faultsBefore = minorFaults(s.proc.pid!);
  const size = log ? logSize(log) : 0;
  // the audited server is also scraped every second: the row is "audit and metrics" against neither
  const r = await (log ? scrapedEverySecond(s, run(s)) : run(s));
  const requests = Math.max(1, r.rps * (duration + WARMUP_SECONDS));
  const m: Measured = { r, cpuUs: ((cpuSeconds(s.proc.pid!) - before) * 1e6) / requests, faults: (minorFaults(s.proc.pid!) - faultsBefore) / requests };
  const grew = log ? logSize(log) - size : 0;
  if (grew > 0) m.logBytes = grew / requests;
  return m;
}

const mean = (rs: LoadResult[]): LoadResult => ({
  rps: rs.reduce((a, r) => a + r.rps, 0) / rs.length,
  p50: rs.reduce((a, r) => a + r.p50, 0) / rs.length,
  p99: rs.reduce((a, r) => a + r.p99, 0) / rs.length,
  errors: rs.reduce((a, r) => a + r.errors, 0),
  non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
});

const logSize = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

export async function auditCost(mode: Mode, duration: number): Promise<AuditRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-audit-'));
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: Metadata\n');
  const log = join(dir, 'audit.log');
  const plain = await startApiServer(mode.flags);
  const audited = await startApiServer([...mode.flags, `--audit-policy-file=${policy}`, `--audit-log-path=${log}`, '--audit-log-maxbackup=1', '--audit-log-maxsize=4000']);
  try {
    for (const s of [plain, audited]) {
      const c = new SetupClient(s.url, s.ca);
      await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' }, spec: { attachRequired: true } });
      c.close();
    }
    const get = (s: Proc) => load({ url: `${s.url}/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com`, headers: auth, duration, tlsOptions: { ca: s.ca } });
    const body = JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } });
    const create = (s: Proc) =>
      load({ url: `${s.url}/api/v1/namespaces/default/configmaps`, method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body, duration, connections: 64, tlsOptions: { ca: s.ca } });
    const rows: AuditRow[] = [];
    for (const [scenario, run] of [
      ['GET one CSIDriver', get],
      ['CREATE ConfigMap (durable)', create],
    ] as const) {
      const p: Measured[] = [];
      const a: Measured[] = [];
      for (let round = 0; round < 3; round++) {
        p.push(await measured(plain, duration, run));
        a.push(await measured(audited, duration, run, log));
      }
      const cpu = (xs: Measured[]) => xs.reduce((t, x) => t + x.cpuUs, 0) / xs.length;
      const faults = (xs: Measured[]) => xs.reduce((t, x) => t + x.faults, 0) / xs.length;
      // a round in which the log rotated (past 4,000 MB) reads as nothing written: it is left out of the figure
      const sizes = a.flatMap((x) => (x.logBytes ? [x.logBytes] : []));
      const logBytesPerRequest = sizes.length ? sizes.reduce((t, x) => t + x, 0) / sizes.length : 0;
      const ratio = median(a.map((x, i) => (100 * x.r.rps) / p[i]!.r.rps));
      const cpuRatio = median(a.map((x, i) => (100 * p[i]!.cpuUs) / x.cpuUs));
      rows.push({ scenario, mode: mode.name, plain: mean(p.map((x) => x.r)), audited: mean(a.map((x) => x.r)), plainCpuUs: cpu(p), auditedCpuUs: cpu(a), plainFaults: faults(p), auditedFaults: faults(a), logBytesPerRequest, ratio, cpuRatio });
    }
    return rows;
  } finally {
    await plain.stop();
    await audited.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
