/**
 * Issue 26, item 9: a body past the 3 MiB limit, however the client sends it, gets the 413 Status
 * and a connection that ends cleanly. The answer goes out as soon as the limit is passed; the rest of
 * the body is read and dropped (up to 16 MiB / 15 s) so that closing finds nothing unread (an unread
 * byte makes the kernel close with RST, and a client still sending, or one that has not read the
 * answer yet, then loses it). HTTP/1.1 clients that send it all before reading, ones that stop
 * sending when the answer arrives (Go's, curl), and ones that give up sending (their side ended with
 * the body cut short: the answer is still the 413, not a 400), chunked or with a Content-Length, with
 * or without Expect: 100-continue; an HTTP/2 stream past the limit gets the 413 and, past the bound,
 * an RST_STREAM NO_ERROR, while the session's other streams go on.
 */
import t, { type Test } from 'tap';
import { connect as h2connect, constants as h2constants, type ClientHttp2Session } from 'node:http2';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { uploadRaw, type UploadOptions, type UploadResult } from '../helpers/raw-http.js';

const CM = '/api/v1/namespaces/default/configmaps';
const LIMIT = 3 * 1024 * 1024;
const MESSAGE = `Request entity too large: limit is ${LIMIT}`;
/** Within what the server reads on after the 413 (16 MiB): a client that writes it all gets to. */
const WITHIN = 8 * 1024 * 1024;
/** What the server reads on (and drops) after refusing a body, at most. */
const READ_ON = 16 * 1024 * 1024;
/** Past the limit and what the server reads on after it together. */
const PAST = 64 * 1024 * 1024;

let s: TestServer;
t.before(async () => {
  s = await startServer(['--authorization-mode=AlwaysAllow']);
});
t.teardown(() => s.stop());

const framings: { name: string; o: Pick<UploadOptions, 'chunked' | 'expectContinue'> }[] = [
  { name: 'chunked', o: { chunked: true } },
  { name: 'Content-Length', o: { chunked: false } },
  { name: 'Content-Length and Expect: 100-continue', o: { chunked: false, expectContinue: true } },
];

/** What a client must see: the whole 413 Status, Connection: close, then the server's clean end. */
function summary(r: UploadResult): string {
  const status = r.json
    ? `${r.status} ${r.json.kind}/${r.json.status}/${r.json.reason}/${r.json.code}: ${r.json.message}`
    : `${r.status} ${JSON.stringify(r.body.slice(0, 80))}`;
  return `${status}; connection: ${r.headers.connection}; extra ${JSON.stringify(r.extra)}; ${r.ended ? 'ended' : 'not ended'}${r.error ? ` (${r.error})` : ''}`;
}
const EXPECTED = `413 Status/Failure/RequestEntityTooLarge/413: ${MESSAGE}; connection: close; extra ""; ended`;

async function stillServes(t: Test): Promise<void> {
  const r = await s.admin.post(CM, { metadata: { generateName: 'after-413-' } });
  t.equal(r.status, 201, 'the server goes on serving');
}

for (const f of framings) {
  const atOnce = f.o.expectContinue ? ' (not waiting for the 100 Continue)' : '';
  t.test(`HTTP/1.1, ${f.name}: a client that writes all of an 8 MiB body${atOnce} before it reads gets the whole 413 and a clean end, 20 times`, async (t) => {
    const seen: string[] = [];
    // four at a time: the server answers while other uploads are running
    for (let round = 0; round < 5; round++) {
      const rs = await Promise.all(Array.from({ length: 4 }, () => uploadRaw(s, { ...f.o, size: WITHIN, client: 'whole' })));
      seen.push(...rs.map(summary));
    }
    t.same(seen, Array(20).fill(EXPECTED));
    await stillServes(t);
  });

  const waits = f.o.expectContinue ? ', sending once the 100 Continue came (curl),' : '';
  t.test(`HTTP/1.1, ${f.name}: a client that stops sending when the answer comes${waits} gets the 413 early in a 64 MiB body, and a clean end`, async (t) => {
    const seen: string[] = [];
    const late: number[] = [];
    for (let round = 0; round < 5; round++) {
      const rs = await Promise.all(Array.from({ length: 2 }, () => uploadRaw(s, { ...f.o, size: PAST, client: 'stop' })));
      seen.push(...rs.map(summary));
      late.push(...rs.filter((r) => r.sentBeforeAnswer >= READ_ON).map((r) => r.sentBeforeAnswer));
    }
    t.same(seen, Array(10).fill(EXPECTED));
    // the answer is written before any more of the body is read: the client has sent at most the limit
    // and what the connection's buffers hold when it comes, not what the server reads on after it
    t.same(late, [], 'each answer came before 16 MiB of the body were sent');
    await stillServes(t);
  });

  t.test(`HTTP/1.1, ${f.name}: a client that gives up sending a 64 MiB body after 5 MiB gets the 413, not a 400 for the body cut short`, async (t) => {
    const rs = await Promise.all(Array.from({ length: 4 }, () => uploadRaw(s, { ...f.o, size: PAST, client: 'quit', quitAfter: 5 * 1024 * 1024 })));
    t.same(rs.map(summary), Array(4).fill(EXPECTED));
    await stillServes(t);
  });
}

