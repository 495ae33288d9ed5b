/**
 * The server at scale (issue 27): 100,000 stored ConfigMaps (about 915 bytes of JSON each, spread over
 * 100 namespaces, one label value on 1% of them), loaded by 64 concurrent creates over keep-alive
 * connections, then:
 *
 *   restart   SIGTERM, then the same data dir started again: spawn to the "serving on" line and to the
 *             first /readyz 200, for an empty data dir and for the loaded one
 *   LIST      all of them in one JSON answer (median of repetitions, bytes); walked in pages of 500
 *             with continue tokens (total, per page p50/p99); a 1% label selector across all
 *             namespaces (median)
 *   memory    RSS of the server after the restart and the full LISTs, minus that of an empty server
 *             after the same, per stored object, beside an object's average JSON size
 *   heartbeat 5,000 node Leases each renewed every 10 s (500 PUT/s spread evenly), each PUT with the
 *             resourceVersion of its last answer: latency and the server's CPU per PUT
 *   watch     2,000 idle watchers of one namespace over HTTP/2 streams: RSS per watcher, then 100
 *             writes at 20/s and the delay from each write's acknowledgement to each watcher's event
 *
 * Every RSS and CPU figure is of the server's whole process tree, so it stays right when the server
 * runs as several processes. The server runs with its default flags. `--scale-objects=N` shrinks it.
 */
import { Agent, request } from 'node:https';
import type { ClientHttp2Stream } from 'node:http2';
import {
  AUTH,
  concurrently,
  fmt,
  H2Client,
  median,
  percentile,
  type Proc,
  restartApiServer,
  SetupClient,
  sleep,
  startApiServer,
  treeCpuSeconds,
  treeRssMiB,
  WARMUP_SECONDS,
} from '../lib.js';
import { NodeLeases } from './heartbeat.js';

const NAMESPACES = 100;
/** Node Leases, each renewed every RENEW_SECONDS, for HEARTBEAT_SECONDS (after a warm-up). */
const LEASES = 5000;
const RENEW_SECONDS = 10;
const HEARTBEAT_SECONDS = 30;
/** Idle watchers of one namespace over WATCH_CONNECTIONS HTTP/2 connections, then WATCH_WRITES at WATCH_WRITE_RATE a second. */
const WATCHERS = 2000;
const WATCH_CONNECTIONS = 4;
const WATCH_WRITES = 100;
const WATCH_WRITE_RATE = 20;
const LIST_REPEATS = 5;
const PAGE = 500;
/** Creates in flight for the load, each on its own keep-alive connection. */
const LOAD_IN_FLIGHT = 64;
/** HTTP/2 connections for the heartbeats. */
const HEARTBEAT_CONNECTIONS = 4;
/** The value of the `shard` label that 1% of the objects carry (each carries one of 100). */
const SELECTED_SHARD = 's42';
/**
 * Filler that brings a ConfigMap as the server lists it (metadata, managedFields and all) to about
 * 915 bytes of JSON.
 */
const FILLER = 'listen: 0.0.0.0:8080\nlog-level: info\n'.padEnd(365, '# generated settings line\n');

export const nsName = (n: number) => `ns-${String(n).padStart(3, '0')}`;

/** A ConfigMap as the bench writes it (the server adds uid, times, resourceVersion, managedFields). */
const configMap = (i: number, name: { name: string } | { generateName: string } = { name: `cm-${String(i).padStart(6, '0')}` }) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { ...name, labels: { app: 'scale', shard: `s${i % 100}`, tier: i % 2 ? 'backend' : 'frontend' } },
  data: { 'settings.yaml': FILLER, index: String(i) },
});

interface Got {
  status: number;
  ms: number;
  bytes: number;
  /** The answer (only when asked to keep it), else its first bytes. */
  text: string;
}

/** A GET over HTTP/1.1 keep-alive, timed to its last byte; the answer is kept only if asked. */
function timedGet(url: string, agent: Agent, keep = false): Promise<Got> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: AUTH, agent }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        if (keep || chunks.length === 0) chunks.push(c);
        bytes += c.length;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, bytes, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

