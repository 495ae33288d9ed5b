/**
 * Custom resources beside a built-in kind, on one server: CREATE and GET of a custom resource whose
 * schema has 20 fields and 3 CEL rules, and of a ConfigMap of about the same size, rounds alternating;
 * plus the time from creating the definition to Established and to its resource answering. Target:
 * the custom resource at least 70% of the ConfigMap figures.
 */
import { AUTH, load, type LoadResult, type Mode, SetupClient, startApiServer } from '../lib.js';

export interface CrdBenchResult {
  mode: string;
  rows: { scenario: string; result: LoadResult; ofConfigMap: number }[];
  establishedMs: number;
  servedMs: number;
}

const FIELDS = Array.from({ length: 20 }, (_, i) => `field${i}`);

const definition = {
  apiVersion: 'apiextensions.svc.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'benches.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'benches', singular: 'bench', kind: 'Bench' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: Object.fromEntries(FIELDS.map((f, i) => [f, i % 2 ? { type: 'integer', minimum: 0 } : { type: 'string', maxLength: 64 }])),
                'x-kubernetes-validations': [
                  { rule: 'self.field1 <= self.field3', message: 'field1 may not pass field3' },
                  { rule: "self.field0.startsWith('v')", message: 'field0 starts with v' },
                  { rule: 'size(self.field2) < 60', message: 'field2 is short' },
                ],
              },
            },
          },
        },
      },
    ],
  },
};

const benchSpec = Object.fromEntries(FIELDS.map((f, i) => [f, i % 2 ? i : `value-${i}`]));
benchSpec.field0 = 'v-zero';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROUNDS = 2;

export async function customResources(mode: Mode, duration: number): Promise<CrdBenchResult> {
  const s = await startApiServer(mode.flags);
  try {
    const c = new SetupClient(s.url, s.ca);
    const t0 = performance.now();
    const created = await c.send('POST', '/apis/apiextensions.svc.io/v1/customresourcedefinitions', definition);
    if (created.status !== 201) throw new Error(created.text);
    let establishedMs = 0;
    while (!establishedMs) {
      const r = await c.send('GET', '/apis/apiextensions.svc.io/v1/customresourcedefinitions/benches.example.com');
      if ((JSON.parse(r.text) as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True')) establishedMs = performance.now() - t0;
      else await sleep(2);
    }
    let servedMs = 0;
    while (!servedMs) {
      if ((await c.send('GET', '/apis/example.com/v1/namespaces/default/benches')).status === 200) servedMs = performance.now() - t0;
      else await sleep(2);
    }
    await c.send('POST', '/apis/example.com/v1/namespaces/default/benches', { apiVersion: 'example.com/v1', kind: 'Bench', metadata: { name: 'one' }, spec: benchSpec });
    await c.send('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'one' }, data: Object.fromEntries(FIELDS.map((f, i) => [f, String(benchSpec[f] ?? i)])) });
    c.close();
    const crBody = JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Bench', metadata: { generateName: 'b-' }, spec: benchSpec });
    const cmBody = JSON.stringify({ metadata: { generateName: 'c-' }, data: Object.fromEntries(FIELDS.map((f) => [f, String(benchSpec[f])])) });
    const cases: [string, Parameters<typeof load>[0]][] = [
      ['CREATE ConfigMap (20 keys)', { url: `${s.url}/api/v1/namespaces/default/configmaps`, method: 'POST', body: cmBody, headers: { ...AUTH, 'content-type': 'application/json' }, connections: 64 }],
      ['CREATE custom resource (20 fields, 3 CEL rules)', { url: `${s.url}/apis/example.com/v1/namespaces/default/benches`, method: 'POST', body: crBody, headers: { ...AUTH, 'content-type': 'application/json' }, connections: 64 }],
      ['GET ConfigMap', { url: `${s.url}/api/v1/namespaces/default/configmaps/one`, headers: AUTH }],
      ['GET custom resource', { url: `${s.url}/apis/example.com/v1/namespaces/default/benches/one`, headers: AUTH }],
    ];
    const runs = new Map<string, LoadResult[]>(cases.map(([n]) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, opts] of cases) runs.get(name)!.push(await load({ ...opts, duration, tlsOptions: { ca: s.ca } }));
    }
    const mean = (xs: LoadResult[], f: (r: LoadResult) => number): number => xs.reduce((a, r) => a + f(r), 0) / xs.length;
    const results = cases.map(([name]) => {
      const xs = runs.get(name)!;
      return { scenario: name, result: { rps: mean(xs, (r) => r.rps), p50: mean(xs, (r) => r.p50), p99: mean(xs, (r) => r.p99), errors: mean(xs, (r) => r.errors), non2xx: mean(xs, (r) => r.non2xx) } };
    });
    const rows = results.map((r, i) => ({ ...r, ofConfigMap: (100 * r.result.rps) / results[i - (i % 2)]!.result.rps }));
    return { mode: mode.name, rows, establishedMs, servedMs };
  } finally {
    await s.stop();
  }
}
