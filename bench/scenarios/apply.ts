/**
 * Writes of one ~5 KB object, each request changing one value so every request is a real write:
 * server-side apply by three managers in turn (each owns a disjoint key and shares the rest),
 * strategic merge patch, and PUT of the whole object as the baseline (target: apply >= 40% of PUT).
 */
import { AUTH as auth, load, type Mode, peakRssMiB, SetupClient, startApiServer } from '../lib.js';
import type { Row } from './http.js';

const CONNECTIONS = 16;
const nameOf = (i: number): string => `five-kb-${i}`;
const pathOf = (i: number): string => `/api/v1/namespaces/default/configmaps/${nameOf(i)}`;

/** A ConfigMap of about 5 KB: 40 data keys, labels and annotations. */
export function fiveKbObject(extra: Record<string, string> = {}, name = nameOf(0)): Record<string, unknown> {
  const data: Record<string, string> = {};
  for (let i = 0; i < 40; i++) data[`key-${String(i).padStart(2, '0')}`] = `value-${i}-${'v'.repeat(90)}`;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default', labels: { app: 'bench', tier: 'config' }, annotations: { 'bench.svc.io/purpose': 'apply benchmark' } },
    data: { ...data, ...extra },
  };
}

/** Gives each autocannon connection its own object (index kept in the connection's context). */
function perConnection(counter: { next: number }): never {
  return ((req: { path?: string; body?: string | Buffer }, context: Record<string, unknown>) => {
    if (context.idx === undefined) context.idx = counter.next++ % CONNECTIONS;
    const i = context.idx as number;
    return { ...req, path: (req.path ?? '').replace('five-kb-0', nameOf(i)), body: typeof req.body === 'string' ? req.body.replace('"five-kb-0"', `"${nameOf(i)}"`) : req.body };
  }) as never;
}

async function withObject<T>(mode: Mode, fn: (url: string, ca: string) => Promise<T>): Promise<{ r: T; rss: number }> {
  const s = await startApiServer(mode.flags);
  try {
    const c = new SetupClient(s.url, s.ca);
    // one object per connection: the same shape, no contention on one key
    for (let i = 0; i < CONNECTIONS; i++) {
      const r0 = await c.send('POST', '/api/v1/namespaces/default/configmaps', fiveKbObject({}, nameOf(i)));
      if (r0.status !== 201) throw new Error(r0.text);
      // every manager applies once first, so the measured applies are steady-state (shared ownership)
      for (const m of ['alice', 'bob', 'carol']) {
        const r = await c.send('PATCH', `${pathOf(i)}?fieldManager=${m}&force=true`, fiveKbObject({ [`owned-by-${m}`]: '0' }, nameOf(i)), 'application/apply-patch+yaml');
        if (r.status !== 200) throw new Error(`warm-up apply by ${m}: ${r.status} ${r.text}`);
      }
    }
    c.close();
    const r = await fn(s.url, s.ca);
    return { r, rss: peakRssMiB(s.proc.pid!) };
  } finally {
    await s.stop();
  }
}

interface WriteRequest {
  method: 'PUT' | 'PATCH';
  /** Appended to the object's path (e.g. `?fieldManager=alice`). */
  query: string;
  contentType: string;
  body: string;
}

/** Loads a fresh server with `requests` in turn, every connection on its own 5 KB object. */
async function writeLoad(mode: Mode, duration: number, scenario: string, requests: WriteRequest[]): Promise<Row> {
  const counter = { next: 0 };
  const { r, rss } = await withObject(mode, (url, ca) =>
    load({
      url,
      duration,
      connections: CONNECTIONS,
      tlsOptions: { ca },
      idReplacement: true,
      requests: requests.map((q) => ({
        method: q.method as never,
        path: pathOf(0) + q.query,
        setupRequest: perConnection(counter),
        headers: { ...auth, 'content-type': q.contentType },
        body: q.body,
      })),
    }),
  );
  return { scenario, mode: mode.name, result: r, rssMiB: rss };
}

export const applyThreeManagers = (mode: Mode, duration: number): Promise<Row> =>
  writeLoad(
    mode,
    duration,
    'APPLY 5 KB, 3 managers in turn',
    ['alice', 'bob', 'carol'].map((m) => ({
      method: 'PATCH',
      query: `?fieldManager=${m}&force=true`,
      contentType: 'application/apply-patch+yaml',
      body: JSON.stringify(fiveKbObject({ [`owned-by-${m}`]: '[<id>]' })),
    })),
  );

export const strategicPatch = (mode: Mode, duration: number): Promise<Row> =>
  writeLoad(mode, duration, 'STRATEGIC MERGE PATCH 5 KB', [
    {
      method: 'PATCH',
      query: '',
      contentType: 'application/strategic-merge-patch+json',
      body: JSON.stringify({ data: { 'key-07': '[<id>]', 'key-08': 'patched-[<id>]' } }),
    },
  ]);

export const putWhole = (mode: Mode, duration: number): Promise<Row> =>
  writeLoad(mode, duration, 'PUT 5 KB (baseline for apply)', [
    { method: 'PUT', query: '', contentType: 'application/json', body: JSON.stringify(fiveKbObject({ 'key-07': '[<id>]' })) },
  ]);
