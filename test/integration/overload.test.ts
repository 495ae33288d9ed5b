import t from 'tap';
import { connect, type TLSSocket } from 'node:tls';
import { ALICE_TOKEN, startServer, type TestServer } from '../helpers/server.js';

/** A raw TLS connection that sends `head` (and `body`) and then does whatever the test says: nothing, usually. */
function rawRequest(s: TestServer, head: string, body = ''): Promise<TLSSocket> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const sock = connect({ host: u.hostname, port: Number(u.port), ca: s.ca, ALPNProtocols: ['http/1.1'] }, () => {
      sock.write(head + body);
      resolve(sock);
    });
    sock.on('error', reject);
  });
}

/** Resolves with what the server sent once it closes the connection (or after `ms`; or, with `answered`, once a status line and headers arrived). */
function untilClosed(sock: TLSSocket, ms: number, answered = false): Promise<{ closed: boolean; data: string }> {
  let data = '';
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ closed: false, data }), ms);
    sock.on('data', (c: Buffer) => {
      data += c.toString('latin1');
      if (answered && /^HTTP\/1\.1 \d{3} [^\r]*\r\n[\s\S]*?\r\n\r\n/.test(data)) {
        clearTimeout(timer);
        resolve({ closed: false, data });
      }
    });
    sock.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, data });
    });
  });
}

const alice = (s: TestServer) => s.admin.with({ token: ALICE_TOKEN });
const cm = (name: string, size = 0) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: size ? { blob: 'x'.repeat(size) } : {} });

t.test('a write that times out while its body is still arriving gives its in-flight slot back', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow', '--enable-priority-and-fairness=false', '--max-mutating-requests-inflight=2', '--request-timeout=1s']);
  t.teardown(() => s.stop());
  const head = (n: number) =>
    `POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ALICE_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"slow-${n}"`;
  const started = Date.now();
  const slow = await Promise.all([rawRequest(s, head(1)), rawRequest(s, head(2))]);
  // the answer, not the connection's end (the server keeps it open): no 10 s wait for a close that does not come
  const ends = slow.map((sock) => untilClosed(sock, 10_000, true));
  await new Promise((r) => setTimeout(r, 200));
  const third = await alice(s).post('/api/v1/namespaces/default/configmaps', cm('third'));
  t.equal(third.status, 429, 'both mutating slots are held by the stalled uploads');
  t.equal(third.text, 'Too many requests, please try again later.\n', "in upstream's words, as plain text (http.Error)");
  t.equal(third.headers['retry-after'], '1');
  const results = await Promise.all(ends);
  for (const r of results) t.match(r.data, /^HTTP\/1\.1 504 /, 'each stalled upload is answered 504 at its deadline');
  // within the 10 s the test always gave the slots to come back (429s write nothing)
  let after = await alice(s).post('/api/v1/namespaces/default/configmaps', cm('after'));
  while (after.status === 429 && Date.now() - started < 10_000) {
    await new Promise((r) => setTimeout(r, 50));
    after = await alice(s).post('/api/v1/namespaces/default/configmaps', cm('after'));
  }
  t.equal(after.status, 201, 'the slots came back: writes are admitted again');
  for (const n of [1, 2]) t.equal((await s.admin.get(`/api/v1/namespaces/default/configmaps/slow-${n}`)).status, 404, `nothing of upload ${n} was written`);
});

t.test('a client that does not read a large answer loses its connection at the request timeout, and its slot', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow', '--enable-priority-and-fairness=false', '--max-requests-inflight=1', '--request-timeout=1s']);
  t.teardown(() => s.stop());
  for (let i = 0; i < 24; i++) t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps', cm(`big-${i}`, 400_000))).status, 201);
  const sock = await rawRequest(s, `GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ALICE_TOKEN}\r\n\r\n`);
  sock.pause(); // never reads
  const closed = untilClosed(sock, 15_000);
  await new Promise((r) => setTimeout(r, 300));
  t.equal((await alice(s).get('/api/v1/namespaces/default/configmaps/big-0')).status, 429, 'the one read slot is held while the answer is being written');
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps/big-0')).status, 200, 'system:masters is never refused for load');
  for (const probe of ['/livez', '/readyz', '/healthz', '/readyz/ping']) t.equal((await alice(s).get(probe)).status, 200, `${probe} is exempt from the in-flight limit`);
  await new Promise((r) => setTimeout(r, 2500)); // well past the 1 s deadline
  sock.resume();
  const r = await closed;
  t.ok(r.closed, 'the connection whose answer could not be delivered in time was dropped');
  t.equal((await alice(s).get('/api/v1/namespaces/default/configmaps/big-0')).status, 200, 'its slot came back');
});
