/**
 * Backends that fail the aggregator, each answered as upstream and none holding a request or the
 * server: down, slow (the request timeout answers), garbage instead of HTTP, a certificate the
 * caBundle does not trust, a watch closed mid-stream, an APIService taking over a group this server
 * serves, and an APIService pointing back at this server (a loop).
 */
import t from 'tap';
import { makeCA } from '../helpers/pki.js';
import { waitFor } from '../helpers/wait.js';
import { type Aggregated, APISERVICES, available, FLUNDERS, registerWardle, startAggregated, WARDLE, waitAvailable } from './setup.js';

let a: Aggregated;
t.before(async () => {
  a = await startAggregated(['--request-timeout=3s']);
  await registerWardle(a);
  if (!(await waitAvailable(a, WARDLE, 'True', 'Passed'))) throw new Error('setup: wardle not available');
});
t.teardown(() => a?.stop());

const serving = async () => (await a.s.admin.get('/api/v1/namespaces/default')).status === 200;

t.test('a slow backend: the request timeout answers 504, the server keeps serving', async (t) => {
  a.ext.mode = 'slow';
  const started = Date.now();
  const r = await a.s.admin.get(FLUNDERS);
  t.equal(r.status, 504);
  t.equal(r.json?.reason, 'Timeout');
  t.ok(Date.now() - started < 10_000, 'answered near the timeout');
  t.ok(await waitFor(() => a.ext.abandoned.includes(FLUNDERS), 2000), 'the backend request was given up with the client\'s');
  t.ok(await serving());
  // checks run side by side: one stuck on the slow backend holds up no other APIService's
  const other = { apiVersion: 'apiregistration.svc.io/v1', kind: 'APIService', metadata: { name: 'v1.elsewhere.example.com' }, spec: { group: 'elsewhere.example.com', version: 'v1', service: { namespace: 'wardle', name: 'nothing-here' }, insecureSkipTLSVerify: true, groupPriorityMinimum: 100, versionPriority: 10 } };
  t.equal((await a.s.admin.post(APISERVICES, other)).status, 201);
  t.ok(await waitAvailable(a, 'v1.elsewhere.example.com', 'False', 'MissingEndpoints', 3000), 'another APIService is judged meanwhile');
  await a.s.admin.delete(`${APISERVICES}/v1.elsewhere.example.com`);
  a.ext.mode = 'ok';
});

t.test('a backend answering garbage: 503 with the error, then FailedDiscoveryCheck', async (t) => {
  a.ext.mode = 'garbage';
  const r = await a.s.admin.get(FLUNDERS);
  t.ok(r.status === 503, `status ${r.status}`);
  t.match(r.headers['content-type'], /^text\/plain/);
  t.ok(await waitAvailable(a, WARDLE, 'False', 'FailedDiscoveryCheck'));
  t.ok(await serving());
  a.ext.mode = 'ok';
  t.ok(await waitAvailable(a, WARDLE, 'True', 'Passed'));
});

t.test('a watch the backend closes mid-stream ends here too, after the events it sent', async (t) => {
  await a.s.admin.post(FLUNDERS, { apiVersion: 'wardle.example.com/v1alpha1', kind: 'Flunder', metadata: { name: 'cut' } });
  a.ext.mode = 'cut';
  const w = await a.s.admin.stream(`${FLUNDERS}?watch=true`);
  t.equal(w.status, 200);
  const ev = await w.next(5000);
  t.equal(ev?.object?.metadata?.name, 'cut');
  t.equal(await w.next(5000), undefined, 'the stream ends');
  t.ok(w.ended);
  a.ext.mode = 'ok';
  t.ok(await serving());
});

