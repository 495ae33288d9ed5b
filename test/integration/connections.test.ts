import t from 'tap';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { connect as h2connect } from 'node:http2';
import { startServer, type TestServer } from '../helpers/server.js';

const CMS = '/api/v1/namespaces/default/configmaps';

function tls(s: TestServer, alpn = 'http/1.1'): Promise<TLSSocket> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const sock = tlsConnect({ host: u.hostname, port: Number(u.port), ca: s.ca, ALPNProtocols: [alpn] }, () => resolve(sock));
    sock.on('error', reject);
  });
}

/** Sends raw HTTP/1.1 and collects the answer until the server closes or `ms` pass. */
async function exchange(s: TestServer, raw: string, ms = 5000): Promise<string> {
  const sock = await tls(s);
  let data = '';
  sock.on('data', (c: Buffer) => (data += c.toString('latin1')));
  sock.on('error', () => undefined);
  sock.write(raw);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  sock.destroy();
  return data;
}

// each case has its own server; the first waits out the 32 s read-header timeout, the others run meanwhile
t.jobs = 3;

const statusOf = (raw: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
const bodyOf = (raw: string): { reason?: string; kind?: string } => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));

t.test('connections that do not speak are cut at upstream\'s 32 s read-header timeout', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const started = Date.now();
  const u = new URL(s.url);
  // a TCP connection that never starts TLS, and one that sends its headers a byte at a time
  const silent = netConnect(Number(u.port), u.hostname);
  silent.on('error', () => undefined);
  const silentClosed = new Promise<number>((r) => silent.on('close', () => r(Date.now() - started)));
  const slow = await tls(s);
  slow.on('error', () => undefined);
  const head = `GET ${CMS} HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(200)}\r\n\r\n`;
  let i = 0;
  const drip = setInterval(() => (i < head.length && !slow.destroyed ? slow.write(head[i++]!) : clearInterval(drip)), 1000);
  const slowClosed = new Promise<number>((r) => slow.on('close', () => r(Date.now() - started)));
  const [silentMs, slowMs] = await Promise.all([silentClosed, slowClosed]);
  clearInterval(drip);
  t.ok(silentMs < 45_000, `a silent TCP connection was closed (after ${silentMs} ms)`);
  t.ok(slowMs < 45_000, `a connection dripping its headers was closed (after ${slowMs} ms)`);
  t.ok(i < head.length, 'before its headers were complete');
  t.equal((await s.admin.get(CMS)).status, 200, 'the server kept serving');
});

t.test('request lines and headers up to 1 MiB are accepted, on HTTP/1.1 and HTTP/2', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  // a long label selector, as a client with many label values would send
  const values = Array.from({ length: 6000 }, (_, i) => `value-${i}`).join(',');
  const path = `${CMS}?labelSelector=${encodeURIComponent(`app in (${values})`)}`;
  t.ok(path.length > 64 * 1024, `the request line is ${path.length} bytes`);
  const h1 = await s.admin.get(path);
  t.equal(h1.status, 200, 'HTTP/1.1');
  const session = h2connect(s.url, { ca: s.ca, maxSendHeaderBlockLength: 2 << 20 }); // Node's client caps header blocks at 64 KiB by default; Go's does not
  t.teardown(() => session.close());
  const h2status = await new Promise<number>((resolve, reject) => {
    const req = session.request({ ':path': path, authorization: `Bearer ${s.admin.o.token}` });
    req.on('response', (h) => resolve(Number(h[':status'])));
    req.on('error', reject);
    req.resume();
    req.end();
  });
  t.equal(h2status, 200, 'HTTP/2');
  const tooLong = await exchange(s, `GET ${CMS}?x=${'a'.repeat(1_100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
  t.equal(statusOf(tooLong), 431, 'past 1 MiB: 431 with a Status');
  t.equal(bodyOf(tooLong).kind, 'Status');
});

t.test('CONNECT and unknown methods get a Status answer, not a dropped connection', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const connect = await exchange(s, `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`);
  t.equal(statusOf(connect), 405);
  t.match(bodyOf(connect), { kind: 'Status', reason: 'MethodNotAllowed' });
  const bogus = await exchange(s, `FROB ${CMS} HTTP/1.1\r\nHost: x\r\n\r\n`);
  t.equal(statusOf(bogus), 405);
  t.match(bodyOf(bogus), { kind: 'Status', reason: 'MethodNotAllowed' });
  const known = await exchange(s, `PROPFIND ${CMS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.admin.o.token}\r\nConnection: close\r\n\r\n`);
  t.equal(statusOf(known), 405, 'a method the parser knows but the API does not serve');
  t.match(bodyOf(known), { kind: 'Status', reason: 'MethodNotAllowed' });
  const garbage = await exchange(s, `\x00\x01\x02 nonsense\r\n\r\n`);
  t.equal(statusOf(garbage), 400, 'garbage is a 400 with a Status');
  t.equal((await s.admin.get(CMS)).status, 200, 'the server kept serving');
});
