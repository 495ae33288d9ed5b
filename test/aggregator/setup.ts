/**
 * One aggregating server and one extension API server for the aggregation tests: the server with a
 * proxy client certificate (from its own CA, trusted as the request-header CA), aggregator routing
 * through Endpoints and a short availability recheck; the extension serving wardle.example.com on
 * loopback with a certificate for api.wardle.svc; and the objects that register it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExtensionApiServer, WARDLE_GROUP, WARDLE_VERSION } from '../helpers/extension-apiserver.js';
import { type CA, makeCA } from '../helpers/pki.js';
import { startServer, tempDir, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

export const APISERVICES = '/apis/apiregistration.svc.io/v1/apiservices';
export const WARDLE = `v1alpha1.${WARDLE_GROUP}`;
export const FLUNDERS = `/apis/${WARDLE_GROUP}/${WARDLE_VERSION}/namespaces/wardle/flunders`;

export interface Aggregated {
  s: TestServer;
  ext: ExtensionApiServer;
  extCA: CA;
  proxyCA: CA;
  dir: string;
  stop(): Promise<void>;
}

export async function startAggregated(extraFlags: string[] = []): Promise<Aggregated> {
  const dir = tempDir('svc-agg-');
  const proxyCA = makeCA('front-proxy-ca');
  const proxyClient = proxyCA.issue({ cn: 'aggregator', client: true });
  const extCA = makeCA('wardle-ca');
  const serving = extCA.issue({ cn: 'api.wardle.svc', hosts: ['api.wardle.svc'], server: true });
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const s = await startServer(
    [
      `--proxy-client-cert-file=${file('proxy.crt', proxyClient.cert)}`,
      `--proxy-client-key-file=${file('proxy.key', proxyClient.key)}`,
      `--requestheader-client-ca-file=${file('proxy-ca.crt', proxyCA.cert)}`,
      '--requestheader-allowed-names=aggregator',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      '--enable-aggregator-routing=true',
      ...extraFlags,
    ],
    undefined,
    { aggregatorRecheckMs: 300 },
  );
  const ext = new ExtensionApiServer({ serving, proxyCA: proxyCA.cert, allowedNames: ['aggregator'] });
  await ext.start();
  return {
    s,
    ext,
    extCA,
    proxyCA,
    dir,
    async stop() {
      await ext.stop();
      await s.stop();
    },
  };
}

/** Namespace wardle, Endpoints wardle/api at the extension's port, and the APIService naming it. */
export async function registerWardle(a: Aggregated, spec: Record<string, unknown> = {}): Promise<void> {
  await a.s.admin.post('/api/v1/namespaces', { metadata: { name: 'wardle' } });
  const ep = { metadata: { name: 'api', namespace: 'wardle' }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ name: 'https', port: a.ext.port }] }] };
  const r = await a.s.admin.post('/api/v1/namespaces/wardle/endpoints', ep);
  if (r.status !== 201 && r.status !== 409) throw new Error(`endpoints: ${r.status} ${r.text}`);
  const svc = {
    apiVersion: 'apiregistration.svc.io/v1',
    kind: 'APIService',
    metadata: { name: WARDLE },
    spec: { group: WARDLE_GROUP, version: WARDLE_VERSION, service: { namespace: 'wardle', name: 'api', port: a.ext.port }, caBundle: Buffer.from(a.extCA.cert).toString('base64'), groupPriorityMinimum: 1000, versionPriority: 15, ...spec },
  };
  const c = await a.s.admin.post(APISERVICES, svc);
  if (c.status !== 201) throw new Error(`apiservice: ${c.status} ${c.text}`);
}

/** The Available condition of an APIService now. */
/** A server with the wardle extension registered and Available: what most files here start from. */
export async function startWithWardle(): Promise<Aggregated> {
  const a = await startAggregated();
  await registerWardle(a);
  await waitAvailable(a, WARDLE, 'True', 'Passed');
  return a;
}

export async function available(a: Aggregated, name: string): Promise<{ status?: string; reason?: string; message?: string } | undefined> {
  const r = await a.s.admin.get(`${APISERVICES}/${name}`);
  return r.json?.status?.conditions?.find((c: { type: string }) => c.type === 'Available');
}

export async function waitAvailable(a: Aggregated, name: string, status: string, reason?: string, ms = 15_000): Promise<boolean> {
  return waitFor(async () => {
    const c = await available(a, name);
    return c?.status === status && (reason === undefined || c.reason === reason);
  }, ms);
}
