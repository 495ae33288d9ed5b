/**
 * Watchers that stop reading (issue 7, point 9): the server drops them once more than
 * --watch-buffer-bytes waits for them, counting on HTTP/1.1 what the kernel holds unacknowledged (a
 * paused loopback client lets the kernel absorb about 4 MiB before Node's buffer grows), and on
 * HTTP/2 what flow control keeps in the stream's buffer. A reading watcher on the same server gets
 * every event meanwhile. Bounds are on bytes, with generous waits; nothing is timed.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { connect as h2connect } from 'node:http2';
import { connect, type TLSSocket } from 'node:tls';
import { collectThrough, rvOf } from '../helpers/watch-guarantees.js';
import { connectionKey, sendQueues } from '../../core/server/send-queues.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { SteppedSweepClock } from '../helpers/sweep-clock.js';

const CM = '/api/v1/namespaces/default/configmaps';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** `p`, or undefined after `ms` at most (a generous wait, not a bound asserted; its timer goes once `p` settles). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([p, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
const currentRv = async (s: TestServer): Promise<number> => Number((await s.admin.get(CM)).json.metadata.resourceVersion);
/** 8 KiB of data per object: an event frame of about 8.3 KiB. */
const PAYLOAD = 'x'.repeat(8 * 1024);
/** Less than the kernel absorbs for a paused loopback client before Node's buffer grows (~4 MiB). */
const WRITE_CAP_BYTES = 3 * 1024 * 1024;

/** A raw HTTP/1.1 watch whose client never reads after sending the request. */
function stuckHttp1Watch(s: TestServer, rv: number): Promise<TLSSocket> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const sock = connect({ host: u.hostname, port: Number(u.port), ca: s.ca, ALPNProtocols: ['http/1.1'] }, () => {
      sock.write(`GET ${CM}?watch=1&resourceVersion=${rv} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`);
      sock.pause();
      resolve(sock);
    });
    sock.on('error', reject);
  });
}

/**
 * Writes objects, a few at a time with pauses, until `dropped()` says the stuck watch is gone or
 * WRITE_CAP_BYTES of payload were written; returns the bytes written and the last resourceVersion.
 */
async function writeUntilDropped(s: TestServer, dropped: () => boolean): Promise<{ bytes: number; lastRv: number; count: number }> {
  let bytes = 0;
  let lastRv = 0;
  let count = 0;
  while (!dropped() && bytes < WRITE_CAP_BYTES) {
    const batch = await Promise.all(Array.from({ length: 4 }, () => s.admin.post(CM, { metadata: { generateName: 'slow-' }, data: { p: PAYLOAD } })));
    for (const r of batch) lastRv = Math.max(lastRv, rvOf(r.json));
    bytes += 4 * PAYLOAD.length;
    count += 4;
    // about 300 KiB a second: the stuck client's share waits long enough for the once-a-second sweep
    await sleep(100);
  }
  return { bytes, lastRv, count };
}

/** Resolves true once `sock` ends (it is read from now on), false after `ms`. */
function endsWithin(sock: TLSSocket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    sock.on('data', () => undefined);
    sock.on('error', () => undefined);
    sock.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
    sock.resume();
  });
}

t.test('an HTTP/1.1 watcher that stops reading is dropped before the kernel buffers fill, and a reading watcher gets every event', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());
  const start = await currentRv(s);
  const good = await s.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);
  const stuck = await stuckHttp1Watch(s, start);
  stuck.on('error', () => undefined);
  // wait until both watches are registered
  for (let i = 0; i < 100 && s.server.openWatches < 2; i++) await sleep(20);
  t.equal(s.server.openWatches, 2, 'both watches open');

  const w = await writeUntilDropped(s, () => s.server.openWatches < 2);
  t.equal(s.server.openWatches, 1, `the stuck watch was dropped after ${Math.round(w.bytes / 1024)} KiB of payload (cap ${WRITE_CAP_BYTES / 1024} KiB)`);
  t.ok(w.bytes < WRITE_CAP_BYTES, 'dropped while less was sent than the kernel would have absorbed');

  const events = await collectThrough(good, w.lastRv, 30_000);
  t.equal(events.length, w.count, 'the reading watcher got every event');
  t.ok(events.every((e) => e.type === 'ADDED'), 'all of them as ADDED');
  good.close();
  t.ok(await endsWithin(stuck, 10_000), 'read at last, the stuck connection ends (the server dropped it)');
  t.equal((await s.admin.get(CM + '?limit=1')).status, 200, 'the server keeps serving');
});

