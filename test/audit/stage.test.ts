/**
 * The audit stage around handlers the API server does not have on purpose: one that throws
 * unexpectedly (upstream's Panic stage) and one that streams its answer in chunks. A real loopback
 * HTTP server runs the real adapter and chain; events go to a real log file.
 */
import t from 'tap';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { Auditor } from '../../core/audit/auditor.js';
import { LogBackend } from '../../core/audit/log-backend.js';
import { parsePolicy } from '../../core/audit/policy.js';
import { buildChain, type Handler } from '../../core/server/chain.js';
import { httpAdapter } from '../../core/server/http.js';
import { withAudit } from '../../core/server/stages/audit.js';
import { withRequestInfo } from '../../core/server/stages/request-info.js';
import { GroupAliases } from '../../core/api/group-aliases.js';
import { eventsOf } from '../helpers/audit.js';
import { tempDir } from '../helpers/server.js';

const routes: Record<string, Handler> = {
  '/throws': () => {
    throw new TypeError('boom');
  },
  '/rejects': async () => {
    await new Promise((r) => setTimeout(r, 5));
    throw new RangeError('late boom');
  },
  '/chunks': (s) => s.sink.sendChunks(200, 'application/json', [Buffer.from('{"kind":"Thing",'), Buffer.from('"items":[1,2,3]}')]),
  // annotations added out of order, as stages and handlers add them (the event has none before these)
  '/annotated': (s) => {
    for (const [k, v] of [['z.example/last', '1'], ['a.example/first', '2'], ['svc.io/deprecated', 'true'], ['A.example/upper', '3'], ['a.example/\u{1f600}', '4'], ['a.example/\uff21', '5']]) s.audit!.annotate(k!, v!);
    s.sink.send(200, 'application/json', Buffer.from('{}'));
  },
};

async function serve(level: string): Promise<{ url: string; log: string; close: () => Promise<void> }> {
  const log = join(tempDir('svc-audit-stage-'), 'audit.log');
  const auditor = new Auditor(parsePolicy(`apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n- level: ${level}\n`), [new LogBackend({ path: log, maxAgeDays: 0, maxBackups: 0, maxSizeMB: 0, mode: 'blocking', bufferSize: 1 }, 'audit.svc.io/v1')]);
  const chain = buildChain([withRequestInfo(new GroupAliases({ generation: 0, groups: () => new Set<string>() }, false)), withAudit(auditor)], (s) => routes[s.path]!(s));
  const server: Server = createServer(httpAdapter(chain, false));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, log, close: () => new Promise((r) => server.close(() => void auditor.shutdown().then(() => r()))) };
}

const get = (url: string): Promise<{ status: number; id: string; body: string }> =>
  new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, id: res.headers['audit-id'] as string, body }));
    })
      .on('error', reject)
      .end();
  });

t.test('a handler that throws unexpectedly is audited at the Panic stage with a 500, and nothing after', async (t) => {
  const srv = await serve('Metadata');
  t.teardown(srv.close);
  for (const [path, message] of [
    ['/throws', "APIServer panic'd: TypeError: boom"],
    ['/rejects', "APIServer panic'd: RangeError: late boom"],
  ] as const) {
    const r = await get(`${srv.url}${path}`);
    t.equal(r.status, 500, `${path} is answered 500`);
    const evs = await eventsOf(srv.log, r.id, 2);
    t.same(
      evs.map((e) => e.stage),
      ['RequestReceived', 'Panic'],
      `${path}: no ResponseComplete after a Panic`,
    );
    t.same(evs[1]!.responseStatus, { metadata: {}, status: 'Failure', message, reason: 'InternalError', code: 500 });
  }
});

t.test('a chunked answer is logged whole as the response object at RequestResponse', async (t) => {
  const srv = await serve('RequestResponse');
  t.teardown(srv.close);
  const r = await get(`${srv.url}/chunks`);
  t.equal(r.status, 200);
  t.equal(r.body, '{"kind":"Thing","items":[1,2,3]}', 'the client gets every chunk');
  const evs = await eventsOf(srv.log, r.id, 2);
  t.same(evs[1]!.responseObject, { kind: 'Thing', items: [1, 2, 3] });
});

t.test("annotations are written with their keys sorted, as upstream's JSON writes a Go map, whatever order they were added in", async (t) => {
  const srv = await serve('Metadata');
  t.teardown(srv.close);
  const r = await get(`${srv.url}/annotated`);
  t.equal(r.status, 200);
  const evs = await eventsOf(srv.log, r.id, 2);
  const done = evs.find((e) => e.stage === 'ResponseComplete');
  if (!t.ok(done, 'ResponseComplete')) return;
  // JSON.parse keeps the keys in the order the line has them; Go sorts by UTF-8 bytes (U+FF21 before U+1F600)
  t.same(Object.keys(done!.annotations), ['A.example/upper', 'a.example/first', 'a.example/\uff21', 'a.example/\u{1f600}', 'svc.io/deprecated', 'z.example/last']);
  t.same(done!.annotations['z.example/last'], '1');
});
