/**
 * Bad input and limits over gRPC: each gets its status code (with the Status in `svc-status-bin` where
 * the request reached the chain), nothing partial is stored, and the process keeps serving. Also the
 * call lifetime: a gRPC deadline and a cancel end the server's watch, a client that never reads its
 * stream is closed as a slow watcher, and a connection with too many open calls gets
 * RESOURCE_EXHAUSTED for one more.
 */
import { connect } from 'node:http2';
import { Client as RawClient, credentials, Metadata, status as Code } from '@grpc/grpc-js';
import t from 'tap';
import { GrpcStatusError, type Ref } from '../../core/grpc/client.js';
import { methodOf, RESOURCES_SERVICE, type RequestMessage } from '../../core/grpc/proto.js';
import { GrpcWatch, overGrpc, overHttps, startGrpcServer } from '../helpers/grpc.js';
import { ADMIN_TOKEN } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const LIMIT = 64 * 1024;
const CM: Ref = { version: 'v1', resource: 'configmaps', namespace: 'default' };
const request = (ref: RequestMessage['ref'], o: Partial<RequestMessage> = {}): RequestMessage => ({ ref, options: {}, body: Buffer.alloc(0), content_type: '', accept: '', ...o });
const ref = (r: Partial<NonNullable<RequestMessage['ref']>>): NonNullable<RequestMessage['ref']> => ({ group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: '', subresource: '', ...r });

