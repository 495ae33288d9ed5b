/**
 * Overload: what clients that misbehave cost everyone else (issue 7, points 6-10). Each case runs on
 * its own fresh server, measures the harm done to well-behaved traffic while the misbehaving clients
 * are at it, and what is left afterwards (slots, connections, memory).
 *
 *   slots     slow uploads that time out, then unread large answers: are write and read slots given back?
 *   probes    reads saturating --max-requests-inflight: /readyz and system:masters answered?
 *   slowloris connections sending a header byte a second, and silent TCP connections: cut after 32 s?
 *   watchers  1,000 watchers that never read beside 20 that do, at 100 writes/s: fast delivery, write
 *             latency, slow watchers closed, RSS during and after (watchers-h2: the 1,000 over HTTP/2)
 *   bodies    8 concurrent deeply nested YAML bodies: small writes' latency meanwhile
 *   memory    a burst of large objects written, read and deleted: does RSS come back near its baseline?
 *
 * `npm run bench -- overload --case=watchers,memory` runs some of them.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as h2connect } from 'node:http2';
import type { Duplex } from 'node:stream';
import { connect, type TLSSocket } from 'node:tls';
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import { AUTH, type Mode, SetupClient, TOKEN, load, rssMiB, startApiServer } from '../lib.js';
import { connectionKey, sendQueues } from '../../core/server/send-queues.js';

export interface OverloadRow {
  scenario: string;
  mode: string;
  /** What the well-behaved traffic saw. */
  observed: string;
  /** What is left afterwards. */
  after: string;
  target: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : 0;
};

function tls(url: URL, ca: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: url.hostname, port: Number(url.port), ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => resolve(sock));
    sock.on('error', reject);
  });
}

