/**
 * Requests that switch protocols (HTTP/1.1 `Connection: Upgrade`: SPDY and WebSocket, as kubectl's
 * exec-style streams use) through the aggregator, against a real extension server on loopback TLS
 * that switches and echoes: authorized here first (a caller without a grant never reaches it), sent
 * on with the caller's identity in the request headers and never its credentials, the backend's 101
 * relayed, bytes carried both ways, either side's close closing the other; a backend that declines
 * has its answer relayed as it wrote it; a path this server serves itself answers as usual.
 */
import { connect, type TLSSocket } from 'node:tls';
import t from 'tap';
import { ALICE_TOKEN, ADMIN_TOKEN } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { type Aggregated, FLUNDERS, startWithWardle } from './setup.js';

let a: Aggregated;
t.before(async () => void (a = await startWithWardle()));
t.teardown(() => a?.stop());

interface Switched {
  status: number;
  headers: Record<string, string>;
  body: string;
  socket: TLSSocket;
  /** Bytes read after the answer's head, and those still coming. */
  read(until: string, ms?: number): Promise<string>;
  closed: Promise<void>;
}

/** Sends one request asking to switch protocols on a fresh HTTP/1.1 TLS connection and reads the answer's head. */
async function ask(path: string, headers: Record<string, string>, method = 'GET', payload: string | Buffer = ''): Promise<Switched> {
  const u = new URL(a.s.url);
  const socket = connect({ host: u.hostname, port: Number(u.port), ca: a.s.ca, ALPNProtocols: ['http/1.1'], servername: 'localhost' });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  let buf = Buffer.alloc(0);
  const waiters: (() => void)[] = [];
  socket.on('data', (c: Buffer) => {
    buf = Buffer.concat([buf, c]);
    for (const w of waiters.splice(0)) w();
  });
  socket.on('end', () => {
    for (const w of waiters.splice(0)) w();
  });
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${u.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''];
  socket.write(Buffer.concat([Buffer.from(lines.join('\r\n')), Buffer.from(payload)]));
  const until = async (cond: () => boolean, ms: number): Promise<boolean> => {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end || socket.readableEnded || socket.destroyed) return cond();
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
    return true;
  };
  await until(() => buf.includes('\r\n\r\n'), 10_000);
  const at = buf.indexOf('\r\n\r\n');
  const head = buf.subarray(0, at < 0 ? buf.length : at).toString('latin1').split('\r\n');
  buf = at < 0 ? Buffer.alloc(0) : buf.subarray(at + 4);
  const status = Number(head[0]?.split(' ')[1] ?? 0);
  const hdrs: Record<string, string> = {};
  for (const l of head.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) hdrs[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const body = status === 101 ? '' : (await until(() => buf.length >= Number(hdrs['content-length'] ?? 0), 5000), buf.toString('utf8'));
  return {
    status,
    headers: hdrs,
    body,
    socket,
    closed,
    async read(want, ms = 5000) {
      await until(() => buf.includes(want), ms);
      const out = buf.toString('utf8');
      buf = Buffer.alloc(0);
      return out;
    },
  };
}