const ok = (g: Got, what: string): Got => {
  if (g.status !== 200) throw new Error(`${what}: ${g.status} ${g.text.slice(0, 300)}`);
  return g;
};

/**
 * RSS of the server's process tree once memory has settled: after 12 s idle (the server's reclaimer
 * looks every 5 s and collects after growth of 64 MiB; jemalloc gives freed pages back within about a
 * second), then every 2 s until two readings are within 1%.
 */
async function settledRss(pid: number): Promise<Rss> {
  await sleep(12_000);
  let last = treeRssMiB(pid);
  for (let i = 0; i < 10; i++) {
    await sleep(2000);
    const now = treeRssMiB(pid);
    if (Math.abs(now - last) <= 0.01 * last) break;
    last = now;
  }
  return { total: treeRssMiB(pid), anon: treeRssMiB(pid, 'RssAnon'), file: treeRssMiB(pid, 'RssFile') };
}

/** RSS of the server's processes in MiB: in all, anonymous memory, mapped file pages (the store's map). */
interface Rss {
  total: number;
  anon: number;
  file: number;
}

interface Lists {
  fullMs: number;
  fullBytes: number;
  items: number;
}

/** LIST all ConfigMaps across namespaces, LIST_REPEATS times (the first answer is parsed to count its items). */
async function fullLists(s: Proc): Promise<Lists> {
  const agent = new Agent({ keepAlive: true, ca: s.ca });
  try {
    const first = ok(await timedGet(`${s.url}/api/v1/configmaps`, agent, true), 'full LIST');
    const items = (JSON.parse(first.text) as { items: unknown[] }).items.length;
    const times: number[] = [];
    for (let i = 0; i < LIST_REPEATS; i++) times.push(ok(await timedGet(`${s.url}/api/v1/configmaps`, agent), 'full LIST').ms);
    return { fullMs: median(times), fullBytes: first.bytes, items };
  } finally {
    agent.destroy();
  }
}

interface RestartFigures {
  /** SIGTERM to exit (ms). */
  stopMs: number;
  servingMs: number;
  readyMs: number;
}

/** Starts a server, stops it with SIGTERM and starts it again on the same data dir, timing the stop and the start. */
async function restarted(fill: (s: Proc) => Promise<void>): Promise<{ server: Proc; figures: RestartFigures }> {
  const first = await startApiServer([]);
  let stopMs: number;
  try {
    await fill(first);
    const t0 = performance.now();
    await first.terminate();
    stopMs = performance.now() - t0;
  } catch (e) {
    await first.stop();
    throw e;
  }
  const { server, servingMs, readyMs } = await restartApiServer(first.dir, []);
  return { server, figures: { stopMs, servingMs, readyMs } };
}

export interface LoadFigures {
  seconds: number;
  perSecond: number;
}

/**
 * Creates the namespaces and the ConfigMaps over HTTP/1.1 keep-alive connections, timing the
 * ConfigMaps (in a trial on this machine the server spent 20-40% more CPU a create over HTTP/2 streams).
 */
export async function loadObjects(s: Proc, objects: number, namespaces: number): Promise<LoadFigures> {
  const c = new SetupClient(s.url, s.ca);
  try {
    await c.many(namespaces, 16, (n) => ['POST', '/api/v1/namespaces', { metadata: { name: nsName(n) } }]);
    const t0 = performance.now();
    let done = 0;
    await c.many(objects, LOAD_IN_FLIGHT, (i) => {
      if (++done % 10_000 === 0) console.log(`    ${fmt(done)} created`);
      return ['POST', `/api/v1/namespaces/${nsName(Math.floor((i * namespaces) / objects))}/configmaps`, configMap(i)];
    });
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, perSecond: objects / seconds };
  } finally {
    c.close();
  }
}

export interface PagedFigures {
  pages: number;
  totalMs: number;
  p50: number;
  p99: number;
  items: number;
}