/** Resolves once the socket is closed by the other side (or `ms` passes: false). */
function closedWithin(sock: Duplex, ms: number): Promise<boolean> {
  if (sock.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    sock.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/** Times `n` sequential small creates; returns their latencies (ms) and how many were not 201. */
async function smallWrites(c: SetupClient, ns: string, n: number, gapMs = 0): Promise<{ latencies: number[]; failed: number; codes: Map<number, number> }> {
  const latencies: number[] = [];
  const codes = new Map<number, number>();
  let failed = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await c.send('POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { generateName: 'small-' }, data: { i: String(i) } });
    latencies.push(performance.now() - t0);
    codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
    if (r.status !== 201) failed++;
    if (gapMs) await sleep(gapMs);
  }
  return { latencies, failed, codes };
}

/** The server's main-thread heap in use and its memory outside the heap (Buffers), in MiB, from /metrics. */
async function heapAndExternal(c: SetupClient): Promise<string> {
  const text = (await c.send('GET', '/metrics')).text;
  const mib = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1048576;
  return `heap ${mib('nodejs_heap_size_used_bytes').toFixed(0)}/external ${mib('nodejs_external_memory_bytes').toFixed(0)} MiB`;
}

/** Anonymous memory beside mapped file pages (the store's memory map, which the kernel can take back) of a process's RSS. */
function anonAndFile(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (f: string) => Number(new RegExp(`${f}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return `RSS anonymous ${mib('RssAnon').toFixed(0)} + file ${mib('RssFile').toFixed(0)} MiB`;
}

const codesText = (codes: Map<number, number>): string => [...codes].map(([c, n]) => `${n}x${c}`).join(' ');

/** Point 6: slots come back after slow uploads time out and after unread answers are cut. */
async function slots(mode: Mode): Promise<OverloadRow> {
  const s = await startApiServer([...mode.flags, '--max-mutating-requests-inflight=4', '--max-requests-inflight=4', '--request-timeout=3s']);
  const url = new URL(s.url);
  const socks: TLSSocket[] = [];
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'slots' } });
    // a list large enough that an unread answer fills the socket buffers
    await c.many(400, 8, (i) => ['POST', '/api/v1/namespaces/slots/configmaps', { metadata: { name: `big-${i}` }, data: { v: 'x'.repeat(8000) } }]);
    // 8 uploads (twice the write slots) that declare a body and send one byte a second
    for (let i = 0; i < 8; i++) {
      const sock = await tls(url, s.ca);
      sock.on('error', () => undefined);
      sock.write(`POST /api/v1/namespaces/slots/configmaps HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`);
      const t = setInterval(() => (sock.destroyed ? clearInterval(t) : sock.write(' ')), 1000);
      sock.once('close', () => clearInterval(t));
      socks.push(sock);
    }
    // 8 clients that ask for the large list and never read it
    for (let i = 0; i < 8; i++) {
      const sock = await tls(url, s.ca);
      sock.on('error', () => undefined);
      sock.pause();
      sock.write(`GET /api/v1/namespaces/slots/configmaps HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      socks.push(sock);
    }
    const during = await smallWrites(c, 'slots', 20, 100);
    // past the request timeout: every slot must be back
    await sleep(6000);
    const after = await smallWrites(c, 'slots', 200);
    const reads = await c.send('GET', '/api/v1/namespaces/slots/configmaps?limit=1');
    const stillOpen = socks.filter((x) => !x.destroyed).length;
    c.close();
    return {
      scenario: 'slots: 8 slow uploads + 8 unread large lists (4 write, 4 read slots, 3 s timeout)',
      mode: mode.name,
      observed: `small writes meanwhile: ${codesText(during.codes)}`,
      after: `200 writes: ${codesText(after.codes)}; a read: ${reads.status}; ${stillOpen}/16 slow connections open`,
      target: 'every slot back after the timeout: 200x201',
    };
  } finally {
    for (const x of socks) x.destroy();
    await s.stop();
  }
}

/** Point 7: probes and system:masters are exempt from the in-flight limits. */
async function probes(mode: Mode): Promise<OverloadRow> {
  // the saturating reads come from an ordinary user (system:masters is exempt from the limit)
  const s2 = await startApiServer([...mode.flags, '--max-requests-inflight=2', '--authorization-mode=AlwaysAllow'], ['bench-user-token,bench-user,uid-user']);
  try {
    const c = new SetupClient(s2.url, s2.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'probes' } });
    await c.many(200, 8, (i) => ['POST', '/api/v1/namespaces/probes/configmaps', { metadata: { name: `cm-${i}` }, data: { v: 'x'.repeat(1000) } }]);
    const saturate = load({
      url: `${s2.url}/api/v1/namespaces/probes/configmaps`,
      headers: { authorization: 'Bearer bench-user-token' },
      connections: 64,
      duration: 8,
      tlsOptions: { ca: s2.ca },
    });
    await sleep(3000);
    const probeCodes = new Map<number, number>();
    const masterCodes = new Map<number, number>();
    for (let i = 0; i < 40; i++) {
      const p = await c.send('GET', '/readyz');
      probeCodes.set(p.status, (probeCodes.get(p.status) ?? 0) + 1);
      const m = await c.send('GET', '/api/v1/namespaces/probes/configmaps/cm-1');
      masterCodes.set(m.status, (masterCodes.get(m.status) ?? 0) + 1);
      await sleep(50);
    }
    const r = await saturate;
    c.close();
    return {
      scenario: 'probes: reads saturating --max-requests-inflight=2 (64 connections)',
      mode: mode.name,
      observed: `saturating reads: ${r.non2xx} non-2xx of ${Math.round(r.rps * 8)}; /readyz: ${codesText(probeCodes)}; system:masters GET: ${codesText(masterCodes)}`,
      after: '',
      target: '/readyz and system:masters never 429',
    };
  } finally {
    await s2.stop();
  }
}