interface H2Upload {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  /** Bytes of the body the client had written when its stream closed. */
  sent: number;
  rstCode: number | undefined;
  error?: string;
}

/**
 * A POST stream of `size` bytes, written as the stream takes it and never stopped by the client
 * (one that ignores the answer): the server's answer and how the stream ended.
 */
function h2upload(session: ClientHttp2Session, size: number): Promise<H2Upload> {
  return new Promise((resolve) => {
    const req = session.request({ ':method': 'POST', ':path': CM, authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' });
    let status = 0;
    let body = '';
    let sent = 0;
    let error: string | undefined;
    let closed = false;
    req.on('response', (h) => (status = Number(h[':status'])));
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    req.on('close', () => {
      closed = true;
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ status, json, sent, rstCode: req.rstCode, error });
    });
    const piece = Buffer.alloc(64 * 1024, 0x20);
    void (async () => {
      while (sent < size && !closed) {
        const n = Math.min(piece.length, size - sent);
        sent += n;
        if (!req.write(piece.subarray(0, n))) await new Promise<void>((r) => (req.once('drain', r), req.once('close', r)));
      }
      if (!closed) req.end();
    })();
  });
}

t.test('HTTP/2: a stream past the limit gets the 413; past what is read on, an RST_STREAM NO_ERROR; the session\'s other streams go on', async (t) => {
  const session = h2connect(s.url, { ca: s.ca });
  t.teardown(() => session.close());
  session.on('error', () => undefined);
  const start = Number((await s.admin.get(CM)).json.metadata.resourceVersion);
  // another stream of the session: a watch that must see what is written meanwhile
  const watch = session.request({ ':path': `${CM}?watch=1&resourceVersion=${start}`, authorization: `Bearer ${ADMIN_TOKEN}` });
  watch.setEncoding('utf8');
  const names: string[] = [];
  let rest = '';
  let sawCreate: () => void = () => undefined;
  const created = new Promise<void>((r) => (sawCreate = r));
  watch.on('data', (d: string) => {
    const lines = (rest + d).split('\n');
    rest = lines.pop()!;
    for (const l of lines) names.push(JSON.parse(l).object.metadata.name);
    if (names.includes('h2-after-413')) sawCreate();
  });
  await new Promise((r) => watch.once('response', r));

  const within = await Promise.all([h2upload(session, WITHIN), h2upload(session, WITHIN)]);
  for (const r of within) {
    t.equal(r.status, 413, `${WITHIN} bytes: ${JSON.stringify(r.json)} ${r.error ?? ''}`);
    t.equal(r.json?.message, MESSAGE);
    t.equal(r.json?.reason, 'RequestEntityTooLarge');
    t.equal(r.sent, WITHIN, 'a body within what is read on is read to its end');
    t.equal(r.error, undefined, 'no stream error');
  }
  const past = await Promise.all([h2upload(session, PAST), h2upload(session, PAST)]);
  for (const r of past) {
    t.equal(r.status, 413, `${PAST} bytes: ${JSON.stringify(r.json)} ${r.error ?? ''}`);
    t.equal(r.json?.message, MESSAGE);
    t.equal(r.rstCode, h2constants.NGHTTP2_NO_ERROR, 'the stream ends without an error code');
    t.equal(r.error, undefined, 'no stream error');
    t.ok(r.sent < PAST, `the client was stopped after ${r.sent} of ${PAST} bytes`);
  }

  // the same session: a body under the limit and a read, and the watch saw them
  const ok = session.request({ ':method': 'POST', ':path': CM, authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' });
  const code = await new Promise<number>((resolve) => {
    ok.on('response', (h) => resolve(Number(h[':status'])));
    ok.on('error', () => resolve(0));
    ok.resume();
    // (under the watch's 256 KiB bound: a larger event would end the watch as too slow)
    ok.end(JSON.stringify({ metadata: { name: 'h2-after-413' }, data: { a: 'x'.repeat(128 * 1024) } }));
  });
  t.equal(code, 201, 'a body under the limit on the same session is served');
  await Promise.race([created, new Promise((r) => watch.once('close', r))]);
  t.same(names, ['h2-after-413'], 'the watch on the same session saw the create, and nothing of the refused bodies');
  watch.close();
});
