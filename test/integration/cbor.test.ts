/**
 * CBOR through the CBORServingAndStorage gate on a real server (pool workers, so the worker threads'
 * codecs are the ones exercised): off by default (neither offered nor accepted), on: objects, lists,
 * watches as CBOR sequences, writes with CBOR bodies, server-side apply in CBOR, no CBOR form of the
 * other patch types, no CBOR Table, errors as CBOR Status objects.
 */
import { request as httpsRequest } from 'node:https';
import t from 'tap';
import { decodeCbor, decodeCborSequence, encodeCbor, RESPONSE_LIMITS } from '../../core/codec/cbor.js';
import { startServer, type TestServer } from '../helpers/server.js';

const CMS = '/api/v1/namespaces/default/configmaps';
const CBOR = 'application/cbor';
const cm = (name: string, data: Record<string, string> = { k: 'v' }) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });
const read = (b: Buffer): Record<string, unknown> => decodeCbor(b, RESPONSE_LIMITS).value as Record<string, unknown>;

t.test('with the gate off (the default) CBOR is neither offered nor accepted', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CMS, cm('a'))).status, 201);
  const get = await s.admin.get(`${CMS}/a`, { accept: CBOR });
  t.equal(get.status, 406);
  t.equal(get.json.message, 'only the following media types are accepted: application/json, application/yaml, application/vnd.svc.protobuf');
  t.equal((await s.admin.get(`${CMS}/a`, { accept: `${CBOR}, application/json` })).headers['content-type'], 'application/json', 'the next range is used');
  t.equal((await s.admin.get(`${CMS}?watch=1`, { accept: 'application/cbor-seq' })).status, 406, 'no CBOR watch');
  const post = await s.admin.post(CMS, Buffer.from(encodeCbor(cm('b'))), { contentType: CBOR });
  t.equal(post.status, 415);
  t.equal(post.json.message, 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.svc.protobuf');
  const apply = await s.admin.patch(`${CMS}/a?fieldManager=m`, Buffer.from(encodeCbor(cm('a'))), 'application/apply-patch+cbor');
  t.equal(apply.status, 415);
  t.equal(
    apply.json.message,
    'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml',
  );
  t.same((await s.admin.get(CMS)).json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['a'], 'nothing was written');
});

