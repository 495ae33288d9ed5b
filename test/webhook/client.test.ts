/**
 * The one webhook client, against real HTTPS servers on loopback (the shared test CA): credentials
 * reach the remote, a call has one deadline, an answer has a size cap, a non-2xx answer is a status
 * error, transient failures are retried with backoff within the deadline, a clientConfig's service
 * reference becomes upstream's DNS name, and every call is counted by host, method and code.
 */
import t, { type Test } from 'tap';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { makeCA, sharedLoopbackPki } from '../helpers/pki.js';
import { describeCall, targetOfClientConfig, WebhookClient, WebhookError, WebhookStatusError, WebhookTimeoutError, withBackoff } from '../../core/webhook/client.js';
import { webhookCallObservers, webhookCalls } from '../../core/webhook/stats.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

async function remote(t: Test, handler: Handler): Promise<URL> {
  const { ca, serving } = sharedLoopbackPki();
  const sockets = new Set<Socket>();
  const server: Server = createServer({ cert: serving.cert, key: serving.key, ca: ca.cert, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handler(req, body, res));
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return new URL(`https://127.0.0.1:${(server.address() as { port: number }).port}/hook`);
}

const ca = () => sharedLoopbackPki().ca.cert;

t.test('a POST carries the JSON body, the bearer token and the client certificate; a 2xx answer is its body', async (t) => {
  const seen: { auth?: string; cn?: string; body?: string; type?: string }[] = [];
  const url = await remote(t, (req, body, res) => {
    seen.push({ auth: req.headers.authorization, cn: String((req.socket as TLSSocket).getPeerCertificate().subject?.CN), body, type: String(req.headers['content-type']) });
    res.end('{"ok":true}');
  });
  const cert = sharedLoopbackPki().ca.issue({ cn: 'svc-apiserver', client: true });
  const c = new WebhookClient({ url, ca: ca(), token: 'tok', cert: cert.cert, key: cert.key });
  t.teardown(() => c.close());
  t.equal((await c.post({ a: 1 }, 5000)).toString(), '{"ok":true}');
  t.same(seen, [{ auth: 'Bearer tok', cn: 'svc-apiserver', body: '{"a":1}', type: 'application/json' }]);
});

t.test('a remote certificate that does not chain to the CA bundle fails the call', async (t) => {
  const url = await remote(t, (_req, _body, res) => res.end('{}'));
  const c = new WebhookClient({ url, ca: makeCA('another-ca').cert });
  t.teardown(() => c.close());
  await t.rejects(c.post({}, 5000), /self.signed|unable to verify|certificate/i, 'another CA does not vouch for the remote');
  const other = new WebhookClient({ url });
  t.teardown(() => other.close());
  await t.rejects(other.post({}, 5000), /self.signed|unable to verify|certificate/i, 'the host roots do not trust the test CA');
});

t.test('failures: a non-2xx answer, a hang past the deadline, an answer over the cap', async (t) => {
  const url = await remote(t, (req, _body, res) => {
    if (req.url === '/hook?status') {
      res.writeHead(403, { 'retry-after': '1' }).end('forbidden here');
    } else if (req.url === '/hook?big') res.end('x'.repeat(5000));
    // anything else hangs
  });
  const c = new WebhookClient({ url, ca: ca() }, 1000);
  t.teardown(() => c.close());
  const status = await c.request('POST', new URL('?status', url), Buffer.from('{}'), 5000);
  t.equal(status.status, 403, 'request() answers any status');
  const statusClient = new WebhookClient({ url: new URL('?status', url), ca: ca() });
  t.teardown(() => statusClient.close());
  const err = await statusClient.post({}, 5000).catch((e: unknown) => e);
  t.ok(err instanceof WebhookStatusError, 'post() throws a status error');
  t.equal((err as WebhookStatusError).code, 403);
  t.equal((err as WebhookStatusError).retryAfter, true);
  t.equal((err as Error).message, 'the server responded with status 403: forbidden here');
  const t0 = Date.now();
  const hung = await c.post({}, 300).catch((e: unknown) => e);
  t.ok(hung instanceof WebhookTimeoutError, 'a hang ends at the deadline');
  t.ok(Date.now() - t0 < 3000, 'and not much later');
  t.equal(describeCall('POST', url, hung), `Post "${url.href}": context deadline exceeded (timeout 300ms)`, 'worded as Go words it');
  const big = await c.request('GET', new URL('?big', url), undefined, 5000).catch((e: unknown) => e);
  t.ok(big instanceof WebhookError, 'an answer over the cap fails');
  t.match((big as Error).message, /answer larger than 1000 bytes/);
});

t.test('withBackoff retries what is transient, within the deadline, and gives up on the rest', async (t) => {
  let calls = 0;
  const url = await remote(t, (_req, _body, res) => {
    calls++;
    if (calls < 3) res.writeHead(503).end();
    else res.end('{"fine":1}');
  });
  const c = new WebhookClient({ url, ca: ca() });
  t.teardown(() => c.close());
  const transient = (e: unknown) => e instanceof WebhookStatusError && e.code >= 500;
  const backoff = { initialMs: 10, factor: 2, attempts: 5 };
  t.equal((await withBackoff((left) => c.post({}, left), { backoff, retriable: transient, deadline: Date.now() + 5000 })).toString(), '{"fine":1}');
  t.equal(calls, 3, 'two 503s, then the answer');
  calls = 0;
  await t.rejects(withBackoff((left) => c.post({}, left), { backoff: { ...backoff, attempts: 2 }, retriable: transient }), { code: 503 }, 'attempts are bounded');
  t.equal(calls, 2);
  calls = 0;
  await t.rejects(withBackoff((left) => c.post({}, left), { backoff: { initialMs: 10_000, factor: 1, attempts: 5 }, retriable: transient, deadline: Date.now() + 1000 }), { code: 503 }, 'no attempt is started that the deadline would cut');
  t.equal(calls, 1);
  calls = 0;
  await t.rejects(withBackoff((left) => c.post({}, left), { backoff, retriable: () => false }), { code: 503 });
  t.equal(calls, 1, 'what is not transient is not retried');
});

t.test('a client made https-only refuses a plain-http URL before connecting', async (t) => {
  const c = new WebhookClient({ httpsOnly: true });
  t.teardown(() => c.close());
  await t.rejects(c.get('http://127.0.0.1:1/keys', 1000), /only https URLs are allowed/);
});

t.test('a clientConfig names its target: a URL, or a service by its cluster DNS name, port 443 by default', async (t) => {
  const table: Array<[string, Parameters<typeof targetOfClientConfig>[0], string]> = [
    ['url', { url: 'https://hooks.example:8443/validate' }, 'https://hooks.example:8443/validate'],
    ['service with port and path', { service: { namespace: 'ns', name: 'hook', port: 8443, path: '/v' } }, 'https://hook.ns.svc:8443/v'],
    ['service, default port', { service: { namespace: 'ns', name: 'hook' } }, 'https://hook.ns.svc/'],
  ];
  for (const [name, cc, want] of table) t.equal(targetOfClientConfig(cc).url.href, want, name);
  t.equal(targetOfClientConfig({ url: 'https://h/', caBundle: Buffer.from('PEM').toString('base64') }).ca, 'PEM', 'the CA bundle is decoded');
  t.throws(() => targetOfClientConfig({}), /no webhook client configuration/);
});

t.test('every call is counted by code, host and method, and its duration observed', async (t) => {
  const url = await remote(t, (_req, _body, res) => res.writeHead(202).end('{}'));
  const c = new WebhookClient({ url, ca: ca() });
  t.teardown(() => c.close());
  const count = () => [...webhookCalls()].find(([code, host, method]) => code === '202' && host === url.host && method === 'POST')?.[3] ?? 0;
  const before = count();
  const observed: [string, string, number][] = [];
  const observe = (host: string, method: string, seconds: number) => observed.push([host, method, seconds]);
  webhookCallObservers.add(observe);
  t.teardown(() => webhookCallObservers.delete(observe));
  await c.post({}, 5000);
  await c.post({}, 5000);
  t.equal(count() - before, 2);
  t.same(observed.map(([host, method]) => [host, method]), [[url.host, 'POST'], [url.host, 'POST']], 'each call\'s duration is observed by host and method');
  t.ok(observed.every(([, , s]) => s > 0 && s < 5), 'in seconds');
});
