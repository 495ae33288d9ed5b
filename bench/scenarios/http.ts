/**
 * Request benchmarks through autocannon over HTTPS keep-alive with an admin bearer token: GET one
 * CSIDriver, LIST 1,000 ConfigMaps of a namespace, CREATE ConfigMaps (durable), each against a fresh
 * server per mode (so peak RSS is the scenario's own).
 */
import { AUTH as auth, fmt, load, type LoadResult, type Mode, peakRssMiB, SetupClient, startApiServer } from '../lib.js';

export interface Row {
  scenario: string;
  mode: string;
  result: LoadResult;
  rssMiB: number;
  note?: string;
}

export async function getOne(mode: Mode, duration: number): Promise<Row> {
  const s = await startApiServer(mode.flags);
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' }, spec: { attachRequired: true } });
    c.close();
    const result = await load({ url: `${s.url}/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com`, headers: auth, duration, tlsOptions: { ca: s.ca } });
    return { scenario: 'GET one CSIDriver', mode: mode.name, result, rssMiB: peakRssMiB(s.proc.pid!) };
  } finally {
    await s.stop();
  }
}

export async function list1000(mode: Mode, duration: number): Promise<Row> {
  const s = await startApiServer(mode.flags);
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'bench' } });
    await c.many(1000, 32, (i) => ['POST', '/api/v1/namespaces/bench/configmaps', { metadata: { name: `cm-${i}`, labels: { app: 'bench' } }, data: { key: `value-${i}`, other: 'x'.repeat(64) } }]);
    c.close();
    const result = await load({ url: `${s.url}/api/v1/namespaces/bench/configmaps`, headers: auth, duration, connections: 8, tlsOptions: { ca: s.ca } });
    return { scenario: 'LIST 1,000 ConfigMaps', mode: mode.name, result, rssMiB: peakRssMiB(s.proc.pid!) };
  } finally {
    await s.stop();
  }
}

export async function createMany(mode: Mode, duration: number): Promise<Row> {
  const s = await startApiServer(mode.flags);
  try {
    const body = JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } });
    const result = await load({
      url: `${s.url}/api/v1/namespaces/default/configmaps`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body,
      duration,
      connections: 64,
      tlsOptions: { ca: s.ca },
    });
    return { scenario: 'CREATE ConfigMap (durable)', mode: mode.name, result, rssMiB: peakRssMiB(s.proc.pid!) };
  } finally {
    await s.stop();
  }
}

export function rowCells(r: Row, bareRps: number): string[] {
  return [r.scenario, r.mode, fmt(r.result.rps), `${fmt(r.result.p50)} ms`, `${fmt(r.result.p99)} ms`, fmt(r.rssMiB), `${fmt((100 * r.result.rps) / bareRps)}%`, r.result.errors + r.result.non2xx ? `${r.result.errors} errors, ${r.result.non2xx} non-2xx` : ''];
}
