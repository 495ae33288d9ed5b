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

/**
 * Both readers work on the bytes as they arrive, with no decoding and next to no allocation per event,
 * so that on the shared cores the client's reading costs each format about the same and the delays
 * measure the server: every event is seen by 1,000 watchers in one client process.
 */
const DIGIT_0 = 0x30;
const QUOTE = 0x22;

/** The decimal number whose digits start at `i`, and where they end (module scratch: no allocation). */
let numberEnd = 0;
function digitsAt(b: Buffer, i: number, end: number): number {
  let v = 0;
  for (; i < end && b[i]! >= DIGIT_0 && b[i]! <= DIGIT_0 + 9; i++) v = v * 10 + (b[i]! - DIGIT_0);
  numberEnd = i;
  return v;
}

/** Where the last field found by findField starts and ends (module scratch: no allocation). */
let fieldStart = 0;
let fieldEnd = 0;

/** Where the last varint read by varintAt ended, or -1 when it ran past the end (module scratch). */
let varintEnd = 0;

/** The base-128 varint at b[i] (its end in varintEnd; -1 there when it runs past `end`). */
function varintAt(b: Buffer, i: number, end: number): number {
  let v = 0;
  let shift = 0;
  let byte: number;
  do {
    if (i >= end) {
      varintEnd = -1;
      return 0;
    }
    byte = b[i++]!;
    v += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  varintEnd = i;
  return v;
}

/** Finds length-delimited field `want` of the message in b[start, end) (its bounds in fieldStart/fieldEnd). */
function findField(b: Buffer, start: number, end: number, want: number): boolean {
  let i = start;
  while (i < end) {
    const tag = varintAt(b, i, end);
    if (varintEnd < 0) return false;
    i = varintEnd;
    const wire = tag % 8;
    if (wire === 0) {
      varintAt(b, i, end);
      if (varintEnd < 0) return false;
      i = varintEnd;
    } else if (wire === 2) {
      const len = varintAt(b, i, end);
      if (varintEnd < 0) return false;
      i = varintEnd;
      if (Math.floor(tag / 8) === want) {
        fieldStart = i;
        fieldEnd = i + len;
        return true;
      }
      i += len;
    } else if (wire === 5) i += 4;
    else if (wire === 1) i += 8;
    else return false;
  }
  return false;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CR = 0x0d;

/** The value of the hex digits at b[i, end), or -1 at a byte that is not one. */
function hexValue(b: Buffer, i: number, end: number): number {
  let v = 0;
  for (; i < end; i++) {
    const c = b[i]!;
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/**
 * An HTTP/1.1 chunked answer read in place: the head is skipped, each chunk's data handed to `frames`;
 * only what a read leaves unfinished is kept for the next. The server writes each watch frame as one
 * chunk; a frame spanning chunks is still read whole (gathered in `partial`).
 */
abstract class ChunkedWatcher implements Watcher {
  abstract readonly format: StreamFormat;
  readonly seen = new Map<number, number>();
  private inHead = true;
  /** Bytes of the last read not yet parsed (a chunk or head cut by the read's end). */
  private carry: Buffer | undefined;
  /** Frame bytes of earlier chunks that a frame spanning chunks began with. */
  private partial: Buffer | undefined;
  constructor(readonly sock: TLSSocket) {
    sock.on('data', (chunk: Buffer) => this.take(chunk, performance.now()));
  }

  /** Reads the whole frames in b[start, end) and returns where the unfinished rest begins. */
  protected abstract frames(b: Buffer, start: number, end: number, now: number): number;

  private take(chunk: Buffer, now: number): void {
    const b = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = undefined;
    let i = 0;
    if (this.inHead) {
      const head = b.indexOf(HEAD_END);
      if (head < 0) return void (this.carry = Buffer.from(b));
      i = head + HEAD_END.length;
      this.inHead = false;
    }
    // chunked transfer encoding: size line, data, CRLF
    while (i < b.length) {
      const eol = b.indexOf(CR, i);
      if (eol < 0) break;
      const size = hexValue(b, i, eol);
      if (size < 0 || b.length < eol + 2 + size + 2) break;
      this.chunkData(b, eol + 2, eol + 2 + size, now);
      i = eol + 2 + size + 2;
    }
    if (i < b.length) this.carry = Buffer.from(b.subarray(i));
  }

  private chunkData(chunk: Buffer, start: number, end: number, now: number): void {
    let b = chunk;
    if (this.partial) {
      b = Buffer.concat([this.partial, chunk.subarray(start, end)]);
      start = 0;
      end = b.length;
      this.partial = undefined;
    }
    const rest = this.frames(b, start, end, now);
    if (rest < end) this.partial = Buffer.from(b.subarray(rest, end));
  }
}

const RV_KEY = Buffer.from('"resourceVersion":"');
const NL = 0x0a;

/** A JSON stream: each frame (one line) has its resourceVersion found by a byte search for the key. */
class JsonWatcher extends ChunkedWatcher {
  readonly format = 'json';

  protected frames(b: Buffer, start: number, end: number, now: number): number {
    let i = start;
    while (i < end) {
      const nl = b.indexOf(NL, i);
      if (nl < 0 || nl >= end) break;
      const at = b.indexOf(RV_KEY, i);
      if (at >= 0 && at < nl) {
        const v = digitsAt(b, at + RV_KEY.length, nl);
        if (b[numberEnd] === QUOTE) this.seen.set(v, now);
      }
      i = nl + 1;
    }
    return i;
  }
}

/**
 * A protobuf stream (;stream=watch): 4-byte length frames, each a WatchEvent whose object is the
 * enveloped ConfigMap; the resourceVersion is read by walking to metadata.resourceVersion (WatchEvent
 * 2 -> RawExtension 1 -> magic + Unknown 2 -> ConfigMap 1 -> ObjectMeta 6), no full decode.
 */
class ProtobufWatcher extends ChunkedWatcher {
  readonly format = 'protobuf';

  protected frames(b: Buffer, start: number, end: number, now: number): number {
    let i = start;
    while (end - i >= 4) {
      const len = b.readUInt32BE(i);
      if (end - i - 4 < len) break;
      const rv = resourceVersionOf(b, i + 4, i + 4 + len);
      if (rv !== undefined) this.seen.set(rv, now);
      i += 4 + len;
    }
    return i;
  }
}

function resourceVersionOf(b: Buffer, start: number, end: number): number | undefined {
  if (!findField(b, start, end, 2) || !findField(b, fieldStart, fieldEnd, 1)) return undefined;
  if (!findField(b, fieldStart + 4, fieldEnd, 2) || !findField(b, fieldStart, fieldEnd, 1) || !findField(b, fieldStart, fieldEnd, 6)) return undefined;
  return digitsAt(b, fieldStart, fieldEnd);
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
    // a rate holds only if the writes really came at (nearly) that rate and every event arrived in time
    holds: delivered === expected && p99 < targetP99Ms && achievedRate >= 0.9 * rate,
    byFormat,
  };
}
