/**
 * The cost of the upstream group alias: GET one CSIDriver and LIST 1,000 CSIDrivers under
 * storage.k8s.io beside the same under storage.svc.io, on one server, canonical and alias loads
 * alternating (four short rounds each) so drift hits both alike; the alias's share is the median of
 * each round's ratio.
 */
import { AUTH as auth, type LoadResult, load, type Mode, SetupClient, startApiServer } from '../lib.js';

export interface AliasRow {
  scenario: string;
  mode: string;
  canonical: LoadResult;
  alias: LoadResult;
  /** Alias req/s as a share of canonical, in percent: the median of the rounds' ratios. */
  aliasShare: number;
}

const median = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};

const mean = (rs: LoadResult[]): LoadResult => ({
  rps: rs.reduce((a, r) => a + r.rps, 0) / rs.length,
  p50: rs.reduce((a, r) => a + r.p50, 0) / rs.length,
  p99: rs.reduce((a, r) => a + r.p99, 0) / rs.length,
  errors: rs.reduce((a, r) => a + r.errors, 0),
  non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
});

async function alternate(base: string, path: (group: string) => string, o: { ca: string; duration: number; connections?: number }): Promise<{ canonical: LoadResult; alias: LoadResult; aliasShare: number }> {
  const canonical: LoadResult[] = [];
  const alias: LoadResult[] = [];
  for (let round = 0; round < 4; round++) {
    for (const [group, into] of [['storage.svc.io', canonical], ['storage.k8s.io', alias]] as const) {
      into.push(await load({ url: `${base}${path(group)}`, headers: auth, duration: Math.max(2, Math.round(o.duration / 2)), connections: o.connections ?? 32, tlsOptions: { ca: o.ca } }));
    }
  }
  return { canonical: mean(canonical), alias: mean(alias), aliasShare: median(alias.map((a, i) => (100 * a.rps) / canonical[i]!.rps)) };
}

export async function aliasGetAndList(mode: Mode, duration: number): Promise<AliasRow[]> {
  const s = await startApiServer(mode.flags);
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.many(1000, 32, (i) => ['POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: `d${i}.csi.example.com`, labels: { app: 'bench' } }, spec: { attachRequired: i % 2 === 0 } }]);
    c.close();
    const get = await alternate(s.url, (g) => `/apis/${g}/v1/csidrivers/d1.csi.example.com`, { ca: s.ca, duration });
    const list = await alternate(s.url, (g) => `/apis/${g}/v1/csidrivers`, { ca: s.ca, duration, connections: 8 });
    return [
      { scenario: 'GET one CSIDriver', mode: mode.name, ...get },
      { scenario: 'LIST 1,000 CSIDrivers', mode: mode.name, ...list },
    ];
  } finally {
    await s.stop();
  }
}