/** Point 8: connections that do not speak are cut (32 s header / handshake timeout). */
async function slowloris(mode: Mode, n: number): Promise<OverloadRow> {
  const s = await startApiServer(mode.flags);
  const url = new URL(s.url);
  const dribblers: TLSSocket[] = [];
  const silent: Socket[] = [];
  try {
    const rss0 = rssMiB(s.proc.pid!);
    for (let i = 0; i < n; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, n - i) }, async () => {
          const sock = await tls(url, s.ca);
          sock.on('error', () => undefined);
          return sock;
        }),
      );
      dribblers.push(...batch);
    }
    const header = `GET /version HTTP/1.1\r\nHost: ${url.host}\r\nX-Slow: ${'a'.repeat(200)}`;
    let pos = 0;
    const drip = setInterval(() => {
      const ch = header[pos++ % header.length]!;
      for (const d of dribblers) if (!d.destroyed) d.write(ch);
    }, 1000);
    for (let i = 0; i < n; i++) {
      const sock = tcpConnect({ host: url.hostname, port: Number(url.port) });
      sock.on('error', () => undefined);
      silent.push(sock);
    }
    const c = new SetupClient(s.url, s.ca);
    const t0 = performance.now();
    const during = await c.send('GET', '/version');
    const duringMs = performance.now() - t0;
    const rssDuring = rssMiB(s.proc.pid!);
    const results = await Promise.all([...dribblers.map((d) => closedWithin(d, 45_000)), ...silent.map((x) => closedWithin(x, 45_000))]);
    clearInterval(drip);
    const closedDribblers = results.slice(0, n).filter(Boolean).length;
    const closedSilent = results.slice(n).filter(Boolean).length;
    c.close();
    return {
      scenario: `slowloris: ${n} TLS connections sending a header byte a second + ${n} silent TCP connections`,
      mode: mode.name,
      observed: `GET /version meanwhile: ${during.status} in ${duringMs.toFixed(0)} ms; RSS ${rss0.toFixed(0)} -> ${rssDuring.toFixed(0)} MiB`,
      after: `within 45 s: ${closedDribblers}/${n} dribbling and ${closedSilent}/${n} silent connections closed by the server`,
      target: 'all closed (32 s timeout)',
    };
  } finally {
    for (const d of dribblers) d.destroy();
    for (const x of silent) x.destroy();
    await s.stop();
  }
}

class CountingWatcher {
  readonly seen = new Map<number, number>();
  closedAt: number | undefined;
  private tail = '';
  constructor(
    /** The connection (HTTP/1.1) or stream (HTTP/2) the watch arrives on. */
    readonly sock: Duplex,
    /** Never read, read and count the events, or read and drop them (the control case's many watchers). */
    reads: boolean | 'drain',
  ) {
    sock.on('error', () => undefined);
    sock.once('close', () => (this.closedAt = performance.now()));
    if (!reads) {
      sock.pause();
      return;
    }
    if (reads === 'drain') {
      sock.on('data', () => undefined);
      return;
    }
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => {
      const now = performance.now();
      const text = this.tail + chunk;
      const re = /"resourceVersion":"(\d+)"/g;
      let last = 0;
      for (let m = re.exec(text); m; m = re.exec(text)) {
        if (!this.seen.has(Number(m[1]))) this.seen.set(Number(m[1]), now);
        last = re.lastIndex;
      }
      this.tail = text.slice(Math.max(last, text.length - 40));
    });
  }
}

/** A watch on its own HTTP/2 connection whose stream is never read (flow control stops the server's DATA frames). */
function stuckH2Watch(base: string, ca: string, path: string): CountingWatcher {
  const session = h2connect(base, { ca, servername: 'localhost' });
  session.on('error', () => undefined);
  const req = session.request({ ':path': path, authorization: `Bearer ${TOKEN}`, accept: 'application/json' });
  req.once('close', () => session.close());
  const w = new CountingWatcher(req, false);
  // destroying the watch takes its connection with it
  const destroy = req.destroy.bind(req);
  req.destroy = (err?: Error) => {
    session.destroy();
    return destroy(err);
  };
  return w;
}

/**
 * How many of the watchers' HTTP/1.1 connections the server no longer holds open (its side is not
 * ESTABLISHED in the kernel's table): a paused client cannot see its connection end, and with
 * megabytes queued towards it the end may take long to arrive once it reads.
 */
