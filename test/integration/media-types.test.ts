import t from 'tap';
import { request as httpsRequest } from 'node:https';
import { gunzipSync } from 'node:zlib';
import { decodeProtobufObject, decodeProtobufWatchFrame } from '../../core/codec/protobuf.js';
import { startServer, type TestServer } from '../helpers/server.js';

const CMS = '/api/v1/namespaces/default/configmaps';
const cm = (name: string, data: Record<string, string> = { k: 'v' }) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { app: 'x' } }, data });
const PB = 'application/vnd.kubernetes.protobuf';

/** A GET whose raw body is kept (no decompression by the client), to see the wire. */
function rawGet(s: TestServer, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(new URL(path, s.url), { headers: { authorization: `Bearer ${s.admin.o.token}`, ...headers }, ca: s.ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('protobuf answers: objects, lists and errors in the envelope, in the spelling asked', async (t) => {
  const s = await startServer(['--workers=2']);
  t.teardown(() => s.stop());
  for (const n of ['a', 'b', 'c']) t.equal((await s.admin.post(CMS, cm(n))).status, 201);
  const one = await s.admin.get(`${CMS}/a`, { accept: PB });
  t.equal(one.headers['content-type'], PB);
  const json = (await s.admin.get(`${CMS}/a`)).json;
  t.same(decodeProtobufObject(one.body).object, json, 'the protobuf object decodes to the JSON object');
  const list = await s.admin.get(CMS, { accept: 'application/vnd.svc.protobuf' });
  t.equal(list.headers['content-type'], 'application/vnd.svc.protobuf');
  const decoded = decodeProtobufObject(list.body).object as { kind: string; items: { metadata: { name: string } }[]; metadata: { resourceVersion: string } };
  t.equal(decoded.kind, 'ConfigMapList');
  t.same(decoded.items.map((i) => i.metadata.name), ['a', 'b', 'c']);
  t.same(decoded, (await s.admin.get(CMS)).json, 'the protobuf list decodes to the JSON list (items without TypeMeta)');
  const paged = decodeProtobufObject((await s.admin.get(`${CMS}?limit=2`, { accept: PB })).body).object as { metadata: Record<string, unknown> };
  t.match(paged.metadata, { remainingItemCount: 1 }, 'list metadata is kept');
  t.type(paged.metadata.continue, 'string');
  const missing = await s.admin.get(`${CMS}/nope`, { accept: PB });
  t.equal(missing.status, 404);
  t.match(decodeProtobufObject(missing.body).object, { kind: 'Status', code: 404, reason: 'NotFound' }, 'errors are a protobuf Status');
  const created = await s.admin.post(CMS, cm('d'), { accept: PB });
  t.equal(created.status, 201);
  t.match(decodeProtobufObject(created.body).object, { kind: 'ConfigMap', metadata: { name: 'd' } }, 'writes answer in protobuf from the pool');
  const wrong = await s.admin.get(`${CMS}/a`, { accept: 'text/html' });
  t.equal(wrong.status, 406);
  t.match(wrong.json.message, /application\/vnd.svc.protobuf/);
});

t.test('a protobuf watch is a stream of length-prefixed WatchEvents, each object enveloped', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CMS, cm('w1'))).status, 201);
  const frames: { type: string; object: Record<string, unknown> }[] = [];
  let contentType = '';
  // the second write's answer is awaited before the server stops: its event can arrive before its answer
  let second: Promise<unknown> | undefined;
  await new Promise<void>((resolve, reject) => {
    const req = httpsRequest(new URL(`${CMS}?watch=1&resourceVersion=0`, s.url), { headers: { authorization: `Bearer ${s.admin.o.token}`, accept: PB }, ca: s.ca }, (res) => {
      contentType = String(res.headers['content-type']);
      let buf = Buffer.alloc(0);
      res.on('data', (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
          const f = decodeProtobufWatchFrame(buf);
          frames.push({ type: f.type, object: f.object });
          buf = buf.subarray(f.frameLength);
          if (frames.length === 1) second = s.admin.post(CMS, cm('w2'));
          if (frames.length === 2) {
            req.destroy();
            resolve();
          }
        }
      });
    });
    req.on('error', (e) => (frames.length >= 2 ? resolve() : reject(e)));
    req.end();
  });
  t.equal(((await second) as { status: number }).status, 201, 'the second write was answered');
  t.equal(contentType, `${PB};stream=watch`);
  t.same(frames.map((f) => [f.type, (f.object.metadata as { name: string }).name]), [['ADDED', 'w1'], ['ADDED', 'w2']]);
  t.equal(frames[1]!.object.kind, 'ConfigMap');
});