t.test('an HTTP/2 watch stream whose client stops reading is reset once flow control backs its bytes up past the bound', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow', '--watch-buffer-bytes=262144']);
  t.teardown(() => s.stop());
  const start = await currentRv(s);
  const good = await s.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);
  const session = h2connect(s.url, { ca: s.ca });
  t.teardown(() => session.close());
  session.on('error', () => undefined);
  const req = session.request({ ':path': `${CM}?watch=1&resourceVersion=${start}`, authorization: `Bearer ${ADMIN_TOKEN}` });
  let closed = false;
  req.on('error', () => undefined);
  req.on('close', () => (closed = true));
  await new Promise((r) => req.once('response', r));
  req.pause();
  for (let i = 0; i < 100 && s.server.openWatches < 2; i++) await sleep(20);
  t.equal(s.server.openWatches, 2, 'both watches open');

  const w = await writeUntilDropped(s, () => s.server.openWatches < 2);
  t.equal(s.server.openWatches, 1, `the stuck stream was dropped after ${Math.round(w.bytes / 1024)} KiB of payload`);
  const events = await collectThrough(good, w.lastRv, 30_000);
  t.equal(events.length, w.count, 'the reading watcher got every event');
  good.close();
  req.resume();
  for (let i = 0; i < 200 && !closed; i++) await sleep(50);
  t.ok(closed, 'read at last, the stuck stream ends');
  // the connection itself stays usable: only the stream was reset
  const again = session.request({ ':path': '/version', authorization: `Bearer ${ADMIN_TOKEN}` });
  const status = await new Promise<number>((resolve) => {
    again.on('response', (h) => resolve(Number(h[':status'])));
    again.on('error', () => resolve(0));
  });
  again.resume();
  t.equal(status, 200, 'other requests on the same HTTP/2 connection still work');
});

t.test('a watcher that falls behind without passing its bound gets every held event, in order, once it reads again', async (t) => {
  // the bound is 256 KiB: once Node buffers 64 KiB for the paused stream (past the client's 64 KiB
  // window), the next frames are held by the watch instead of queued; 20 events of 8.3 KiB stay under the bound
  const s = await startServer(['--authorization-mode=AlwaysAllow', '--watch-buffer-bytes=262144']);
  t.teardown(() => s.stop());
  const start = await currentRv(s);
  const session = h2connect(s.url, { ca: s.ca });
  t.teardown(() => session.close());
  session.on('error', () => undefined);
  const req = session.request({ ':path': `${CM}?watch=1&resourceVersion=${start}`, authorization: `Bearer ${ADMIN_TOKEN}` });
  await new Promise((r) => req.once('response', r));
  req.pause();
  for (let i = 0; i < 100 && s.server.openWatches < 1; i++) await sleep(20);
  const written: number[] = [];
  for (let i = 0; i < 20; i++) written.push(rvOf((await s.admin.post(CM, { metadata: { generateName: 'behind-' }, data: { p: PAYLOAD } })).json));
  await sleep(1500); // a few sweeps: a watch under its bound is not dropped
  t.equal(s.server.openWatches, 1, 'the watch that fell behind is still open');
  const seen: number[] = [];
  let rest = '';
  const done = new Promise<void>((resolve) => {
    req.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop()!;
      for (const l of lines) if (l) seen.push(rvOf(JSON.parse(l).object));
      if (seen.length >= written.length) resolve();
    });
  });
  req.resume();
  await within(done, 30_000);
  t.same(seen, written, 'every event arrives once, in the order written');
  req.close();
});