async function connectionsGone(serverPort: number, watchers: CountingWatcher[]): Promise<number> {
  const open = sendQueues();
  if (!open) return NaN;
  return watchers.filter((w) => !open.has(connectionKey(serverPort, (w.sock as TLSSocket).localPort!))).length;
}

/** How many of the watchers' HTTP/2 streams end within 5 s once read (a reset stream ends at once). */
async function streamsEnded(watchers: CountingWatcher[]): Promise<number> {
  for (const w of watchers) w.sock.resume();
  return (await Promise.all(watchers.map((w) => closedWithin(w.sock, 5000)))).filter(Boolean).length;
}

/**
 * Point 9: watchers that never read cannot hurt the others, and memory comes back. `control`: the
 * same number of watchers that do read (and drop what they get), for what the writes and the fast
 * watchers see when nobody is stuck: the fan-out's own cost on these cores. With `slow` 0, the
 * writes and the counted watchers alone: what memory and write latency come back to.
 */
async function slowWatchers(mode: Mode, slow: number, fast: number, rate: number, seconds: number, slowOverH2 = false, control = false): Promise<OverloadRow> {
  const s = await startApiServer(mode.flags);
  const url = new URL(s.url);
  const pid = s.proc.pid!;
  const all: CountingWatcher[] = [];
  // a paused client cannot see its connection end: the server's log says when it dropped a watch
  const drops: number[] = [];
  s.proc.stderr!.on('data', (d: Buffer) => {
    for (const _ of String(d).matchAll(/watcher is too slow/g)) drops.push(performance.now());
  });
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'slow' } });
    const rss0 = rssMiB(pid);
    const path = '/api/v1/namespaces/slow/configmaps?watch=1&resourceVersion=0&timeoutSeconds=3600';
    const open = async (reads: boolean | 'drain') => {
      const sock = await tls(url, s.ca);
      sock.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKEN}\r\nAccept: application/json\r\n\r\n`);
      return new CountingWatcher(sock, reads);
    };
    const openSlow = async () => (control ? open('drain') : slowOverH2 ? stuckH2Watch(s.url, s.ca, path) : open(false));
    for (let i = 0; i < slow; i += 50) all.push(...(await Promise.all(Array.from({ length: Math.min(50, slow - i) }, openSlow))));
    const fastOnes: CountingWatcher[] = [];
    for (let i = 0; i < fast; i++) fastOnes.push(await open(true));
    all.push(...fastOnes);
    await sleep(500);
    const acks = new Map<number, number>();
    const writeLatencies: number[] = [];
    /** When each write was sent, beside its latency: writes sent after the last drop met no slow watcher. */
    const writeStarts: number[] = [];
    let peak = 0;
    const total = rate * seconds;
    const t0 = performance.now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const wait = t0 + (i * 1000) / rate - performance.now();
      if (wait > 1) await sleep(wait);
      const started = performance.now();
      inflight.push(
        c.send('POST', '/api/v1/namespaces/slow/configmaps', { metadata: { generateName: 'w-' }, data: { v: 'x'.repeat(2000) } }).then((r) => {
          const at = performance.now();
          writeLatencies.push(at - started);
          writeStarts.push(started);
          acks.set(Number(/"resourceVersion":"(\d+)"/.exec(r.text)?.[1]), at);
        }),
      );
      if (i % rate === 0) peak = Math.max(peak, rssMiB(pid));
    }
    await Promise.all(inflight);
    await sleep(2000);
    const delays: number[] = [];
    let missing = 0;
    for (const w of fastOnes) {
      for (const [rv, ack] of acks) {
        const at = w.seen.get(rv);
        if (at === undefined) missing++;
        else delays.push(Math.max(0, at - ack));
      }
    }
    const rssDuring = Math.max(peak, rssMiB(pid));
    // resumed, a slow watcher the server dropped ends at once; one still served keeps streaming
    const slowOnes = all.slice(0, slow);
    const slowClosed = control ? slowOnes.filter((w) => w.closedAt !== undefined).length : slowOverH2 ? await streamsEnded(slowOnes) : await connectionsGone(Number(url.port), slowOnes);
    const dropAt = (p: number) => (drops.length ? ((percentile(drops, p) - t0) / 1000).toFixed(1) : '-');
    const lastDrop = drops.length ? Math.max(...drops) : Infinity;
    const afterDrops = writeLatencies.filter((_, i) => writeStarts[i]! > lastDrop);
    for (const w of all) w.sock.destroy();
    // long enough for the server's memory reclaimer (every 5 s) to have looked twice
    await sleep(12_000);
    const rssAfter = rssMiB(pid);
    c.close();
    const alone = slow === 0;
    const rss = `RSS ${rss0.toFixed(0)} -> ${rssDuring.toFixed(0)} -> ${rssAfter.toFixed(0)} MiB 12 s after ${alone ? 'the writes' : 'they left'}`;
    const writeP99 = `write p99 ${percentile(writeLatencies, 99).toFixed(0)} ms${afterDrops.length ? ` (${percentile(afterDrops, 99).toFixed(0)} ms for writes sent after the last drop)` : ''}`;
    return {
      scenario: alone
        ? `alone: ${fast} watchers that read, ${rate} writes/s of 2 KB for ${seconds} s (no other watchers)`
        : control
          ? `control: ${slow} watchers that read + ${fast} counted, ${rate} writes/s of 2 KB for ${seconds} s (nobody stuck)`
          : `slow watchers: ${slow} that never read${slowOverH2 ? ' (HTTP/2, one connection each)' : ''} + ${fast} that do, ${rate} writes/s of 2 KB for ${seconds} s`,
      mode: mode.name,
      observed: `fast watchers' delivery p99 ${percentile(delays, 99).toFixed(0)} ms (${missing} missing); ${writeP99}`,
      after: alone
        ? rss
        : control
          ? `${slowClosed}/${slow} reading watchers closed (${drops.length} dropped by the server); ${rss}`
          : `${slowClosed}/${slow} slow watchers closed (${drops.length} dropped by the server, half by ${dropAt(50)} s and all by ${dropAt(100)} s into the writes); ${rss}`,
      target: alone
        ? 'the baseline: write latency and RSS with the same writes and no other watchers'
        : control
          ? 'none dropped (the baseline for the slow-watcher rows)'
          : 'slow ones closed, fast p99 and write p99 < 100 ms',
    };
  } finally {
    for (const w of all) w.sock.destroy();
    await s.stop();
  }
}