t.test('bad input over gRPC', async (t) => {
  const s = await startGrpcServer([`--max-request-body-bytes=${LIMIT}`, '--grpc-max-streams-per-connection=5', '--watch-buffer-bytes=65536']);
  t.teardown(() => s.stop());
  const refused = (p: Promise<unknown>) => p.then(() => undefined, (e: GrpcStatusError) => e);
  const serving = async () => t.equal((await overGrpc(s.g, { verb: 'list', ref: CM })).code, Code.OK, 'the server keeps serving');
  const storedNames = async () => ((await s.admin.get('/api/v1/namespaces/default/configmaps')).json.items as { metadata: { name: string } }[]).map((i) => i.metadata.name);

  await t.test('a request without a ref is INVALID_ARGUMENT with a 400 Status', async (t) => {
    const e = await refused(s.g.callRaw('Get', request(null)));
    t.equal(e?.code, Code.INVALID_ARGUMENT);
    t.equal(e?.status?.code, 400);
    t.equal(e?.status?.message, 'the request has no ref');
  });

  await t.test('a ref without a resource, or with a slash in a segment, is INVALID_ARGUMENT', async (t) => {
    t.equal((await refused(s.g.callRaw('List', request(ref({ resource: '' })))))?.code, Code.INVALID_ARGUMENT);
    t.equal((await refused(s.g.callRaw('Get', request(ref({ name: 'a/../../b' })))))?.code, Code.INVALID_ARGUMENT);
  });

  await t.test('Get without a name, List with a name, or a unary call asking to watch are INVALID_ARGUMENT', async (t) => {
    t.match((await refused(s.g.callRaw('Get', request(ref({})))))?.status?.message, /ref.name is required for Get/);
    t.match((await refused(s.g.callRaw('List', request(ref({ name: 'x' })))))?.status?.message, /ref.name must be empty for List/);
    t.match((await refused(s.g.callRaw('List', request(ref({}), { options: { watch: 'true' } }))))?.status?.message, /use the Watch method/);
  });

  await t.test('a garbage protobuf body is INVALID_ARGUMENT and stores nothing', async (t) => {
    const e = await refused(s.g.create(CM, Buffer.from('k8s\u0000garbage-bytes-here'), { contentType: 'application/vnd.svc.protobuf' }));
    t.equal(e?.code, Code.INVALID_ARGUMENT);
    t.equal(e?.status?.code, 400);
  });

  await t.test('a body over the HTTP API limit is RESOURCE_EXHAUSTED with the 413 Status HTTPS answers', async (t) => {
    const big = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'too-big' }, data: { x: 'x'.repeat(LIMIT) } };
    const g = await overGrpc(s.g, { verb: 'create', ref: CM, body: big });
    const h = await overHttps(s.admin, { verb: 'create', ref: CM, body: big, accept: 'application/json' });
    t.equal(g.code, Code.RESOURCE_EXHAUSTED);
    t.equal(h.code, Code.RESOURCE_EXHAUSTED);
    t.same(g.value, h.value);
    t.equal(g.value.code, 413);
    t.notOk((await storedNames()).includes('too-big'), 'nothing is stored');
  });

  await t.test('a message far over the limit is refused by the transport: RESOURCE_EXHAUSTED', async (t) => {
    const e = await refused(s.g.create(CM, Buffer.alloc(LIMIT * 4, 0x20)));
    t.equal(e?.code, Code.RESOURCE_EXHAUSTED);
    await serving();
  });

  await t.test('a Request message that is not protobuf is refused and the server keeps serving', async (t) => {
    const raw = new RawClient(`127.0.0.1:${s.grpcPort}`, credentials.createSsl(Buffer.from(s.ca)));
    t.teardown(() => raw.close());
    const md = new Metadata();
    md.set('authorization', `Bearer ${ADMIN_TOKEN}`);
    const code = await new Promise<number>((resolve) =>
      raw.makeUnaryRequest(`/${RESOURCES_SERVICE}/Get`, () => Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), (b: Buffer) => b, {}, md, (err) => resolve(err?.code ?? Code.OK)),
    );
    t.not(code, Code.OK, `refused (${Code[code]})`);
    await serving();
  });

  await t.test('a bad option value is INVALID_ARGUMENT with the Status HTTPS answers', async (t) => {
    const g = await overGrpc(s.g, { verb: 'list', ref: CM, options: { limit: 'many' } });
    const h = await overHttps(s.admin, { verb: 'list', ref: CM, options: { limit: 'many' }, accept: 'application/json' });
    t.equal(g.code, h.code);
    t.same(g.value, h.value);
  });

  await t.test('a gRPC deadline ends a watch: DEADLINE_EXCEEDED, and the server closes it', async (t) => {
    const w = new GrpcWatch(s.g, CM, { deadline: Date.now() + 500 });
    t.ok(await waitFor(() => s.server.openWatches === 1, 2000), 'the watch is open on the server');
    t.ok(await w.waitEnd(3000));
    t.equal((w.error as GrpcStatusError).code, Code.DEADLINE_EXCEEDED);
    t.ok(await waitFor(() => s.server.openWatches === 0, 2000), 'the server closed its watch');
  });

  await t.test('a cancelled watch is closed on the server', async (t) => {
    const w = new GrpcWatch(s.g, CM);
    t.ok(await waitFor(() => s.server.openWatches === 1, 2000));
    w.cancel();
    t.ok(await w.waitEnd(2000));
    t.equal(w.error, undefined, 'a cancel asked for is no error');
    t.ok(await waitFor(() => s.server.openWatches === 0, 2000), 'the server closed its watch');
  });

  await t.test('more open calls than a connection may hold: RESOURCE_EXHAUSTED for one more, until one ends', async (t) => {
    const c = s.grpc();
    const watches = Array.from({ length: 5 }, () => new GrpcWatch(c, CM));
    t.ok(await waitFor(() => s.server.openWatches === 5, 3000), 'five watches open');
    const e = await refused(c.list(CM));
    t.equal(e?.code, Code.RESOURCE_EXHAUSTED);
    t.equal(e?.status?.code, 429);
    t.equal((await overGrpc(s.g, { verb: 'list', ref: CM })).code, Code.OK, 'another connection is not limited');
    watches[0]!.cancel();
    t.ok(await waitFor(() => s.server.openWatches === 4, 2000));
    t.equal((await overGrpc(c, { verb: 'list', ref: CM })).code, Code.OK, 'a call fits again once one ended');
    for (const w of watches) w.cancel();
    t.ok(await waitFor(() => s.server.openWatches === 0, 2000));
  });

  await t.test('a client that never reads its watch is closed as too slow, and the server keeps serving', async (t) => {
    const session = connect(`https://127.0.0.1:${s.grpcPort}`, { ca: s.ca, settings: { initialWindowSize: 65535 } });
    t.teardown(() => session.destroy());
    const m = methodOf<RequestMessage, unknown>(RESOURCES_SERVICE, 'Watch');
    const msg = m.requestSerialize(request(ref({}), { options: { resourceVersion: '0' }, accept: 'application/json' }));
    const frame = Buffer.alloc(5 + msg.length);
    frame.writeUInt32BE(msg.length, 1);
    msg.copy(frame, 5);
    const stream = session.request({ ':method': 'POST', ':path': `/${RESOURCES_SERVICE}/Watch`, 'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${ADMIN_TOKEN}` });
    stream.end(frame);
    stream.pause(); // never read: flow control stops the server's writes
    t.ok(await waitFor(() => s.server.openWatches === 1, 3000), 'the watch is open');
    const payload = 'p'.repeat(16 * 1024);
    for (let i = 0; i < 20; i++) await s.g.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `slow-${i}` }, data: { payload } });
    t.ok(await waitFor(() => s.server.openWatches === 0, 5000), 'the server closed the watch its client does not read');
    await serving();
  });
});
