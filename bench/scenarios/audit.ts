/**
 * The cost of the audit log: GET one CSIDriver and CREATE ConfigMaps against a server writing every
 * request at Metadata level to a file (both stages, as a policy of `level: Metadata` writes them)
 * beside the same server without audit, in the same run. Both servers run side by side and the loads
 * alternate between them (two rounds each) so drift hits both alike.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AUTH as auth, type LoadResult, load, type Mode, SetupClient, startApiServer } from '../lib.js';

export interface AuditRow {
  scenario: string;
  mode: string;
  plain: LoadResult;
  audited: LoadResult;
  /** Bytes of audit log written in all. */
  logBytes: number;
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
  const audited = await startApiServer([...mode.flags, `--audit-policy-file=${policy}`, `--audit-log-path=${log}`, '--audit-log-maxbackup=1']);
  try {
    for (const s of [plain, audited]) {
      const c = new SetupClient(s.url, s.ca);
      await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' }, spec: { attachRequired: true } });
      c.close();
    }
    const get = (s: typeof plain) => load({ url: `${s.url}/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com`, headers: auth, duration, tlsOptions: { ca: s.ca } });
    const body = JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } });
    const create = (s: typeof plain) =>
      load({ url: `${s.url}/api/v1/namespaces/default/configmaps`, method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body, duration, connections: 64, tlsOptions: { ca: s.ca } });
    const rows: AuditRow[] = [];
    for (const [scenario, run] of [
      ['GET one CSIDriver', get],
      ['CREATE ConfigMap (durable)', create],
    ] as const) {
      const p: LoadResult[] = [];
      const a: LoadResult[] = [];
      const before = logSize(log);
      for (let round = 0; round < 2; round++) {
        p.push(await run(plain));
        a.push(await run(audited));
      }
      rows.push({ scenario, mode: mode.name, plain: mean(p), audited: mean(a), logBytes: Math.max(0, logSize(log) - before) });
    }
    return rows;
  } finally {
    await plain.stop();
    await audited.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
