/**
 * Watch fan-out: N watchers on one resource (raw TLS sockets speaking HTTP/1.1, so the client spends
 * as little CPU as possible) while a writer creates ConfigMaps at a fixed rate. For every event at
 * every watcher we record the delay from the write's acknowledgement (the 201 reaching the writer)
 * to delivery; an event delivered before its acknowledgement counts as 0. Rates step up until p99
 * exceeds the target or events go missing, to find the highest rate that holds.
 */
import { connect, type TLSSocket } from 'node:tls';
import { cpuSeconds, type Mode, peakRssMiB, SetupClient, startApiServer, TOKEN } from '../lib.js';

export interface WatchStep {
  /** Target write rate. */
  rate: number;
  /** Writes per second actually acknowledged (the writer may not keep up with the target). */
  achievedRate: number;
  watchers: number;
  writes: number;
  delivered: number;
  expected: number;
  eventsPerSec: number;
  p50: number;
  p99: number;
  cpuPercent: number;
  /** Server CPU microseconds per event delivered to a watcher (all threads; steadier than delays on a shared machine). */
  cpuUsPerEvent: number;
  holds: boolean;
  /** Delays of each format's watchers (a mixed run: both formats on one server, the same events). */
  byFormat: Partial<Record<StreamFormat, { p50: number; p99: number }>>;
}

export interface WatchResult {
  mode: string;
  format: WatchFormat;
  steps: WatchStep[];
  peakRssMiB: number;
  connectSeconds: number;
}

const RV = /"resourceVersion":"(\d+)"/g;

/** The media type a watch stream is asked in. */
export type StreamFormat = 'json' | 'protobuf';
/** One format for every watcher, or 'mixed': every other watcher JSON, the rest protobuf. */
export type WatchFormat = StreamFormat | 'mixed';

interface Watcher {
  readonly sock: TLSSocket;
  readonly format: StreamFormat;
  /** Receive time (ms) of each resourceVersion seen. */
  readonly seen: Map<number, number>;
}

/** A JSON stream: resourceVersions found by a scan of the text (cheap for the client). */
class JsonWatcher implements Watcher {
  readonly format = 'json';
  private tail = '';
  readonly seen = new Map<number, number>();
  constructor(readonly sock: TLSSocket) {
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => {
      const now = performance.now();
      const text = this.tail + chunk;
      RV.lastIndex = 0;
      let lastEnd = 0;
      for (let m = RV.exec(text); m; m = RV.exec(text)) {
        this.seen.set(Number(m[1]), now);
        lastEnd = RV.lastIndex;
      }
      // keep a little of the end in case a match is split across chunks
      this.tail = text.slice(Math.max(lastEnd, text.length - 40));
    });
  }
}

/** Reads a protobuf varint at `i`: [value, next index], or undefined past the end. */
function varint(b: Buffer, i: number, end: number): [number, number] | undefined {
  let v = 0;
  let shift = 0;
  while (i < end) {
    const byte = b[i++]!;
    v += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [v, i];
    shift += 7;
  }
  return undefined;
}

/** The bytes of length-delimited field `field` of the message in b[start, end). */
function field(b: Buffer, start: number, end: number, want: number): [number, number] | undefined {
  let i = start;
  while (i < end) {
    const tag = varint(b, i, end);
    if (!tag) return undefined;
    i = tag[1];
    const wire = tag[0] & 7;
    if (wire === 0) {
      const v = varint(b, i, end);
      if (!v) return undefined;
      i = v[1];
    } else if (wire === 2) {
      const len = varint(b, i, end);
      if (!len) return undefined;
      if (tag[0] >>> 3 === want) return [len[1], len[1] + len[0]];
      i = len[1] + len[0];
    } else if (wire === 5) i += 4;
    else if (wire === 1) i += 8;
    else return undefined;
  }
  return undefined;
}

/**
 * A protobuf stream (;stream=watch): 4-byte length frames, each a WatchEvent whose object is the
 * enveloped ConfigMap; the resourceVersion is read by walking to metadata.resourceVersion (WatchEvent
 * 2 -> RawExtension 1 -> magic + Unknown 2 -> ConfigMap 1 -> ObjectMeta 6), no full decode.
 */
class ProtobufWatcher implements Watcher {
  readonly format = 'protobuf';
  private buf: Buffer = Buffer.alloc(0);
  private body = false;
  readonly seen = new Map<number, number>();
  constructor(readonly sock: TLSSocket) {
    sock.on('data', (chunk: Buffer) => this.take(chunk, performance.now()));
  }

  private take(chunk: Buffer, now: number): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    if (!this.body) {
      const head = this.buf.indexOf('\r\n\r\n');
      if (head < 0) return;
      this.buf = this.buf.subarray(head + 4);
      this.body = true;
    }
    // chunked transfer encoding: strip chunk headers as they come
    for (;;) {
      const eol = this.buf.indexOf('\r\n');
      if (eol < 0) return;
      const size = parseInt(this.buf.toString('latin1', 0, eol), 16);
      if (this.buf.length < eol + 2 + size + 2) return;
      this.pending = this.pending.length ? Buffer.concat([this.pending, this.buf.subarray(eol + 2, eol + 2 + size)]) : this.buf.subarray(eol + 2, eol + 2 + size);
      this.buf = this.buf.subarray(eol + 2 + size + 2);
      this.frames(now);
    }
  }

  private pending: Buffer = Buffer.alloc(0);

  private frames(now: number): void {
    const b = this.pending;
    let i = 0;
    while (b.length - i >= 4) {
      const len = b.readUInt32BE(i);
      if (b.length - i - 4 < len) break;
      const rv = this.resourceVersion(b, i + 4, i + 4 + len);
      if (rv !== undefined) this.seen.set(rv, now);
      i += 4 + len;
    }
    this.pending = b.subarray(i);
  }

  private resourceVersion(b: Buffer, start: number, end: number): number | undefined {
    const object = field(b, start, end, 2);
    const raw = object && field(b, object[0], object[1], 1);
    const unknown = raw && field(b, raw[0] + 4, raw[1], 2);
    const meta = unknown && field(b, unknown[0], unknown[1], 1);
    const rv = meta && field(b, meta[0], meta[1], 6);
    return rv ? Number(b.toString('latin1', rv[0], rv[1])) : undefined;
  }
}

