/**
 * Large lists: 10,000 ConfigMaps listed whole and in chunks of 500 (every page followed to the end),
 * timing each full listing and recording peak RSS before and after, to show that a list is streamed
 * (the peak grows by a small multiple of the response size at most).
 */
import { Agent, request } from 'node:https';
import { AUTH, type Mode, peakRssMiB, rssMiB, SetupClient, startApiServer } from '../lib.js';

export interface LargeListResult {
  mode: string;
  objects: number;
  responseMiB: number;
  unchunkedMs: number;
  chunkedMs: number;
  pages: number;
  rssBeforeMiB: number;
  peakAfterUnchunkedMiB: number;
  peakAfterChunkedMiB: number;
}

function get(url: string, ca: string, agent: Agent): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: AUTH, agent, ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

export async function largeList(mode: Mode, objects = 10_000, repeats = 5): Promise<LargeListResult> {
  const s = await startApiServer(mode.flags);
  const pid = s.proc.pid!;
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'big' } });
    await c.many(objects, 64, (i) => ['POST', '/api/v1/namespaces/big/configmaps', { metadata: { name: `cm-${String(i).padStart(5, '0')}`, labels: { app: 'big', shard: String(i % 10) } }, data: { key: `value-${i}`, payload: 'p'.repeat(200) } }]);
    c.close();
    const agent = new Agent({ keepAlive: true, ca: s.ca });
    const base = `${s.url}/api/v1/namespaces/big/configmaps`;
    await get(base, s.ca, agent); // warm the encodings once
    const rssBefore = rssMiB(pid);
    let size = 0;
    let t = performance.now();
    for (let i = 0; i < repeats; i++) {
      const r = await get(base, s.ca, agent);
      if (r.status !== 200) throw new Error(`list failed: ${r.status}`);
      size = r.body.length;
    }
    const unchunkedMs = (performance.now() - t) / repeats;
    const peakAfterUnchunked = peakRssMiB(pid);
    let pages = 0;
    t = performance.now();
    for (let i = 0; i < repeats; i++) {
      let cont = '';
      pages = 0;
      do {
        const r = await get(`${base}?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, s.ca, agent);
        if (r.status !== 200) throw new Error(`page failed: ${r.status} ${r.body.toString()}`);
        cont = (JSON.parse(r.body.toString()) as { metadata: { continue?: string } }).metadata.continue ?? '';
        pages++;
      } while (cont);
    }
    const chunkedMs = (performance.now() - t) / repeats;
    agent.destroy();
    return {
      mode: mode.name,
      objects,
      responseMiB: size / 1024 / 1024,
      unchunkedMs,
      chunkedMs,
      pages,
      rssBeforeMiB: rssBefore,
      peakAfterUnchunkedMiB: peakAfterUnchunked,
      peakAfterChunkedMiB: peakRssMiB(pid),
    };
  } finally {
    await s.stop();
  }
}