t.test('Tables and metadata-only views on get, list and watch', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  for (const n of ['t1', 't2']) t.equal((await s.admin.post(CMS, cm(n))).status, 201);
  const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
  const list = await s.admin.get(`${CMS}?limit=1`, { accept: TABLE });
  t.equal(list.headers['content-type'], TABLE);
  t.equal(list.json.kind, 'Table');
  t.equal(list.json.apiVersion, 'meta.k8s.io/v1', 'answered in the meta group spelling asked');
  t.same(list.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Data', 'Age']);
  t.equal(list.json.rows.length, 1);
  t.same(list.json.rows[0].cells.slice(0, 2), ['t1', 1]);
  t.same(list.json.rows[0].object.kind, 'PartialObjectMetadata', 'includeObject defaults to Metadata');
  t.type(list.json.metadata.continue, 'string', 'list metadata is kept');
  t.equal(list.json.metadata.remainingItemCount, 1);
  const ours = await s.admin.get(`${CMS}/t1?includeObject=Object`, { accept: 'application/json;as=Table;v=v1;g=meta.svc.io' });
  t.equal(ours.json.apiVersion, 'meta.svc.io/v1');
  t.match(ours.json.rows[0].object, { kind: 'ConfigMap', apiVersion: 'v1', data: { k: 'v' } });
  const none = await s.admin.get(`${CMS}/t1?includeObject=None`, { accept: TABLE });
  t.notOk('object' in none.json.rows[0], 'includeObject=None leaves the object out');
  t.equal((await s.admin.get(`${CMS}/t1?includeObject=Bogus`, { accept: TABLE })).status, 400);
  const poml = await s.admin.get(CMS, { accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io' });
  t.match(poml.json, { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', items: [{ kind: 'PartialObjectMetadata', metadata: { name: 't1' } }, { metadata: { name: 't2' } }] });
  t.notOk('data' in poml.json.items[0]);
  const pom = await s.admin.get(`${CMS}/t1`, { accept: `${PB};as=PartialObjectMetadata;v=v1;g=meta.k8s.io` });
  t.match(decodeProtobufObject(pom.body).object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: 't1' } }, 'metadata-only clients get protobuf');
  const w = await s.admin.stream(`${CMS}?watch=1&resourceVersion=0`, { accept: TABLE });
  const first = await w.next();
  w.close();
  t.match(first, { type: 'ADDED', object: { kind: 'Table', rows: [{ cells: ['t1', 1] }] } }, 'a watch of Tables sends a one-row Table per event');
});

t.test('gzip: large answers are compressed for clients that accept it, unless APIResponseCompression is off', async (t) => {
  const big = { blob: 'x'.repeat(300_000) };
  const s = await startServer();
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CMS, cm('big', big))).status, 201);
  t.equal((await s.admin.post(CMS, cm('small'))).status, 201);
  const zipped = await rawGet(s, `${CMS}/big`, { 'accept-encoding': 'gzip' });
  t.equal(zipped.headers['content-encoding'], 'gzip', 'a 300 KB object is gzipped');
  t.ok(zipped.body.length < 10_000, 'and much smaller on the wire');
  t.equal(JSON.parse(gunzipSync(zipped.body).toString()).data.blob.length, 300_000, 'it decompresses to the object');
  const zlist = await rawGet(s, CMS, { 'accept-encoding': 'gzip, deflate' });
  t.equal(zlist.headers['content-encoding'], 'gzip', 'a streamed list past the threshold is gzipped');
  t.same(JSON.parse(gunzipSync(zlist.body).toString()).items.map((i: { metadata: { name: string } }) => i.metadata.name), ['big', 'small']);
  const small = await rawGet(s, `${CMS}/small`, { 'accept-encoding': 'gzip' });
  t.notOk(small.headers['content-encoding'], 'small answers are not compressed (threshold 128 KiB)');
  const refused = await rawGet(s, `${CMS}/big`, { 'accept-encoding': 'gzip;q=0' });
  t.notOk(refused.headers['content-encoding'], 'gzip;q=0 is a refusal');
  const plain = await rawGet(s, `${CMS}/big`, {});
  t.notOk(plain.headers['content-encoding']);
  const off = await startServer(['--feature-gates=APIResponseCompression=false']);
  t.teardown(() => off.stop());
  t.equal((await off.admin.post(CMS, cm('big', big))).status, 201);
  t.notOk((await rawGet(off, `${CMS}/big`, { 'accept-encoding': 'gzip' })).headers['content-encoding'], 'the gate turns compression off');
});