const acceptOf: Record<StreamFormat, string> = { json: 'application/json', protobuf: 'application/vnd.svc.protobuf' };

function openWatcher(url: URL, ca: string, path: string, format: StreamFormat): Promise<Watcher> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: url.hostname, port: Number(url.port), ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => {
      sock.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKEN}\r\nAccept: ${acceptOf[format]}\r\n\r\n`);
      resolve(format === 'json' ? new JsonWatcher(sock) : new ProtobufWatcher(sock));
    });
    sock.on('error', reject);
  });
}

const percentile = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0);

export async function watchFanout(mode: Mode, opts: { watchers: number; rates: number[]; seconds: number; targetP99Ms: number; format?: WatchFormat }): Promise<WatchResult> {
  const format = opts.format ?? 'json';
  const s = await startApiServer([...mode.flags, '--watch-cache-size=100000']);
  const pid = s.proc.pid!;
  const url = new URL(s.url);
  const watchers: Watcher[] = [];
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'fanout' } });
    const t0 = performance.now();
    const path = '/api/v1/namespaces/fanout/configmaps?watch=1&resourceVersion=0&timeoutSeconds=3600';
    for (let i = 0; i < opts.watchers; i += 50) {
      const formatOf = (n: number): StreamFormat => (format !== 'mixed' ? format : n % 2 ? 'protobuf' : 'json');
      const batch = await Promise.all(Array.from({ length: Math.min(50, opts.watchers - i) }, (_, j) => openWatcher(url, s.ca, path, formatOf(i + j))));
      watchers.push(...batch);
    }
    const connectSeconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 500));
    const steps: WatchStep[] = [];
    for (const rate of opts.rates) {
      const step = await runStep(c, watchers, rate, opts.seconds, pid, opts.targetP99Ms);
      steps.push(step);
      console.log(`  watch fan-out [${mode.name}, ${format}] ${opts.watchers} watchers x ${rate} writes/s (achieved ${step.achievedRate.toFixed(0)}/s): p50 ${step.p50.toFixed(1)} ms, p99 ${step.p99.toFixed(1)} ms, ${step.delivered}/${step.expected} delivered, server CPU ${step.cpuPercent.toFixed(0)}%`);
      if (!step.holds) break;
    }
    c.close();
    return { mode: mode.name, format, steps, peakRssMiB: peakRssMiB(pid), connectSeconds };
  } finally {
    for (const w of watchers) w.sock.destroy();
    await s.stop();
  }
}

async function runStep(c: SetupClient, watchers: Watcher[], rate: number, seconds: number, pid: number, targetP99Ms: number): Promise<WatchStep> {
  for (const w of watchers) w.seen.clear();
  const acks = new Map<number, number>();
  const total = Math.round(rate * seconds);
  const cpu0 = cpuSeconds(pid);
  const wall0 = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = wall0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inflight.push(
      c.send('POST', '/api/v1/namespaces/fanout/configmaps', { metadata: { generateName: 'w-' }, data: { i: String(i) } }).then((r) => {
        const rv = Number(/"resourceVersion":"(\d+)"/.exec(r.text)?.[1]);
        acks.set(rv, performance.now());
      }),
    );
  }
  await Promise.all(inflight);
  const writeSeconds = (performance.now() - wall0) / 1000;
  // give the last events time to arrive
  const settleUntil = performance.now() + 3000;
  while (performance.now() < settleUntil) {
    if (watchers.every((w) => [...acks.keys()].every((rv) => w.seen.has(rv)))) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const wall = (performance.now() - wall0) / 1000;
  const cpu = cpuSeconds(pid) - cpu0;
  const delays: number[] = [];
  const formatDelays: Partial<Record<StreamFormat, number[]>> = {};
  let delivered = 0;
  for (const w of watchers) {
    const mine = (formatDelays[w.format] ??= []);
    for (const [rv, ack] of acks) {
      const at = w.seen.get(rv);
      if (at === undefined) continue;
      delivered++;
      delays.push(Math.max(0, at - ack));
      mine.push(Math.max(0, at - ack));
    }
  }
  delays.sort((a, b) => a - b);
  const byFormat: WatchStep['byFormat'] = {};
  for (const [f, ds] of Object.entries(formatDelays) as [StreamFormat, number[]][]) {
    ds.sort((a, b) => a - b);
    byFormat[f] = { p50: percentile(ds, 50), p99: percentile(ds, 99) };
  }
  const expected = acks.size * watchers.length;
  const p99 = percentile(delays, 99);
  const achievedRate = acks.size / writeSeconds;
  return {
    rate,
    achievedRate,
    watchers: watchers.length,
    writes: acks.size,
    delivered,
    expected,
    eventsPerSec: delivered / writeSeconds,
    p50: percentile(delays, 50),
    p99,
    cpuPercent: (100 * cpu) / wall,
    cpuUsPerEvent: delivered ? (cpu * 1e6) / delivered : 0,
    // a rate holds only if the writes really came at (nearly) that rate and every event arrived in time
    holds: delivered === expected && p99 < targetP99Ms && achievedRate >= 0.9 * rate,
    byFormat,
  };
}