t.test('a backend certificate the caBundle does not trust: FailedDiscoveryCheck, requests 503 service unavailable', async (t) => {
  const other = makeCA('not-wardle-ca');
  const live = (await a.s.admin.get(`${APISERVICES}/${WARDLE}`)).json;
  live.spec.caBundle = Buffer.from(other.cert).toString('base64');
  t.equal((await a.s.admin.put(`${APISERVICES}/${WARDLE}`, live)).status, 200);
  t.ok(await waitAvailable(a, WARDLE, 'False', 'FailedDiscoveryCheck'));
  t.match((await available(a, WARDLE))?.message, /certificate/);
  const r = await a.s.admin.get(FLUNDERS);
  t.equal(r.status, 503);
  t.equal(r.text, 'service unavailable\n');
  const back = (await a.s.admin.get(`${APISERVICES}/${WARDLE}`)).json;
  back.spec.caBundle = Buffer.from(a.extCA.cert).toString('base64');
  t.equal((await a.s.admin.put(`${APISERVICES}/${WARDLE}`, back)).status, 200);
  t.ok(await waitAvailable(a, WARDLE, 'True', 'Passed'));
});

t.test('an APIService taking over a group this server serves: proxied as upstream, its failed check answers 503; made Local again, served here again', async (t) => {
  const name = 'v1.coordination.svc.io';
  const live = (await a.s.admin.get(`${APISERVICES}/${name}`)).json;
  t.equal(live.metadata.labels['kube-aggregator.kubernetes.io/automanaged'], 'onstart');
  live.spec.service = { namespace: 'wardle', name: 'api', port: a.ext.port };
  live.spec.caBundle = Buffer.from(a.extCA.cert).toString('base64');
  t.equal((await a.s.admin.put(`${APISERVICES}/${name}`, live)).status, 200);
  // the extension does not serve coordination.svc.io/v1: its discovery check fails
  t.ok(await waitAvailable(a, name, 'False', 'FailedDiscoveryCheck'));
  t.match((await available(a, name))?.message, /bad status from .*: 404$/);
  t.equal((await a.s.admin.get('/apis/coordination.svc.io/v1/namespaces/default/leases')).status, 503);
  t.ok(await serving());
  const back = (await a.s.admin.get(`${APISERVICES}/${name}`)).json;
  delete back.spec.service;
  delete back.spec.caBundle;
  t.equal((await a.s.admin.put(`${APISERVICES}/${name}`, back)).status, 200);
  t.ok(await waitAvailable(a, name, 'True', 'Local'));
  t.equal((await a.s.admin.get('/apis/coordination.svc.io/v1/namespaces/default/leases')).status, 200);
});

t.test('an APIService pointing back at this server: the loop is cut at once, FailedDiscoveryCheck, requests 503', async (t) => {
  const port = new URL(a.s.url).port;
  await a.s.admin.post('/api/v1/namespaces', { metadata: { name: 'loop' } });
  await a.s.admin.post('/api/v1/namespaces/loop/endpoints', { metadata: { name: 'self', namespace: 'loop' }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ port: Number(port) }] }] });
  const svc = { apiVersion: 'apiregistration.svc.io/v1', kind: 'APIService', metadata: { name: 'v1.loop.example.com' }, spec: { group: 'loop.example.com', version: 'v1', service: { namespace: 'loop', name: 'self', port: Number(port) }, insecureSkipTLSVerify: true, groupPriorityMinimum: 100, versionPriority: 10 } };
  t.equal((await a.s.admin.post(APISERVICES, svc)).status, 201);
  t.ok(await waitAvailable(a, 'v1.loop.example.com', 'False', 'FailedDiscoveryCheck'), JSON.stringify(await available(a, 'v1.loop.example.com')));
  t.match((await available(a, 'v1.loop.example.com'))?.message, /bad status from .*: 503$/);
  const started = Date.now();
  const r = await a.s.admin.get('/apis/loop.example.com/v1/things');
  t.equal(r.status, 503);
  t.ok(Date.now() - started < 5000, 'answered at once');
  t.ok(await serving());
  t.equal((await a.s.admin.delete(`${APISERVICES}/v1.loop.example.com`)).status, 200);
  t.ok(await waitFor(async () => (await a.s.admin.get('/apis/loop.example.com/v1/things')).status === 404));
});
