/**
 * Issue 7, item 11 (the bad-body parts): an object name or namespace of thousands of characters in a
 * URL is a 404 (or the 422 a create gives such a name), never a 500 from the store's key limit; a
 * protobuf binaryData map entry written without a value decodes as empty bytes; a chunked body past
 * the 3 MiB limit is a 413 Status like a declared one, and the server goes on serving.
 */
import t from 'tap';
import { connect as tlsConnect } from 'node:tls';
import protobuf from 'protobufjs';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { rawRequest } from '../helpers/raw-http.js';
import { messageType, PROTOBUF_MAGIC, RUNTIME } from '../../core/codec/protobuf/proto-root.js';

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s.stop());

const LONG = 'x'.repeat(5000);
const APPLY = 'application/apply-patch+yaml';

interface Target {
  kind: string;
  apiVersion: string;
  /** Collection path and the object path for a name. */
  collection: string;
  plural: string;
}

const targets: Target[] = [
  { kind: 'ConfigMap', apiVersion: 'v1', collection: '/api/v1/namespaces/default/configmaps', plural: 'configmaps' },
  { kind: 'Namespace', apiVersion: 'v1', collection: '/api/v1/namespaces', plural: 'namespaces' },
  { kind: 'CSIDriver', apiVersion: 'storage.svc.io/v1', collection: '/apis/storage.svc.io/v1/csidrivers', plural: 'csidrivers.storage.svc.io' },
];

for (const k of targets) {
  t.test(`${k.kind}: a 5000-character name in the URL is a 404 for get, update, patch and delete, a 422 for apply`, async (t) => {
    const path = `${k.collection}/${LONG}`;
    const obj = JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name: LONG } });
    const cases: [string, string, string | undefined, string | undefined, number][] = [
      ['GET', path, undefined, undefined, 404],
      ['PUT', path, obj, 'application/json', 404],
      ['PATCH', path, '{"metadata":{"labels":{"a":"b"}}}', 'application/merge-patch+json', 404],
      ['PATCH', path, '{"metadata":{"labels":{"a":"b"}}}', 'application/strategic-merge-patch+json', 404],
      ['PATCH', path, '[{"op":"add","path":"/metadata/labels","value":{}}]', 'application/json-patch+json', 404],
      ['PATCH', `${path}?fieldManager=m`, obj, APPLY, 422],
      ['DELETE', path, undefined, undefined, 404],
    ];
    for (const [method, p, body, ct, code] of cases) {
      const r = await rawRequest(s, method, p, body === undefined ? {} : { body, headers: { 'content-type': ct! } });
      t.equal(r.status, code, `${method} ${ct ?? ''}: ${r.text.slice(0, 160)}`);
      if (code === 404) t.equal(r.json?.message, `${k.plural} "${LONG}" not found`);
      else t.match(r.json?.message, /is invalid: \[?metadata\.name: (Invalid value: .*must be no more than \d+ characters|Too long: may not be more than \d+ bytes)/);
    }
  });
}

t.test('a 5000-character namespace in the URL: reads find nothing, a create is refused, none is a 500', async (t) => {
  const base = `/api/v1/namespaces/${LONG}/configmaps`;
  t.equal((await rawRequest(s, 'GET', `${base}/a`)).status, 404, 'get');
  const list = await rawRequest(s, 'GET', base);
  t.equal(list.status, 200, 'list from the cache');
  t.same(list.json.items, []);
  const exact = await rawRequest(s, 'GET', `${base}?resourceVersion=1&resourceVersionMatch=NotOlderThan&limit=1`);
  t.equal(exact.status, 200, exact.text);
  const created = await rawRequest(s, 'POST', base, { body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}', headers: { 'content-type': 'application/json' } });
  t.ok(created.status === 404 || created.status === 422, `create: ${created.status} ${created.text.slice(0, 160)}`);
  t.equal((await rawRequest(s, 'DELETE', `${base}/a`)).status, 404, 'delete');
});

/** An enveloped protobuf ConfigMap whose message bytes are `raw`. */
function protobufConfigMap(raw: Uint8Array): Buffer {
  const unknown = messageType(`${RUNTIME}.Unknown`);
  return Buffer.concat([PROTOBUF_MAGIC, unknown.encode({ typeMeta: { apiVersion: 'v1', kind: 'ConfigMap' }, raw }).finish()]);
}

t.test('protobuf: a binaryData map entry without a value is empty bytes, as upstream decodes it', async (t) => {
  const cm = messageType('svc.io.api.core.v1.ConfigMap');
  const meta = messageType('svc.io.apimachinery.pkg.apis.meta.v1.ObjectMeta');
  const w = protobuf.Writer.create();
  w.uint32((cm.fields.metadata!.id << 3) | 2).bytes(meta.encode({ name: 'pb-empty' }).finish());
  // map entry = key only (field 1); no value (field 2)
  w.uint32((cm.fields.binaryData!.id << 3) | 2).bytes(protobuf.Writer.create().uint32(10).string('k').finish());
  const r = await rawRequest(s, 'POST', '/api/v1/namespaces/default/configmaps', { body: protobufConfigMap(w.finish()), headers: { 'content-type': 'application/vnd.svc.protobuf' } });
  t.equal(r.status, 201, r.text);
  t.same(r.json?.binaryData, { k: '' });
});

t.test('a body past the 3 MiB limit, chunked or declared, is a 413 Status the client reads before the connection closes', async (t) => {
  // 8 MiB, four at a time: the client is still sending when the server has its answer
  const big = Buffer.alloc(8 * 1024 * 1024, 0x20);
  for (const chunked of [true, false]) {
    const rs = await Promise.all(
      Array.from({ length: 4 }, () =>
        rawRequest(s, 'POST', '/api/v1/namespaces/default/configmaps', { body: big, chunked, headers: { 'content-type': 'application/json' } }).catch((e: Error) => ({ status: 0, json: undefined, text: e.message })),
      ),
    );
    for (const r of rs) {
      t.equal(r.status, 413, `${chunked ? 'chunked' : 'declared'}: ${r.text.slice(0, 160)}`);
      t.equal(r.json?.reason, 'RequestEntityTooLarge');
      t.equal(r.json?.message, 'Request entity too large: limit is 3145728');
    }
  }
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200, 'the server goes on serving');
});

