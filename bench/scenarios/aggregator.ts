/**
 * The aggregator's cost: GET of a fixed 1 KB object from a loopback extension API server (the test
 * helper's, over TLS with its client-certificate check), sent through the aggregating server (token
 * authentication, RBAC, proxy with identity headers and the proxy client certificate) and sent to the
 * extension directly with the same client certificate, in the same run, alternating over three rounds (the ratio is the median of the rounds' ratios).
 * Target: through >= 60% of direct.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExtensionApiServer } from '../../test/helpers/extension-apiserver.js';
import { makeCA } from '../../test/helpers/pki.js';
import { AUTH as auth, cpuSeconds, type LoadResult, load, median, type Mode, SetupClient, sleep, startApiServer, WARMUP_SECONDS } from '../lib.js';

export interface AggregatorRow {
  mode: string;
  direct: LoadResult;
  through: LoadResult;
  /** The same server's own GET of a ConfigMap of about the same size: what it costs to serve anything. */
  local: LoadResult;
  ratio: number;
  /** The server's CPU per proxied request and per own GET, in microseconds. */
  throughCpuUs: number;
  localCpuUs: number;
}

export async function aggregatorCost(m: Mode, duration: number): Promise<AggregatorRow> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-agg-'));
  const proxyCA = makeCA('bench-proxy-ca');
  const client = proxyCA.issue({ cn: 'aggregator', client: true });
  const extCA = makeCA('bench-wardle-ca');
  const serving = extCA.issue({ cn: 'api.wardle.svc', hosts: ['api.wardle.svc', '127.0.0.1'], server: true });
  const file = (n: string, text: string) => (writeFileSync(join(dir, n), text), join(dir, n));
  const ext = new ExtensionApiServer({ serving, proxyCA: proxyCA.cert, allowedNames: ['aggregator'] });
  await ext.start();
  const s = await startApiServer([
    ...m.flags,
    `--proxy-client-cert-file=${file('p.crt', client.cert)}`,
    `--proxy-client-key-file=${file('p.key', client.key)}`,
    `--requestheader-client-ca-file=${file('ca.crt', proxyCA.cert)}`,
    '--enable-aggregator-routing=true',
  ]);
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'wardle' } });
    await c.send('POST', '/api/v1/namespaces/wardle/endpoints', { metadata: { name: 'api', namespace: 'wardle' }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ port: ext.port }] }] });
    await c.send('POST', '/apis/apiregistration.svc.io/v1/apiservices', {
      metadata: { name: 'v1alpha1.wardle.example.com' },
      spec: { group: 'wardle.example.com', version: 'v1alpha1', service: { namespace: 'wardle', name: 'api', port: ext.port }, caBundle: Buffer.from(extCA.cert).toString('base64'), groupPriorityMinimum: 1000, versionPriority: 15 },
    });
    const path = '/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/fixed';
    for (let i = 0; i < 100; i++) {
      if ((await c.send('GET', path)).status === 200) break;
      await sleep(200);
    }
    await c.send('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'bench-1k' }, data: { reference: 'x'.repeat(900) } });
    c.close();
    const pid = s.proc.pid!;
    const perRequestUs = async (run: () => Promise<LoadResult>): Promise<{ r: LoadResult; us: number }> => {
      const before = cpuSeconds(pid);
      const r = await run();
      return { r, us: ((cpuSeconds(pid) - before) * 1e6) / Math.max(1, r.rps * (duration + WARMUP_SECONDS)) };
    };
    const local = await perRequestUs(() => load({ url: `${s.url}/api/v1/namespaces/default/configmaps/bench-1k`, headers: auth, duration, tlsOptions: { ca: s.ca } }));
    // three rounds, the two loads alternating, so the shared machine's drift hits both alike
    const directs: LoadResult[] = [];
    const throughs: LoadResult[] = [];
    const cpu: number[] = [];
    for (let round = 0; round < 3; round++) {
      const t = await perRequestUs(() => load({ url: `${s.url}${path}`, headers: auth, duration, tlsOptions: { ca: s.ca } }));
      throughs.push(t.r);
      cpu.push(t.us);
      directs.push(await load({ url: `https://127.0.0.1:${ext.port}${path}`, duration, tlsOptions: { ca: extCA.cert, cert: client.cert, key: client.key } }));
    }
    const ratio = median(throughs.map((t, i) => (100 * t.rps) / Math.max(1, directs[i]!.rps)));
    const mid = (rs: LoadResult[]) => [...rs].sort((a, b) => a.rps - b.rps)[1]!;
    return { mode: m.name, direct: mid(directs), through: mid(throughs), local: local.r, ratio, throughCpuUs: median(cpu), localCpuUs: local.us };
  } finally {
    await s.stop();
    await ext.stop();
  }
}
