/**
 * The aggregator in a server of two acceptor processes (the real binary): requests landing on either
 * acceptor are proxied (each reads APIServices through its own listers), and each acceptor's
 * discovery carries the remote group, though only the first runs the controllers.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Client } from '../helpers/client.js';
import { ExtensionApiServer, WARDLE_GROUP } from '../helpers/extension-apiserver.js';
import { makeCA } from '../helpers/pki.js';
import { ADMIN_TOKEN, freePort, spawnServer, tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

t.test('with --acceptors=2, every connection reaches the extension and sees its group in aggregated discovery', async (t) => {
  const dir = tempDir('svc-agg-acc-');
  const certs = join(dir, 'certs');
  mkdirSync(certs);
  const proxyCA = makeCA('front-proxy-ca');
  const client = proxyCA.issue({ cn: 'aggregator', client: true });
  const extCA = makeCA('wardle-ca');
  const ext = new ExtensionApiServer({ serving: extCA.issue({ cn: 'api.wardle.svc', hosts: ['api.wardle.svc'], server: true }), proxyCA: proxyCA.cert, allowedNames: ['aggregator'] });
  await ext.start();
  const file = (n: string, text: string) => (writeFileSync(join(certs, n), text), join(certs, n));
  const srv = await spawnServer(dir, await freePort(), [
    '--acceptors=2',
    `--proxy-client-cert-file=${file('p.crt', client.cert)}`,
    `--proxy-client-key-file=${file('p.key', client.key)}`,
    `--requestheader-client-ca-file=${file('ca.crt', proxyCA.cert)}`,
    '--requestheader-allowed-names=aggregator',
    '--enable-aggregator-routing=true',
  ]);
  t.teardown(async () => {
    await srv.kill();
    await ext.stop();
  });
  const admin = srv.admin;
  await admin.post('/api/v1/namespaces', { metadata: { name: 'wardle' } });
  await admin.post('/api/v1/namespaces/wardle/endpoints', { metadata: { name: 'api', namespace: 'wardle' }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ port: ext.port }] }] });
  t.equal((await admin.post('/apis/apiregistration.svc.io/v1/apiservices', { metadata: { name: 'v1alpha1.wardle.example.com' }, spec: { group: WARDLE_GROUP, version: 'v1alpha1', service: { namespace: 'wardle', name: 'api', port: ext.port }, caBundle: Buffer.from(extCA.cert).toString('base64'), groupPriorityMinimum: 1000, versionPriority: 15 } })).status, 201);
  // one connection per client: the primary hands connections to the acceptors in turn
  const clients = [0, 1, 2, 3].map(() => new Client({ url: srv.url, ca: srv.ca, token: ADMIN_TOKEN, maxSockets: 1 }));
  t.teardown(() => clients.forEach((c) => c.close()));
  for (const [i, c] of clients.entries()) {
    t.ok(await waitFor(async () => (await c.get('/apis/wardle.example.com/v1alpha1/namespaces/wardle/flunders')).status === 200, 30_000), `connection ${i} is proxied`);
    t.ok(
      await waitFor(async () => {
        const agg = await c.get('/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
        return agg.json?.items?.some((x: { metadata: { name: string }; versions: { freshness: string }[] }) => x.metadata.name === WARDLE_GROUP && x.versions[0]?.freshness === 'Current');
      }, 30_000),
      `connection ${i}'s acceptor lists the remote group`,
    );
  }
});