const ECHO = `${FLUNDERS}/first/echo`;
const spdy = (token: string, more: Record<string, string> = {}) => ({ Authorization: `Bearer ${token}`, Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io', ...more });

t.test('an authorized upgrade reaches the extension with the caller\'s identity; its 101 comes back; bytes go both ways', async (t) => {
  const seen = a.ext.seen.length;
  const c = await ask(ECHO, spdy(ADMIN_TOKEN));
  t.equal(c.status, 101);
  t.equal(c.headers.upgrade, 'SPDY/3.1', 'the backend\'s answer, as it wrote it');
  t.equal(c.headers['x-stream-protocol-version'], 'echo.v1');
  c.socket.write('ping');
  t.match(await c.read('echo:ping'), 'echo:ping');
  c.socket.write('second');
  t.match(await c.read('echo:second'), 'echo:second', 'and again on the same connection');
  const who = a.ext.seen.slice(seen).find((x) => x.path.endsWith('/echo'));
  t.equal(who?.user, 'admin', JSON.stringify(who));
  t.ok(who?.groups.includes('system:masters'));
  t.equal(who?.clientCN, 'aggregator', 'this server\'s proxy client certificate');
  t.notOk(who?.leaked, 'no Authorization reached the extension');
  const h = a.ext.upgradeHeaders.at(-1)!;
  t.equal(h.upgrade, 'SPDY/3.1');
  t.match(String(h.connection), /upgrade/i);
  t.equal(h['x-stream-protocol-version'], 'v4.channel.k8s.io', 'the client\'s other headers go on');
  c.socket.end();
  t.ok(await waitFor(() => a.ext.upgraded.size === 0, 5000), 'the client closing closes the backend\'s connection');
});

t.test('a POST asking to switch (as kubectl exec\'s SPDY request) is switched the same way', async (t) => {
  const c = await ask(ECHO, spdy(ADMIN_TOKEN, { 'Content-Length': '0' }), 'POST');
  t.equal(c.status, 101);
  c.socket.write('over post');
  t.match(await c.read('echo:over post'), 'echo:over post');
  c.socket.destroy();
  t.ok(await waitFor(() => a.ext.upgraded.size === 0, 5000));
});

t.test('a request to switch that carries a body: the body goes to the extension with the request, before the switched stream', async (t) => {
  const before = a.ext.upgradeHeaders.length;
  const c = await ask(ECHO, spdy(ADMIN_TOKEN, { 'Content-Length': '10' }), 'POST', 'hello-body');
  t.equal(c.status, 101);
  t.equal(a.ext.upgradeHeaders[before]?.['content-length'], '10', 'the extension was told its length');
  t.match(await c.read('echo:hello-body'), 'echo:hello-body', 'and read it right after the request head');
  c.socket.write('then the stream');
  t.match(await c.read('echo:then the stream'), 'echo:then the stream');
  c.socket.destroy();
  t.ok(await waitFor(() => a.ext.upgraded.size === 0, 5000));
});

t.test('the backend closing closes the client\'s connection', async (t) => {
  const c = await ask(ECHO, spdy(ADMIN_TOKEN));
  t.equal(c.status, 101);
  t.ok(await waitFor(() => a.ext.upgraded.size === 1, 5000));
  for (const s of a.ext.upgraded) s.end();
  const closed = await Promise.race([c.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
  t.ok(closed, 'closed here too');
});

t.test('WebSocket: its handshake headers go on; impersonation is honoured and its headers dropped', async (t) => {
  const seen = a.ext.seen.length;
  const c = await ask(ECHO, { Authorization: `Bearer ${ADMIN_TOKEN}`, Connection: 'keep-alive, Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Protocol': 'v5.channel.k8s.io', 'Impersonate-User': 'someone', 'Impersonate-Group': 'system:masters' });
  t.equal(c.status, 101, c.body);
  t.equal(c.headers.upgrade, 'websocket');
  const h = a.ext.upgradeHeaders.at(-1)!;
  t.equal(h['sec-websocket-key'], 'dGhlIHNhbXBsZSBub25jZQ==');
  t.equal(h['sec-websocket-protocol'], 'v5.channel.k8s.io');
  const who = a.ext.seen.slice(seen).find((x) => x.path.endsWith('/echo'));
  t.equal(who?.user, 'someone', 'the impersonated user');
  t.ok(who?.groups.includes('system:masters'), 'and groups');
  t.notOk(who?.leaked, 'no Impersonate-* or Authorization header reached it');
  c.socket.write('hello');
  t.match(await c.read('echo:hello'), 'echo:hello');
  c.socket.destroy();
  t.ok(await waitFor(() => a.ext.upgraded.size === 0, 5000));
});

t.test('a caller without a grant is refused here; the extension never sees the request', async (t) => {
  const seen = a.ext.seen.length;
  const asked = a.ext.upgradeHeaders.length;
  const c = await ask(ECHO, spdy(ALICE_TOKEN));
  t.equal(c.status, 403);
  t.equal(JSON.parse(c.body).reason, 'Forbidden');
  const anon = await ask(ECHO, { Connection: 'Upgrade', Upgrade: 'SPDY/3.1' });
  t.ok(anon.status === 401 || anon.status === 403, `anonymous: ${anon.status}`);
  t.notOk(a.ext.seen.slice(seen).some((x) => x.path.endsWith('/echo')), 'no request of theirs reached it');
  t.equal(a.ext.upgradeHeaders.length, asked);
  t.equal(a.ext.upgraded.size, 0);
  c.socket.destroy();
  anon.socket.destroy();
});

t.test('a backend that declines to switch: its answer comes back as it wrote it', async (t) => {
  const c = await ask(`${FLUNDERS}/first/attach`, spdy(ADMIN_TOKEN));
  t.equal(c.status, 400);
  t.equal(c.body, 'no upgrade here\n');
  c.socket.destroy();
});

t.test('a request to switch protocols on a path this server serves itself gets its ordinary answer', async (t) => {
  const c = await ask('/api/v1/namespaces/wardle', spdy(ADMIN_TOKEN));
  t.equal(c.status, 200);
  t.equal(JSON.parse(c.body).metadata.name, 'wardle');
  const closed = await Promise.race([c.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
  t.ok(closed, 'then the connection ends');
  t.equal((await a.s.admin.get('/api/v1/namespaces/wardle')).status, 200, 'the server serves on');
  const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'upgrade-body' }, data: { k: 'v'.repeat(70_000) } });
  const post = await ask('/api/v1/namespaces/wardle/configmaps', spdy(ADMIN_TOKEN, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) }), 'POST', body);
  t.equal(post.status, 201, `a body it carries is read as any request's: ${post.status} ${post.body.slice(0, 300)}`);
  t.equal(JSON.parse(post.body).data.k.length, 70_000);
  post.socket.destroy();
});

/** `body` in HTTP/1.1 chunks of `size` bytes (the last one shorter), with a chunk extension on the first and a trailer field. */
function chunked(body: string, size: number): Buffer {
  const b = Buffer.from(body);
  const out: Buffer[] = [];
  for (let i = 0; i < b.length; i += size) {
    const part = b.subarray(i, i + size);
    out.push(Buffer.from(`${part.length.toString(16)}${i === 0 ? ';name=value' : ''}\r\n`), part, Buffer.from('\r\n'));
  }
  return Buffer.concat([...out, Buffer.from('0\r\nX-Trailer: ignored\r\n\r\n')]);
}

t.test('a request to switch protocols on a path this server serves itself: a chunked body is read as any request\'s', async (t) => {
  const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'upgrade-chunked' }, data: { k: 'é'.repeat(40_000) } });
  const headers = spdy(ADMIN_TOKEN, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
  const post = await ask('/api/v1/namespaces/wardle/configmaps', headers, 'POST', chunked(body, 7_001));
  t.equal(post.status, 201, `${post.status} ${post.body.slice(0, 300)}`);
  t.equal(JSON.parse(post.body).data.k, 'é'.repeat(40_000), 'the body\'s content, chunks joined');
  post.socket.destroy();
  const stored = await a.s.admin.get('/api/v1/namespaces/wardle/configmaps/upgrade-chunked');
  t.equal(stored.status, 200);
  t.equal((stored.json as { data: { k: string } }).data.k.length, 40_000);
  const small = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'upgrade-chunked-one' } });
  const one = await ask('/api/v1/namespaces/wardle/configmaps', headers, 'POST', chunked(small, 1 << 20));
  t.equal(one.status, 201, `one chunk: ${one.body.slice(0, 300)}`);
  one.socket.destroy();
});

