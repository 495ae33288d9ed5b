/**
 * Custom resource definitions for tests: a definition builder (the widgets.example.com kind unless
 * told otherwise) and waits for a definition to be Established and its resource served.
 */
import type { Client } from './client.js';

export const CRDS = '/apis/apiextensions.svc.io/v1/customresourcedefinitions';

export interface CrdOptions {
  group?: string;
  plural?: string;
  kind?: string;
  scope?: 'Namespaced' | 'Cluster';
  shortNames?: string[];
  categories?: string[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  versions?: any[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  schema?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  conversion?: any;
}

/** The widget schema most tests share: spec with size (1..10), color, tags, and a free status. */
export const widgetSchema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        size: { type: 'integer', minimum: 1, maximum: 10 },
        color: { type: 'string', enum: ['red', 'green', 'blue'] },
        replicas: { type: 'integer', default: 1 },
        tags: { type: 'array', items: { type: 'string' } },
      },
    },
    status: { type: 'object', properties: { ready: { type: 'boolean' }, replicas: { type: 'integer' } } },
  },
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function crd(o: CrdOptions = {}): any {
  const group = o.group ?? 'example.com';
  const plural = o.plural ?? 'widgets';
  const kind = o.kind ?? 'Widget';
  return {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { plural, singular: kind.toLowerCase(), kind, ...(o.shortNames ? { shortNames: o.shortNames } : {}), ...(o.categories ? { categories: o.categories } : {}) },
      scope: o.scope ?? 'Namespaced',
      versions: o.versions ?? [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: o.schema ?? widgetSchema } }],
      ...(o.conversion ? { conversion: o.conversion } : {}),
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits (up to `ms`) for the definition to be Established; returns it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function waitEstablished(c: Client, name: string, ms = 10_000): Promise<any> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await c.get(`${CRDS}/${name}`);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    if (r.status === 200 && r.json.status?.conditions?.some((x: any) => x.type === 'Established' && x.status === 'True')) return r.json;
    if (Date.now() > until) throw new Error(`${name} not Established: ${r.text}`);
    await sleep(20);
  }
}

/** Creates the definition and waits until it is Established. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function createCrd(c: Client, def: any): Promise<any> {
  const r = await c.post(CRDS, def);
  if (r.status !== 201) throw new Error(`creating ${def.metadata.name}: ${r.status} ${r.text}`);
  return waitEstablished(c, def.metadata.name);
}

/** Waits until `path` answers with something other than `status`. */
export async function waitGone(c: Client, path: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while ((await c.get(path)).status !== 404) {
    if (Date.now() > until) throw new Error(`${path} still there`);
    await sleep(20);
  }
}