/** Point 10: hostile bodies cost milliseconds; small writes are not held up behind them. */
async function expensiveBodies(mode: Mode, n: number): Promise<OverloadRow> {
  const s = await startApiServer(mode.flags);
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'bodies' } });
    const base = await smallWrites(c, 'bodies', 50);
    // just under the 3 MiB body limit: a YAML flow sequence nested as deep as it goes
    const depth = 1_000_000;
    const yaml = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: deep-\ndata:\n  a: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
    // the SetupClient sends JSON bodies: send the YAML ones raw
    const raw = Array.from({ length: n }, () => rawPost(s.url, s.ca, '/api/v1/namespaces/bodies/configmaps', yaml));
    const during = await smallWrites(c, 'bodies', 50);
    const hostileMs = await Promise.all(raw);
    c.close();
    return {
      scenario: `bodies: ${n} concurrent YAML bodies nested ${depth.toLocaleString('en-US')} deep (3 MB)`,
      mode: mode.name,
      observed: `small writes p99 ${percentile(base.latencies, 99).toFixed(0)} ms alone, ${percentile(during.latencies, 99).toFixed(0)} ms meanwhile (${codesText(during.codes)})`,
      after: `hostile bodies answered ${[...new Set(hostileMs.map((h) => h.code))].join(', ')} in ${percentile(hostileMs.map((h) => h.ms), 99).toFixed(0)} ms (p99)`,
      target: '400 in milliseconds; small writes unaffected',
    };
  } finally {
    await s.stop();
  }
}