t.test('with the gate on: CBOR answers and bodies', async (t) => {
  const s = await startServer(['--feature-gates=CBORServingAndStorage=true', '--workers=1']);
  t.teardown(() => s.stop());
  const created = await s.admin.post(CMS, Buffer.from(encodeCbor({ ...cm('a'), binaryData: { b: 'AQID' } })), { contentType: CBOR, accept: CBOR });
  t.equal(created.status, 201, 'a CBOR body creates (read in a pool worker)');
  t.equal(created.headers['content-type'], CBOR);
  t.same([...created.body.subarray(0, 3)], [0xd9, 0xd9, 0xf7], 'one data item behind the self-described tag');
  t.match(read(created.body), { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'a' }, data: { k: 'v' }, binaryData: { b: 'AQID' } });
  const json = (await s.admin.get(`${CMS}/a`)).json;
  t.strictSame(read((await s.admin.get(`${CMS}/a`, { accept: CBOR })).body), json, 'a get in CBOR is the JSON object');
  t.equal((await s.admin.post(CMS, cm('b'))).status, 201);
  const list = await s.admin.get(CMS, { accept: CBOR });
  t.equal(list.headers['content-type'], CBOR);
  t.strictSame(read(list.body), (await s.admin.get(CMS)).json, 'a list in CBOR is the JSON list');
  const paged = read((await s.admin.get(`${CMS}?limit=1`, { accept: CBOR })).body) as { metadata: Record<string, unknown> };
  t.match(paged.metadata, { remainingItemCount: 1 }, 'list metadata is kept');

  const live = read((await s.admin.get(`${CMS}/a`, { accept: CBOR })).body) as { metadata: Record<string, unknown> };
  const put = await s.admin.put(`${CMS}/a`, Buffer.from(encodeCbor({ ...live, data: { k: 'v2' } })), { contentType: CBOR, accept: CBOR });
  t.equal(put.status, 200, 'an update with a CBOR body');
  t.match(read(put.body), { data: { k: 'v2' } });

  const apply = await s.admin.patch(`${CMS}/c?fieldManager=cbor-applier`, Buffer.from(encodeCbor(cm('c', { applied: 'yes' }))), 'application/apply-patch+cbor', { accept: CBOR });
  t.equal(apply.status, 201, 'server-side apply in CBOR creates');
  t.match(read(apply.body), { metadata: { name: 'c', managedFields: [{ manager: 'cbor-applier', operation: 'Apply' }] }, data: { applied: 'yes' } });
  for (const ct of ['application/merge-patch+cbor', 'application/json-patch+cbor', 'application/strategic-merge-patch+cbor', CBOR]) {
    const r = await s.admin.patch(`${CMS}/c`, Buffer.from(encodeCbor({ data: { x: 'y' } })), ct);
    t.equal(r.status, 415, `${ct}: no CBOR form of that patch`);
    t.match(r.json.message, /application\/apply-patch\+yaml, application\/apply-patch\+cbor$/, 'apply-patch+cbor is listed');
  }
  const badApply = await s.admin.patch(`${CMS}/c?fieldManager=m`, Buffer.from('d9d9f7a2616101616102', 'hex'), 'application/apply-patch+cbor');
  t.equal(badApply.status, 400);
  t.equal(badApply.json.message, 'error decoding YAML: cbor: found duplicate map key "a" at map element index 1', "upstream's apply wording");

  const missing = await s.admin.get(`${CMS}/nope`, { accept: CBOR });
  t.equal(missing.status, 404);
  t.match(read(missing.body), { kind: 'Status', code: 404, reason: 'NotFound' }, 'errors are CBOR Status objects');
  t.equal((await s.admin.get(`${CMS}?watch=1`, { accept: 'application/yaml' })).status, 406);

  const table = await s.admin.get(CMS, { accept: `${CBOR};as=Table;v=v1;g=meta.k8s.io` });
  t.equal(table.status, 406, 'a Table has no CBOR form');
  const fallback = await s.admin.get(CMS, { accept: `${CBOR};as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io` });
  t.equal(fallback.json.kind, 'Table', 'the next range gives the Table in JSON');
  const poml = await s.admin.get(CMS, { accept: `${CBOR};as=PartialObjectMetadataList;v=v1;g=meta.k8s.io` });
  t.match(read(poml.body), { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', items: [{ kind: 'PartialObjectMetadata', metadata: { name: 'a' } }] });

  const del = await s.admin.request('DELETE', `${CMS}/b`, { body: Buffer.from(encodeCbor({ kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'wrong' } })), contentType: CBOR });
  t.equal(del.status, 409, 'a CBOR DeleteOptions body is read (its precondition fails)');
  t.equal((await s.admin.request('DELETE', `${CMS}/b`, { body: Buffer.from(encodeCbor({ kind: 'DeleteOptions', apiVersion: 'v1' })), contentType: CBOR })).status, 200);

  const secret = await s.admin.post('/api/v1/namespaces/default/secrets', Buffer.from(encodeCbor({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { pw: Buffer.from([0, 1, 255]).toString('base64') } })), { contentType: CBOR, accept: CBOR });
  t.equal(secret.status, 201);
  t.ok(secret.body.includes(Buffer.from('d64300 01ff'.replace(' ', ''), 'hex')), 'Secret data is written as tag-22 byte strings');
  t.match(read(secret.body), { data: { pw: 'AAH/' } });
  const drv = await s.admin.post('/apis/storage.svc.io/v1/csidrivers', Buffer.from(encodeCbor({ apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'x.example.com' }, spec: {} })), { contentType: CBOR, accept: CBOR });
  t.match(read(drv.body), { kind: 'CSIDriver', spec: { attachRequired: true, volumeLifecycleModes: ['Persistent'] } }, 'cluster-scoped kinds too');
});

/** Reads a CBOR watch until `n` events arrived (frames split across chunks are joined). */
function cborWatch(s: TestServer, path: string, accept: string, n: number, onFirst: () => void): Promise<{ contentType: string; events: { type: string; object: Record<string, unknown> }[] }> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const req = httpsRequest(new URL(path, s.url), { headers: { authorization: `Bearer ${s.admin.o.token}`, accept }, ca: s.ca }, (res) => {
      const contentType = String(res.headers['content-type']);
      res.on('data', (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        let events: { type: string; object: Record<string, unknown> }[];
        try {
          events = decodeCborSequence(buf) as typeof events;
        } catch {
          return; // a frame still arriving
        }
        if (events.length >= 1) onFirst();
        if (events.length >= n) {
          req.destroy();
          resolve({ contentType, events });
        }
      });
    });
    req.on('error', (e) => reject(e));
    req.end();
  });
}

t.test('a CBOR watch is a CBOR sequence, one event per data item', async (t) => {
  const s = await startServer(['--feature-gates=CBORServingAndStorage=true']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(CMS, cm('w1'))).status, 201);
  // the second write's answer is awaited before the server stops: its event can arrive before its answer
  let second: Promise<{ status: number }> | undefined;
  const w = await cborWatch(s, `${CMS}?watch=1&resourceVersion=0`, 'application/cbor-seq', 2, () => {
    second ??= s.admin.post(CMS, cm('w2'));
  });
  t.equal((await second)?.status, 201, 'the second write was answered');
  t.equal(w.contentType, 'application/cbor-seq');
  t.same(w.events.map((e) => [e.type, (e.object.metadata as { name: string }).name, e.object.kind]), [['ADDED', 'w1', 'ConfigMap'], ['ADDED', 'w2', 'ConfigMap']]);
  const asCbor = await cborWatch(s, `${CMS}?watch=1&resourceVersion=0`, CBOR, 2, () => undefined);
  t.equal(asCbor.contentType, 'application/cbor-seq', 'a watch asked for as application/cbor is answered as a sequence, as upstream does');
});