/** Walks all ConfigMaps in pages of PAGE with continue tokens. */
async function pagedList(s: Proc): Promise<PagedFigures> {
  const agent = new Agent({ keepAlive: true, ca: s.ca });
  const times: number[] = [];
  let items = 0;
  const t0 = performance.now();
  try {
    let cont = '';
    do {
      const g = ok(await timedGet(`${s.url}/api/v1/configmaps?limit=${PAGE}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, agent, true), 'page');
      times.push(g.ms);
      // the list's metadata comes before its items: no need to parse the page
      cont = /"continue":"([^"]*)"/.exec(g.text.slice(0, 2000))?.[1] ?? '';
      items += g.text.split('"uid":"').length - 1;
    } while (cont);
    return { pages: times.length, totalMs: performance.now() - t0, p50: percentile(times, 50), p99: percentile(times, 99), items };
  } finally {
    agent.destroy();
  }
}

/** LIST across all namespaces by the 1% label selector, LIST_REPEATS times. */
async function selectorList(s: Proc): Promise<{ ms: number; items: number; bytes: number }> {
  const agent = new Agent({ keepAlive: true, ca: s.ca });
  const url = `${s.url}/api/v1/configmaps?labelSelector=${encodeURIComponent(`shard=${SELECTED_SHARD}`)}`;
  try {
    const first = ok(await timedGet(url, agent, true), 'selector LIST');
    const times: number[] = [];
    for (let i = 0; i < LIST_REPEATS; i++) times.push(ok(await timedGet(url, agent), 'selector LIST').ms);
    return { ms: median(times), items: (JSON.parse(first.text) as { items: unknown[] }).items.length, bytes: first.bytes };
  } finally {
    agent.destroy();
  }
}

export interface HeartbeatFigures {
  leases: number;
  puts: number;
  rate: number;
  p50: number;
  p99: number;
  max: number;
  cpuMsPerPut: number;
  errors: number;
}

/** Called as the measured window of a load starts (after its warm-up) and as it ends. */
export interface MeasuredWindow {
  start(): void;
  end(): void;
}

/**
 * `leases` node Leases each renewed every `renewSeconds`, the renewals spread evenly (node k's at
 * k/rate seconds into each period) over HTTP/2; a warm-up at the same pace is not counted.
 * `slowOverMs`: the PUTs slower than that, each with when it was sent (s into the window).
 */
export async function heartbeats(
  s: Proc,
  leases: number,
  renewSeconds: number,
  seconds: number,
  window?: MeasuredWindow,
  slowOverMs = Infinity,
): Promise<HeartbeatFigures & { slow: { at: number; ms: number }[] }> {
  const c = new H2Client(s.url, s.ca, HEARTBEAT_CONNECTIONS);
  const pid = s.proc.pid!;
  try {
    const nodes = await NodeLeases.create(c, leases, 32);
    const rate = leases / renewSeconds;
    const warm = Math.round(rate * WARMUP_SECONDS);
    const total = warm + Math.round(rate * seconds);
    const latencies: number[] = [];
    let errors = 0;
    const slow: { at: number; ms: number }[] = [];
    let tw = 0;
    /** Each node's renewals one after another (a renewal is due long after the last one's answer). */
    const chains: Promise<void>[] = [];
    let cpu0 = 0;
    const t0 = performance.now();
    for (let k = 0; k < total; k++) {
      const wait = t0 + (k * 1000) / rate - performance.now();
      if (wait > 1) await sleep(wait);
      if (k === warm) {
        await Promise.all(chains);
        cpu0 = treeCpuSeconds(pid);
        window?.start();
        tw = performance.now();
      }
      const i = k % leases;
      const counted = k >= warm;
      chains[i] = (chains[i] ?? Promise.resolve()).then(async () => {
        const t = performance.now();
        const renewed = await nodes.renew(c, i);
        if (!counted) return;
        const ms = performance.now() - t;
        latencies.push(ms);
        if (ms > slowOverMs) slow.push({ at: (t - tw) / 1000, ms });
        if (!renewed) errors++;
      });
    }
    await Promise.all(chains);
    const cpu = treeCpuSeconds(pid) - cpu0;
    window?.end();
    return {
      leases,
      puts: latencies.length,
      rate,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: percentile(latencies, 100),
      cpuMsPerPut: (cpu * 1000) / Math.max(1, latencies.length),
      errors,
      slow,
    };
  } finally {
    c.close();
  }
}

const RV = Buffer.from('"resourceVersion":"');

/**
 * A watch stream read as bytes: the receive time of each resourceVersion seen (the objects' own; the
 * bench's objects carry no other), with a marker or number cut by a read's end finished by the next.
 */
class RvWatcher {
  readonly seen = new Map<number, number>();
  status = 0;
  private tail: Buffer | undefined;
  constructor(readonly stream: ClientHttp2Stream) {
    stream.on('response', (h) => (this.status = Number(h[':status'])));
    stream.on('data', (chunk: Buffer) => this.take(chunk, performance.now()));
    stream.on('error', () => undefined);
  }
  private take(chunk: Buffer, now: number): void {
    const b = this.tail ? Buffer.concat([this.tail, chunk]) : chunk;
    this.tail = undefined;
    let from = 0;
    for (let i = b.indexOf(RV); i >= 0; i = b.indexOf(RV, from)) {
      let j = i + RV.length;
      let v = 0;
      for (; j < b.length && b[j]! >= 0x30 && b[j]! <= 0x39; j++) v = v * 10 + (b[j]! - 0x30);
      if (j >= b.length) {
        // the number may go on in the next read
        this.tail = Buffer.from(b.subarray(i));
        return;
      }
      if (!this.seen.has(v)) this.seen.set(v, now);
      from = j;
    }
    // a marker cut by the read's end
    this.tail = Buffer.from(b.subarray(Math.max(from, b.length - RV.length + 1)));
  }
}

export interface WatchFigures {
  watchers: number;
  connections: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  kibPerWatcher: number;
  writes: number;
  writeRate: number;
  delivered: number;
  expected: number;
  p50: number;
  p99: number;
  max: number;
}

/** Idle watchers of one namespace: their memory, then the delay of events from writes at a steady rate. */
async function idleWatchers(s: Proc, ns: string, watchers: number, connections: number, writes: number, writeRate: number): Promise<WatchFigures> {
  const pid = s.proc.pid!;
  const watchClient = new H2Client(s.url, s.ca, connections);
  const writer = new H2Client(s.url, s.ca, 1);
  try {
    // from the namespace's current resourceVersion: no ADDED event for what it already holds
    const head = await writer.send('GET', `/api/v1/namespaces/${ns}/configmaps?limit=1`);
    const rv = (JSON.parse(head.text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const rssBefore = (await settledRss(pid)).total;
    const path = `/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${rv}&timeoutSeconds=3600`;
    const all: RvWatcher[] = [];
    await concurrently(watchers, 100, async () => {
      const w = new RvWatcher(watchClient.stream('GET', path, { accept: 'application/json' }));
      all.push(w);
      await new Promise<void>((resolve, reject) => {
        w.stream.once('response', () => resolve());
        w.stream.once('close', () => reject(new Error(`watch closed before its answer (${w.stream.rstCode})`)));
      });
      if (w.status !== 200) throw new Error(`watch: ${w.status}`);
    });
    const rssAfter = (await settledRss(pid)).total;
    const acks = new Map<number, number>();
    const t0 = performance.now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < writes; i++) {
      const wait = t0 + (i * 1000) / writeRate - performance.now();
      if (wait > 1) await sleep(wait);
      inflight.push(
        writer.send('POST', `/api/v1/namespaces/${ns}/configmaps`, configMap(i, { generateName: 'watched-' })).then((r) => {
          const at = performance.now();
          if (r.status !== 201) throw new Error(`write: ${r.status} ${r.text}`);
          acks.set(Number(/"resourceVersion":"(\d+)"/.exec(r.text)?.[1]), at);
        }),
      );
    }
    await Promise.all(inflight);
    await sleep(2000);
    const delays: number[] = [];
    for (const w of all) {
      for (const [v, ack] of acks) {
        const at = w.seen.get(v);
        // an event that arrives before the writer reads its acknowledgement waited for nothing
        if (at !== undefined) delays.push(Math.max(0, at - ack));
      }
    }
    return {
      watchers,
      connections,
      rssBeforeMiB: rssBefore,
      rssAfterMiB: rssAfter,
      kibPerWatcher: ((rssAfter - rssBefore) * 1024) / watchers,
      writes,
      writeRate,
      delivered: delays.length,
      expected: writes * watchers,
      p50: percentile(delays, 50),
      p99: percentile(delays, 99),
      max: percentile(delays, 100),
    };
  } finally {
    watchClient.close();
    for (const session of watchClient.sessions) session.destroy();
    writer.close();
  }
}

export interface ScaleResult {
  objects: number;
  namespaces: number;
  load: LoadFigures;
  restartEmpty: RestartFigures;
  restartFull: RestartFigures;
  list: Lists;
  paged: PagedFigures;
  selector: { ms: number; items: number; bytes: number };
  emptyRss: Rss;
  fullRss: Rss;
  heartbeat: HeartbeatFigures;
  watch: WatchFigures;
}

/** An empty data dir restarted, then the same LISTs: the memory baseline. */
async function emptyBaseline(): Promise<{ rss: Rss; restart: RestartFigures }> {
  const empty = await restarted(async () => undefined);
  try {
    await fullLists(empty.server);
    return { rss: await settledRss(empty.server.proc.pid!), restart: empty.figures };
  } finally {
    await empty.server.stop();
  }
}

/** Only what memory per stored object needs (`--scale-memory-only`): the empty baseline, the load, the restart, the full LISTs. */
export async function scaleMemory(objects: number): Promise<{ emptyRss: Rss; fullRss: Rss; list: Lists; restartFull: RestartFigures }> {
  const namespaces = Math.min(NAMESPACES, objects);
  const emptyRss = (await emptyBaseline()).rss;
  const full = await restarted(async (s) => void (await loadObjects(s, objects, namespaces)));
  try {
    const list = await fullLists(full.server);
    return { emptyRss, fullRss: await settledRss(full.server.proc.pid!), list, restartFull: full.figures };
  } finally {
    await full.server.stop();
  }
}

export async function scale(objects: number): Promise<ScaleResult> {
  const namespaces = Math.min(NAMESPACES, objects);
  console.log('  scale: empty server, restart');
  const empty = await emptyBaseline();
  const emptyRss = empty.rss;
  let load!: LoadFigures;
  console.log(`  scale: loading ${fmt(objects)} ConfigMaps into ${namespaces} namespaces`);
  const full = await restarted(async (s) => {
    load = await loadObjects(s, objects, namespaces);
    console.log(`  scale: loaded in ${fmt(load.seconds, 1)} s (${fmt(load.perSecond)}/s), restarting`);
  });
  const s = full.server;
  try {
    console.log(`  scale: restarted (serving ${fmt(full.figures.servingMs)} ms, ready ${fmt(full.figures.readyMs)} ms); LISTs`);
    const list = await fullLists(s);
    const fullRss = await settledRss(s.proc.pid!);
    const paged = await pagedList(s);
    const selector = await selectorList(s);
    console.log(`  scale: ${fmt(LEASES)} node heartbeats`);
    const heartbeat = await heartbeats(s, LEASES, RENEW_SECONDS, HEARTBEAT_SECONDS);
    console.log(`  scale: ${fmt(WATCHERS)} idle watchers`);
    const watch = await idleWatchers(s, nsName(0), WATCHERS, WATCH_CONNECTIONS, WATCH_WRITES, WATCH_WRITE_RATE);
    return { objects, namespaces, load, restartEmpty: empty.restart, restartFull: full.figures, list, paged, selector, emptyRss, fullRss, heartbeat, watch };
  } finally {
    await s.stop();
  }
}

const restartHow = (f: RestartFigures) => `spawn to /readyz 200; to "serving on" ${fmt(f.servingMs)} ms; SIGTERM to exit before it ${fmt(f.stopMs)} ms`;

/** The group's table rows: what was measured, the figure, and how. */
export function scaleRows(r: ScaleResult): string[][] {
  const n = fmt(r.objects);
  const ms = (x: number, d = 0) => `${fmt(x, d)} ms`;
  const mib = (b: number) => `${fmt(b / 1048576, 1)} MiB`;
  const avgObject = r.list.fullBytes / Math.max(1, r.list.items);
  const perObject = ((r.fullRss.total - r.emptyRss.total) * 1048576) / r.objects;
  const rss = (x: Rss) => `${fmt(x.total)} MiB (anonymous ${fmt(x.anon)}, file ${fmt(x.file)})`;
  const h = r.heartbeat;
  const w = r.watch;
  return [
    [`load ${n} ConfigMaps (${r.namespaces} namespaces)`, `${fmt(r.load.perSecond)} creates/s`, `${fmt(r.load.seconds, 1)} s; ${LOAD_IN_FLIGHT} in flight over as many HTTP/1.1 keep-alive connections`],
    ['restart to ready, empty data dir', ms(r.restartEmpty.readyMs), restartHow(r.restartEmpty)],
    [`restart to ready, ${n} objects`, ms(r.restartFull.readyMs), restartHow(r.restartFull)],
    [`full LIST of ${n} (all namespaces, JSON)`, ms(r.list.fullMs), `median of ${LIST_REPEATS}; ${mib(r.list.fullBytes)}, ${fmt(r.list.items)} items (${fmt(avgObject)} bytes an object)`],
    [`paged LIST, limit=${PAGE} to the end`, ms(r.paged.totalMs), `${r.paged.pages} pages (${fmt(r.paged.items)} items); per page p50 ${ms(r.paged.p50, 1)}, p99 ${ms(r.paged.p99, 1)}`],
    ['LIST by a 1% label selector (all namespaces)', ms(r.selector.ms, 1), `median of ${LIST_REPEATS}; ${fmt(r.selector.items)} items, ${fmt(r.selector.bytes / 1024)} KiB`],
    [
      'memory per stored object',
      `${fmt(perObject)} bytes`,
      `RSS after restart + full LIST ${rss(r.fullRss)}, empty server after the same ${rss(r.emptyRss)}; an object's JSON ${fmt(avgObject)} bytes (${fmt(perObject / avgObject, 1)}x)`,
    ],
    [
      `${fmt(h.leases)} node heartbeats (Lease PUT with its resourceVersion)`,
      `p50 ${ms(h.p50, 1)}, p99 ${ms(h.p99, 1)}, max ${ms(h.max)}`,
      `over ${HEARTBEAT_CONNECTIONS} HTTP/2 connections, ${fmt(h.rate)} PUT/s for ${fmt(h.puts / h.rate)} s (${fmt(h.puts)} PUTs${h.errors ? `, ${h.errors} failed` : ''}); server CPU ${fmt(h.cpuMsPerPut, 3)} ms a PUT (${fmt((h.cpuMsPerPut * h.rate) / 10)}% of a core)`,
    ],
    [`${fmt(w.watchers)} idle watchers (one namespace)`, `${fmt(w.kibPerWatcher, 1)} KiB a watcher`, `RSS ${fmt(w.rssBeforeMiB)} -> ${fmt(w.rssAfterMiB)} MiB; HTTP/2 streams over ${w.connections} connection${w.connections === 1 ? '' : 's'}`],
    [
      `  then ${w.writes} writes at ${w.writeRate}/s`,
      `delivery p99 ${ms(w.p99, 1)}`,
      `write acknowledged -> event received, all watchers: p50 ${ms(w.p50, 1)}, max ${ms(w.max)}; ${fmt(w.delivered)}/${fmt(w.expected)} delivered`,
    ],
  ];
}