t.test('a malformed chunked body on a request to switch protocols is a 400 Status; the server serves on', async (t) => {
  const headers = spdy(ADMIN_TOKEN, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
  const cases: [string, string][] = [
    ['a chunk size that is not hex', 'zz\r\n{}\r\n0\r\n\r\n'],
    ['chunk data longer than its size', '2\r\n{}}\r\n0\r\n\r\n'],
    ['a chunk size too large to be one', 'fffffffffffffffff\r\n{}\r\n0\r\n\r\n'],
    ['a bare LF ending the size line', '2\n{}\r\n0\r\n\r\n'],
  ];
  for (const [name, payload] of cases) {
    const c = await ask('/api/v1/namespaces/wardle/configmaps', headers, 'POST', payload);
    t.equal(c.status, 400, `${name}: ${c.status} ${c.body.slice(0, 300)}`);
    const st = JSON.parse(c.body) as { kind: string; reason: string; code: number; message: string };
    t.equal(st.kind, 'Status', name);
    t.equal(st.reason, 'BadRequest', name);
    t.match(st.message, /malformed HTTP request: invalid chunked body/, name);
    const closed = await Promise.race([c.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
    t.ok(closed, `${name}: then the connection ends`);
  }
  t.equal((await a.s.admin.get('/api/v1/namespaces/wardle')).status, 200, 'the server serves on');
});