/**
 * A client that writes its whole body before it reads: the server must read on (and drop) the rest
 * after deciding on the 413, or the client's writes hit a closed connection and it never sees the
 * answer (EPIPE / reset).
 */
function uploadThenRead(chunked: boolean, size: number, piece: number): Promise<{ statusLine: string; writeError?: string }> {
  const u = new URL(s.url);
  return new Promise((resolve) => {
    let out = '';
    let writeError: string | undefined;
    const sock = tlsConnect({ host: u.hostname, port: Number(u.port), ca: s.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, async () => {
      const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`;
      sock.write(`POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`);
      const data = Buffer.alloc(piece, 0x20);
      const frame = chunked ? Buffer.concat([Buffer.from(`${piece.toString(16)}\r\n`), data, Buffer.from('\r\n')]) : data;
      for (let sent = 0; sent < size && !sock.destroyed; sent += piece) if (!sock.write(frame)) await new Promise((r) => (sock.once('drain', r), sock.once('close', r)));
      if (chunked && !sock.destroyed) sock.write('0\r\n\r\n');
    });
    sock.setMaxListeners(0);
    sock.on('data', (d: Buffer) => (out += d.toString('latin1')));
    sock.on('error', (e: NodeJS.ErrnoException) => (writeError = e.code ?? e.message));
    sock.on('close', () => resolve({ statusLine: out.split('\r\n')[0] ?? '', writeError }));
  });
}

t.test('a client that sends all of an over-limit body before reading still gets the 413', async (t) => {
  for (const chunked of [true, false]) {
    const rs = await Promise.all(Array.from({ length: 16 }, (_, i) => uploadThenRead(chunked, 8 * 1024 * 1024, [64 * 1024, 1024 * 1024, 4096][i % 3]!)));
    t.same(
      rs.map((r) => `${r.statusLine}${r.writeError ? ` (${r.writeError})` : ''}`),
      Array(16).fill('HTTP/1.1 413 Payload Too Large'),
      chunked ? 'chunked' : 'declared',
    );
  }
});

t.test('a metadata.name that is not a string (an object with its own toString, a deeply nested array) is a 422 without a name (fuzzer finding)', async (t) => {
  const CM = '/api/v1/namespaces/default/configmaps';
  t.equal((await s.admin.post(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'named' } })).status, 201);
  for (const name of ['{"toString":1}', `${'['.repeat(9000)}${']'.repeat(9000)}`]) {
    const body = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":${name}}}`;
    for (const [method, path, ct] of [
      ['POST', CM, 'application/json'],
      ['PUT', `${CM}/named`, 'application/json'],
      ['PATCH', `${CM}/named?fieldManager=m`, APPLY],
    ] as const) {
      const r = await rawRequest(s, method, path, { body, headers: { 'content-type': ct } });
      t.equal(r.status, 422, `${method} ${name.slice(0, 20)}: ${r.text.slice(0, 200)}`);
      t.match(r.json?.message, /^ConfigMap "" is invalid: .*metadata\.name: Invalid value: "(object|array)"/);
    }
  }
});

t.test('server-side apply of a struct list with a null item reads it as the zero struct, as a create does (fuzzer finding: was a 500)', async (t) => {
  const url = '/apis/storage.svc.io/v1/csidrivers/null-item.example.com?fieldManager=fuzz';
  const body = (items: string) => `{"apiVersion":"storage.svc.io/v1","kind":"CSIDriver","metadata":{"name":"null-item.example.com"},"spec":{"tokenRequests":${items}}}`;
  const one = await rawRequest(s, 'PATCH', url, { body: body('[null]'), headers: { 'content-type': APPLY } });
  t.equal(one.status, 201, one.text);
  t.same(one.json.spec.tokenRequests, [{ audience: '' }]);
  const two = await rawRequest(s, 'PATCH', url, { body: body('[null,null]'), headers: { 'content-type': APPLY } });
  t.equal(two.status, 422, 'two empty audiences are a duplicate');
  t.match(two.json.message, /spec\.tokenRequests\[1\]\.audience: Duplicate value/);
});
