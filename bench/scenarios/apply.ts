/**
 * Writes of one ~5 KB object, each request changing one value so every request is a real write:
 * server-side apply by three managers in turn (each owns a disjoint key and shares the rest),
 * strategic merge patch, and PUT of the whole object as the baseline (target: apply >= 40% of PUT).
 */
import { load, peakRssMiB, SetupClient, startApiServer, TOKEN } from '../lib.js';
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

const auth = { authorization: `Bearer ${TOKEN}` };

/** Gives each autocannon connection its own object (index kept in the connection's context). */
function perConnection(counter: { next: number }): never {
  return ((req: { path?: string; body?: string | Buffer }, context: Record<string, unknown>) => {
    if (context.idx === undefined) context.idx = counter.next++ % CONNECTIONS;
    const i = context.idx as number;
    return { ...req, path: (req.path ?? '').replace('five-kb-0', nameOf(i)), body: typeof req.body === 'string' ? req.body.replace('"five-kb-0"', `"${nameOf(i)}"`) : req.body };
  }) as never;
}

async function withObject<T>(mode: { name: string; flags: string[] }, fn: (url: string, ca: string) => Promise<T>): Promise<{ r: T; rss: number }> {
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

export async function applyThreeManagers(mode: { name: string; flags: string[] }, duration: number): Promise<Row> {
  const counter = { next: 0 };
  const { r, rss } = await withObject(mode, (url, ca) =>
    load({
      url,
      duration,
      connections: CONNECTIONS,
      tlsOptions: { ca },
      idReplacement: true,
      requests: ['alice', 'bob', 'carol'].map((m) => ({
        method: 'PATCH' as never,
        setupRequest: perConnection(counter),
        path: `${pathOf(0)}?fieldManager=${m}&force=true`,
        headers: { ...auth, 'content-type': 'application/apply-patch+yaml' },
        body: JSON.stringify(fiveKbObject({ [`owned-by-${m}`]: '[<id>]' })),
      })),
    }),
  );
  return { scenario: 'APPLY 5 KB, 3 managers in turn', mode: mode.name, result: r, rssMiB: rss };
}

export async function strategicPatch(mode: { name: string; flags: string[] }, duration: number): Promise<Row> {
  const counter = { next: 0 };
  const { r, rss } = await withObject(mode, (url, ca) =>
    load({
      url,
      duration,
      connections: CONNECTIONS,
      tlsOptions: { ca },
      idReplacement: true,
      requests: [
        {
          method: 'PATCH',
          path: pathOf(0),
          setupRequest: perConnection(counter),
          headers: { ...auth, 'content-type': 'application/strategic-merge-patch+json' },
          body: JSON.stringify({ data: { 'key-07': '[<id>]', 'key-08': 'patched-[<id>]' } }),
        },
      ],
    }),
  );
  return { scenario: 'STRATEGIC MERGE PATCH 5 KB', mode: mode.name, result: r, rssMiB: rss };
}

export async function putWhole(mode: { name: string; flags: string[] }, duration: number): Promise<Row> {
  const counter = { next: 0 };
  const { r, rss } = await withObject(mode, (url, ca) =>
    load({
      url,
      duration,
      connections: CONNECTIONS,
      tlsOptions: { ca },
      idReplacement: true,
      requests: [
        {
          method: 'PUT',
          path: pathOf(0),
          setupRequest: perConnection(counter),
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify(fiveKbObject({ 'key-07': '[<id>]' })),
        },
      ],
    }),
  );
  return { scenario: 'PUT 5 KB (baseline for apply)', mode: mode.name, result: r, rssMiB: rss };
}
