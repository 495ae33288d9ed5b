/**
 * Where a request's CPU goes, thread by thread (issue 27 measures before it redesigns): for GET one
 * CSIDriver, LIST 1,000 ConfigMaps, CREATE ConfigMap and a node heartbeat (a Lease PUT with its
 * resourceVersion), the server's CPU per request in all, on its busiest main thread (a server of
 * several acceptor processes has one each), and on its busiest other thread, read from
 * /proc/<pid>/task/<tid>/stat of every process of the server around the measured load (after the warm-up). The
 * busiest thread's share of the whole is the serial fraction that caps how far the shape can scale:
 * at a share s, no number of cores serves more than 1/s times what one core does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { AUTH as auth, type Mode, processTree, SetupClient, startApiServer, WARMUP_SECONDS } from '../lib.js';
import { NodeLeases } from './heartbeat.js';

/** user and system CPU ticks of one thread, by its process and thread id. */
export interface ThreadTicks {
  pid: number;
  tid: number;
  name: string;
  utime: number;
  stime: number;
}

/** Every thread of the server's processes, from /proc/<pid>/task/<tid>/stat. */
export function threadTicks(pid: number): Map<number, ThreadTicks> {
  const out = new Map<number, ThreadTicks>();
  for (const p of processTree(pid)) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const t of tids) {
      try {
        const stat = readFileSync(`/proc/${p}/task/${t}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(Number(t), { pid: p, tid: Number(t), name, utime: Number(f[11]), stime: Number(f[12]) });
      } catch {
        // ended meanwhile
      }
    }
  }
  return out;
}

/**
 * CPU seconds of each thread of a process and its descendants (a server's acceptors), by
 * `pid/tid` (utime + stime; the kernel counts in 1/100 s). A process's main thread has tid = pid.
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of threadTicks(pid).values()) out.set(`${t.pid}/${t.tid}`, (t.utime + t.stime) / 100);
  return out;
}

export interface ThreadShares {
  scenario: string;
  mode: string;
  rps: number;
  /** Server CPU per request, all threads (µs). */
  totalUs: number;
  /** On the busiest main thread (of the server's processes: each acceptor's TLS, HTTP, chain, cache, encoding) (µs). */
  mainUs: number;
  /** Main threads that did any work (the acceptors, and the primary's share of handing out connections). */
  mainThreads: number;
  /** On the busiest thread other than a main one (a pool worker, a GC helper...) (µs). */
  otherMaxUs: number;
  /** Threads other than the main one that did any work. */
  otherThreads: number;
  /** The busiest thread's share of the server's CPU per request (%). */
  busiestShare: number;
  errors: number;
}

interface Load {
  path: string;
  connections: number;
  method?: string;
  body?: string;
  contentType?: string;
  /** A load of its own instead of autocannon's (requests whose bodies depend on earlier answers). */
  drive?: (url: string, ca: string, seconds: number) => Promise<Driven>;
}

interface Driven {
  total: number;
  errors: number;
}

async function measure(mode: Mode, duration: number, scenario: string, setup: (c: SetupClient) => Promise<Load>): Promise<ThreadShares> {
  const s = await startApiServer(mode.flags);
  try {
    const c = new SetupClient(s.url, s.ca);
    const l = await setup(c);
    c.close();
    const opts: autocannon.Options = {
      url: `${s.url}${l.path}`,
      connections: l.connections,
      pipelining: 1,
      method: (l.method ?? 'GET') as never,
      headers: { ...auth, ...(l.contentType ? { 'content-type': l.contentType } : {}) },
      tlsOptions: { ca: s.ca },
    };
    if (l.body) opts.body = l.body;
    const run = async (seconds: number): Promise<Driven> => {
      if (l.drive) return l.drive(s.url, s.ca, seconds);
      const r = await autocannon({ ...opts, duration: seconds });
      return { total: r.requests.total, errors: r.errors + r.timeouts + r.non2xx };
    };
    await run(WARMUP_SECONDS);
    const pid = s.proc.pid!;
    const before = threadCpuSeconds(pid);
    const started = performance.now();
    const r = await run(duration);
    const after = threadCpuSeconds(pid);
    const elapsed = (performance.now() - started) / 1000;
    const n = Math.max(1, r.total);
    let total = 0;
    let main = 0;
    let mains = 0;
    let otherMax = 0;
    let others = 0;
    for (const [id, sec] of after) {
      const d = sec - (before.get(id) ?? 0);
      if (d <= 0) continue;
      total += d;
      const [p, tid] = id.split('/');
      if (p === tid) {
        mains++;
        main = Math.max(main, d);
      } else {
        others++;
        otherMax = Math.max(otherMax, d);
      }
    }
    const us = (sec: number) => (sec * 1e6) / n;
    return {
      scenario,
      mode: mode.name,
      rps: r.total / elapsed,
      totalUs: us(total),
      mainUs: us(main),
      mainThreads: mains,
      otherMaxUs: us(otherMax),
      otherThreads: others,
      busiestShare: total > 0 ? (100 * Math.max(main, otherMax)) / total : 0,
      errors: r.errors,
    };
  } finally {
    await s.stop();
  }
}

const getOne = (mode: Mode, duration: number) =>
  measure(mode, duration, 'GET one CSIDriver', async (c) => {
    await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' }, spec: { attachRequired: true } });
    return { path: '/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com', connections: 32 };
  });

const list1000 = (mode: Mode, duration: number) =>
  measure(mode, duration, 'LIST 1,000 ConfigMaps', async (c) => {
    await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'bench' } });
    await c.many(1000, 32, (i) => ['POST', '/api/v1/namespaces/bench/configmaps', { metadata: { name: `cm-${i}`, labels: { app: 'bench' } }, data: { key: `value-${i}`, other: 'x'.repeat(64) } }]);
    return { path: '/api/v1/namespaces/bench/configmaps', connections: 8 };
  });

const createMany = (mode: Mode, duration: number) =>
  measure(mode, duration, 'CREATE ConfigMap (durable)', async () => ({
    path: '/api/v1/namespaces/default/configmaps',
    connections: 64,
    method: 'POST',
    contentType: 'application/json',
    body: JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } }),
  }));

const HEARTBEAT_CONNECTIONS = 64;

/** Each connection renews its own node's Lease, one PUT after another, as a kubelet does. */
const heartbeat = (mode: Mode, duration: number) =>
  measure(mode, duration, 'Lease PUT (node heartbeat)', async (c) => {
    const leases = await NodeLeases.create(c, HEARTBEAT_CONNECTIONS);
    const drive = async (url: string, ca: string, seconds: number): Promise<Driven> => {
      const client = new SetupClient(url, ca);
      const until = performance.now() + seconds * 1000;
      let total = 0;
      let errors = 0;
      const renew = async (i: number): Promise<void> => {
        while (performance.now() < until) {
          total++;
          if (!(await leases.renew(client, i))) errors++;
        }
      };
      try {
        await Promise.all(Array.from({ length: leases.size }, (_, i) => renew(i)));
      } finally {
        client.close();
      }
      return { total, errors };
    };
    return { path: '', connections: HEARTBEAT_CONNECTIONS, drive };
  });

export async function threadShares(modes: readonly Mode[], duration: number): Promise<ThreadShares[]> {
  const out: ThreadShares[] = [];
  for (const scenario of [getOne, list1000, createMany, heartbeat]) {
    for (const m of modes) out.push(await scenario(m, duration));
  }
  return out;
}