/** Point 5: RSS comes back near its baseline after a burst of large objects. */
async function memoryBurst(mode: Mode, objects: number, objectBytes: number): Promise<OverloadRow> {
  const s = await startApiServer(mode.flags);
  const pid = s.proc.pid!;
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'burst' } });
    await sleep(1000);
    const rss0 = rssMiB(pid);
    const value = 'x'.repeat(objectBytes);
    let peak = rss0;
    const breakdown: string[] = [`before: ${await heapAndExternal(c)}`];
    await c.many(objects, 8, (i) => {
      if (i % 20 === 0) peak = Math.max(peak, rssMiB(pid));
      return ['POST', '/api/v1/namespaces/burst/configmaps', { metadata: { name: `large-${i}` }, data: { v: value } }];
    });
    peak = Math.max(peak, rssMiB(pid));
    breakdown.push(`written: RSS ${rssMiB(pid).toFixed(0)} MiB, ${await heapAndExternal(c)}`);
    // whole lists of it, twice
    for (let i = 0; i < 2; i++) {
      await c.send('GET', '/api/v1/namespaces/burst/configmaps');
      peak = Math.max(peak, rssMiB(pid));
    }
    breakdown.push(`listed: RSS ${rssMiB(pid).toFixed(0)} MiB, ${await heapAndExternal(c)}`);
    await c.send('DELETE', '/api/v1/namespaces/burst/configmaps');
    peak = Math.max(peak, rssMiB(pid));
    await sleep(10_000);
    const after = rssMiB(pid);
    breakdown.push(`after: ${await heapAndExternal(c)}, ${anonAndFile(pid)}`);
    console.log(`    memory: ${breakdown.join('; ')}`);
    c.close();
    return {
      scenario: `memory: ${objects} ConfigMaps of ${(objectBytes / 1e6).toFixed(1)} MB written, listed twice, deleted`,
      mode: mode.name,
      observed: `RSS ${rss0.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB`,
      after: `RSS ${after.toFixed(0)} MiB 10 s after the delete (${anonAndFile(pid)})`,
      target: 'back near the baseline (within the watch cache byte bound)',
    };
  } finally {
    await s.stop();
  }
}

async function rawPost(base: string, ca: string, path: string, body: string): Promise<{ code: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(new URL(path, base), { method: 'POST', ca, agent: false, headers: { ...AUTH, 'content-type': 'application/yaml', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ code: res.statusCode ?? 0, ms: performance.now() - t0 }));
    });
    req.on('error', () => resolve({ code: 0, ms: performance.now() - t0 }));
    req.end(body);
  });
}

/** The cases by name; `npm run bench -- overload --case=watchers,memory` runs some of them. */
export async function overload(mode: Mode, only: readonly string[] = []): Promise<OverloadRow[]> {
  const rows: OverloadRow[] = [];
  const cases: [string, () => Promise<OverloadRow>][] = [
    ['slots', () => slots(mode)],
    ['probes', () => probes(mode)],
    ['slowloris', () => slowloris(mode, 1000)],
    ['watchers', () => slowWatchers(mode, 1000, 20, 100, 30)],
    ['watchers-h2', () => slowWatchers(mode, 1000, 20, 100, 30, true)],
    ['watchers-control', () => slowWatchers(mode, 1000, 20, 100, 30, false, true)],
    ['watchers-alone', () => slowWatchers(mode, 0, 20, 100, 30)],
    ['bodies', () => expensiveBodies(mode, 8)],
    ['memory', () => memoryBurst(mode, 300, 900_000)],
  ];
  for (const [name, run] of cases) {
    if (only.length && !only.includes(name)) continue;
    const r = await run();
    console.log(`  ${r.scenario} [${r.mode}]: ${r.observed}; ${r.after}`);
    rows.push(r);
  }
  return rows;
}
