/**
 * HTTP/2 (ALPN h2) and HTTP/1.1 on the same port: both negotiate, serve the same API, authenticate
 * tokens and client certificates, answer the same Status errors, and survive a 413.
 */
import { connect as tlsConnect } from 'node:tls';
import { connect as h2connect, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import t from 'tap';
import { ensureGeneratedTls, issueClientCert } from '../../core/server/certs.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { tmp } from '../helpers/fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

interface H2Response {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: Obj;
}

function h2request(session: ClientHttp2Session, method: string, path: string, body?: unknown, extra: Record<string, string> = {}, token: string | null = ADMIN_TOKEN): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ':method': method, ':path': path, ...extra };
    if (token) headers.authorization = `Bearer ${token}`;
    let payload: Buffer | undefined;
    if (body !== undefined) {
      payload = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const req = session.request(headers);
    let resHeaders: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on('response', (h) => (resHeaders = h));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let json: Obj;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      resolve({ status: Number(resHeaders[':status']), headers: resHeaders, text, json });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const CM = '/api/v1/namespaces/default/configmaps';
let s: TestServer;
let session: ClientHttp2Session;

t.before(async () => {
  s = await startServer();
  session = s.admin.http2();
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
});
t.teardown(async () => {
  session?.close();
  await s?.stop();
});

t.test('ALPN negotiates h2 for HTTP/2 clients', async (t) => {
  t.equal(session.alpnProtocol, 'h2');
});

t.test('ALPN negotiates http/1.1 when the client offers only that', async (t) => {
  const url = new URL(s.url);
  const proto = await new Promise<string | false>((resolve, reject) => {
    const sock = tlsConnect({ host: url.hostname, port: Number(url.port), ca: s.ca, ALPNProtocols: ['http/1.1'], servername: 'localhost' }, () => {
      resolve(sock.alpnProtocol ?? false);
      sock.end();
    });
    sock.on('error', reject);
  });
  t.equal(proto, 'http/1.1');
});

t.test('an HTTP/1.1 client without ALPN is served', async (t) => {
  const v = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest(new URL('/api/v1/namespaces', s.url), { ca: s.ca, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(`${res.httpVersion} ${res.statusCode}`));
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(v, '1.1 200');
});

t.test('CRUD over HTTP/2', async (t) => {
  const c = await h2request(session, 'POST', CM, { metadata: { name: 'h2-obj' }, data: { a: '1' } });
  t.equal(c.status, 201, c.text);
  t.match(String(c.headers['content-type']), /^application\/json/);
  const g = await h2request(session, 'GET', `${CM}/h2-obj`);
  t.equal(g.status, 200);
  t.same(g.json, c.json, 'HTTP/2 read returns what HTTP/2 wrote');
  const g1 = await s.admin.get(`${CM}/h2-obj`);
  t.same(g1.json, c.json, 'HTTP/1.1 read returns the same object');
  const body = { ...g.json, data: { a: '2' } };
  const u = await h2request(session, 'PUT', `${CM}/h2-obj`, body);
  t.equal(u.status, 200, u.text);
  const stale = await h2request(session, 'PUT', `${CM}/h2-obj`, body);
  t.equal(stale.status, 409, 'stale update is 409 over HTTP/2');
  t.equal(stale.json?.reason, 'Conflict');
  const y = await h2request(session, 'GET', `${CM}/h2-obj`, undefined, { accept: 'application/yaml' });
  t.equal(y.status, 200);
  t.match(y.text, /^apiVersion: v1\n/);
  const d = await h2request(session, 'DELETE', `${CM}/h2-obj`);
  t.equal(d.status, 200, d.text);
  const nf = await h2request(session, 'GET', `${CM}/h2-obj`);
  t.equal(nf.status, 404);
  t.equal(nf.json?.message, 'configmaps "h2-obj" not found');
});

t.test('multiplexed concurrent writes on one HTTP/2 connection', async (t) => {
  const n = 40;
  const rs = await Promise.all(Array.from({ length: n }, (_, i) => h2request(session, 'POST', CM, { metadata: { name: `h2-many-${i}` } })));
  t.same(
    rs.map((r) => r.status),
    Array(n).fill(201),
    'every write acknowledged',
  );
  t.equal(new Set(rs.map((r) => r.json.metadata.resourceVersion)).size, n, 'distinct resourceVersions');
  const l = await h2request(session, 'GET', CM);
  t.equal(l.json.items.filter((i: Obj) => i.metadata.name.startsWith('h2-many-')).length, n, 'all stored');
});

t.test('Status errors and Warning headers over HTTP/2', async (t) => {
  const inv = await h2request(session, 'POST', CM, { metadata: { name: 'Bad_Name' } });
  t.equal(inv.status, 422);
  t.equal(inv.json?.reason, 'Invalid');
  const bad = await h2request(session, 'POST', CM, '{"metadata":', { 'content-type': 'application/json' });
  t.equal(bad.status, 400);
  t.equal(bad.json?.reason, 'BadRequest');
  const np = await h2request(session, 'GET', '/nothing/here');
  t.equal(np.status, 404);
  const w = await h2request(session, 'POST', CM, '{"metadata":{"name":"h2-warn"},"foo":1,"bar":2}', { 'content-type': 'application/json' });
  t.equal(w.status, 201, w.text);
  const warning = w.headers.warning;
  const list = Array.isArray(warning) ? warning : String(warning ?? '').split(/,(?= ?299 )/);
  t.same(
    list.map((x) => x.trim()).sort(),
    ['299 - "unknown field \\"bar\\""', '299 - "unknown field \\"foo\\""'],
    'one warning per unknown field',
  );
});

t.test('401 over HTTP/2', async (t) => {
  const r = await h2request(session, 'GET', CM, undefined, {}, 'wrong-token');
  t.equal(r.status, 401);
  t.equal(r.json?.reason, 'Unauthorized');
});

t.test('a 413 on HTTP/2 leaves the connection usable', async (t) => {
  const big = Buffer.from(JSON.stringify({ metadata: { name: 'h2-big' }, data: { a: 'x'.repeat(3 * 1024 * 1024 + 1) } }));
  const r = await h2request(session, 'POST', CM, big);
  t.equal(r.status, 413);
  t.equal(r.json?.reason, 'RequestEntityTooLarge');
  t.equal(r.json?.message, 'Request entity too large: limit is 3145728');
  const ok = await h2request(session, 'GET', '/api/v1/namespaces/default');
  t.equal(ok.status, 200, 'same session still serves');
  t.equal((await h2request(session, 'GET', `${CM}/h2-big`)).status, 404, 'nothing stored');
});

t.test('client certificates over HTTP/2', async (t) => {
  const cert = issueClientCert(s.dataDir, 'h2-user', ['dev']);
  // the certificate's group may edit in default (the server authorizes with Node,RBAC)
  const binding = { apiVersion: 'rbac.authorization.svc.io/v1', kind: 'RoleBinding', metadata: { name: 'dev-edit', namespace: 'default' }, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'edit' }, subjects: [{ kind: 'Group', name: 'dev' }] };
  t.equal((await s.admin.post('/apis/rbac.authorization.svc.io/v1/namespaces/default/rolebindings', binding)).status, 201);
  const sess = h2connect(s.url, { ca: s.ca, ...cert });
  t.teardown(() => sess.close());
  const r = await h2request(sess, 'POST', CM, { metadata: { name: 'h2-cert' } }, {}, null);
  t.equal(r.status, 201, r.text);

  const other = tmp('svc-h2-ca-');
  ensureGeneratedTls(other, '127.0.0.1', 0);
  const foreign = h2connect(s.url, { ca: s.ca, ...issueClientCert(other, 'intruder', ['system:masters']) });
  t.teardown(() => foreign.close());
  const f = await h2request(foreign, 'GET', CM, undefined, {}, null);
  t.equal(f.status, 401, 'unknown CA is 401 over HTTP/2 too');
});

t.test('health over HTTP/2', async (t) => {
  const r = await h2request(session, 'GET', '/readyz?verbose');
  t.equal(r.status, 200);
  t.match(r.text, /\[\+\]ping ok/);
});