t.test('an HTTP/1.1 watcher whose unread bytes fill the kernel gets nothing more written until it reads again, then every held event in order', { skip: !existsSync('/proc/net/tcp') && 'no procfs: only Node\'s buffer is counted' }, async (t) => {
  const bound = 512 * 1024;
  // the sweep looks only when the test runs a look, on a clock of its own: each look finds what the
  // test did before it, however long the machine takes (sleeping for "a sweep and a second look" did
  // not wait for the thread that reads the kernel's table to start, which took over a second on a busy
  // machine: the events below were written before the second look held the watch)
  const clock = new SteppedSweepClock();
  const s = await startServer(['--authorization-mode=AlwaysAllow', `--watch-buffer-bytes=${bound}`], undefined, { watchSweepClock: clock });
  t.teardown(() => s.stop());
  const start = await currentRv(s);
  const sock = await stuckHttp1Watch(s, start);
  sock.on('error', () => undefined);
  // a watch that reads: once it has an event, the fan-out pass that handed it over has handed it to the
  // stuck watch too (a pass hands an event to watchers in slices of at least 32, with nothing between)
  const reader = await s.admin.stream(`${CM}?watch=1&resourceVersion=${start}`);
  for (let i = 0; i < 100 && s.server.openWatches < 2; i++) await sleep(20);
  t.equal(s.server.openWatches, 2, 'both watches open');
  const serverPort = Number(new URL(s.url).port);
  // what our kernel holds unacknowledged for the watch's connection, read as the server reads it
  const unacked = () => sendQueues()?.get(connectionKey(serverPort, sock.localPort!)) ?? 0;
  // what the server has written on it (handed to TLS, encrypted and queued for the kernel): the
  // client's kernel may still take a few KiB while the client reads nothing (7 KiB over two seconds
  // was seen), so the kernel's queue alone is not exact
  const conn = [...s.server.connections].find((c) => c.remotePort === sock.localPort);
  t.ok(conn, 'the server\'s side of the watch\'s connection');
  const sentOnConnection = () => conn!.bytesWritten;
  const written: number[] = [];
  const write = async () => written.push(rvOf((await s.admin.post(CM, { metadata: { generateName: 'held-' }, data: { p: PAYLOAD } })).json));
  // until our kernel holds more than a quarter of the bound for the connection (after what the
  // client's kernel took), by eight frames: a few KiB it may still take do not bring it under; no look
  // happens meanwhile
  const over = bound / 4 + 8 * PAYLOAD.length;
  while (unacked() <= over && written.length < 200) await write();
  await collectThrough(reader, written.at(-1)!, 30_000);
  t.ok(unacked() > over, `our kernel holds ${unacked()} bytes for the stuck client`);
  // the first look records what the client has taken; the second, a quarter second later on the
  // sweep's clock, finds that it took nothing since while more than a quarter of the bound waits in
  // our kernel, and holds the watch's next frames
  await clock.look();
  await clock.look();
  t.ok(unacked() >= bound / 4, 'the second look found more than a quarter of the bound in our kernel');
  t.equal(s.server.openWatches, 2, 'the watch is still open (less than its bound is unsent)');
  const before = sentOnConnection();
  for (let i = 0; i < 3; i++) await write();
  t.equal((await collectThrough(reader, written.at(-1)!, 30_000)).at(-1)?.object.metadata.resourceVersion, String(written.at(-1)), 'the three events were handed to the watches');
  t.equal(sentOnConnection(), before, 'events written meanwhile are held by the watch, not encrypted and queued for the connection');
  t.equal(s.server.openWatches, 2, 'and the watch stays open');
  // reading again: the client gets what our kernel held, and nothing more until a look finds it taking
  const seen: number[] = [];
  let rest = '';
  let head = true;
  let wanted = written.length - 3;
  let reached: () => void = () => undefined;
  const got = (): Promise<void> => new Promise((resolve) => (reached = resolve));
  sock.on('data', (d: Buffer) => {
    let text = rest + d.toString('latin1');
    if (head) {
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return void (rest = text);
      text = text.slice(end + 4);
      head = false;
    }
    // chunked: size lines and frames alternate; frames are the lines that are JSON
    const lines = text.split('\r\n');
    rest = lines.pop()!;
    for (const l of lines) if (l.startsWith('{')) seen.push(rvOf(JSON.parse(l).object));
    if (seen.length >= wanted) reached();
  });
  let sent = got();
  sock.resume();
  await within(sent, 30_000);
  t.same(seen, written.slice(0, -3), 'reading again, the client gets what was sent before the hold');
  wanted = written.length;
  sent = got();
  // the next look finds the kernel's queue gone: the held events follow, in order
  await clock.look();
  await within(sent, 30_000);
  t.same(seen, written, 'every event arrives once, in the order written');
  t.equal(s.server.openWatches, 2, 'the watch was never dropped');
  reader.close();
  sock.destroy();
});
