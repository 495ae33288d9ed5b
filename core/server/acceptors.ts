/**
 * One server, several processes (--acceptors): every core terminates TLS, authenticates, authorizes
 * and serves. The primary process serves no request: it holds the data directory, makes the generated
 * certificates once, starts the acceptors with node:cluster (which shares the listening socket among
 * them and hands each new connection to the next, round robin), relays what must be answered as one
 * server (a /metrics scrape, the audit log file), makes every write of the embedded store (the one
 * writer of the machine: core/storage/lmdb/write-channel.ts), replaces an acceptor that dies, and
 * drains them all on SIGTERM.
 *
 * Each acceptor is a whole ApiServer over the same store (the embedded store's directory is opened by
 * every acceptor: LMDB is built for many processes on one mapped file). What makes them one server:
 * - one commit sequence: the primary commits every acceptor's writes, allocating revisions inside
 *   LMDB's write transaction, so every acceptor's watch cache follows the same log in the same order
 *   and continue tokens work on any of them; an acceptor killed mid-write holds no lock;
 * - consistent reads ask the store's revision (a read of the mapped meta page), so a write
 *   acknowledged by one acceptor is seen by the next read on any other;
 * - the controllers and the store's housekeeping (compaction, event TTL) run in acceptor 0, which the
 *   primary replaces within about a second when it dies (no lease renewals: the server writes nothing
 *   on its own between requests);
 * - the in-flight limits are shared out, /metrics sums every acceptor's figures, and the primary
 *   writes (and rotates) the one audit log file.
 */
import { availableParallelism } from 'node:os';
import cluster, { type Worker } from 'node:cluster';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { ensureGeneratedTls } from './certs.js';
import { lockDataDir } from './data-dir-lock.js';
import type { AcceptorRole, ServerOptions } from './options.js';
import { ownsDataDir, storageOptionsFrom } from '../storage/factory.js';
import { LmdbStore } from '../storage/lmdb/store.js';
import { serveWrites } from '../storage/lmdb/write-channel.js';
import { logBackendOptions } from '../audit/auditor.js';
import { type LineSink, openLineSink } from '../audit/log-backend.js';

/** Set in an acceptor's environment: `<index>/<count>`. */
const ROLE_ENV = 'SVC_APISERVER_ACCEPTOR';

/** The most acceptors the default starts: each keeps its own watch cache, so memory grows with their number. */
export const DEFAULT_MAX_ACCEPTORS = 8;

/**
 * How many acceptors serve: --acceptors, or by default one per core less one (the core left for the
 * kernel's network work and the pool threads), at most DEFAULT_MAX_ACCEPTORS. On one or two cores the
 * server is one process: measured on two cores, a second process costs each request more than it adds
 * (README, "Every core serves").
 */
export function acceptorCount(o: Pick<ServerOptions, 'acceptors'>, cores = availableParallelism()): number {
  if (o.acceptors > 0) return o.acceptors;
  return cores <= 2 ? 1 : Math.min(cores - 1, DEFAULT_MAX_ACCEPTORS);
}

/** This process's role when a primary started it, else undefined. */
export function acceptorRoleFromEnv(): AcceptorRole | undefined {
  const v = process.env[ROLE_ENV];
  if (!cluster.isWorker || !v) return undefined;
  const [index, count] = v.split('/').map(Number);
  return { index: index!, count: count! };
}

/** What an acceptor tells the primary once it serves. */
export interface AcceptorReady {
  url: string;
  grpcPort?: number;
  kubeconfigPath?: string;
}

/** Messages between the primary and its acceptors (JSON over the cluster's IPC channel). */
export type AcceptorMessage =
  | { svc: 'ready'; info: AcceptorReady }
  /** An acceptor asks for every acceptor's figures (a /metrics scrape); the primary asks each one. */
  | { svc: 'gather'; id: number; what: string }
  | { svc: 'collect'; id: number; what: string }
  | { svc: 'collected'; id: number; data: unknown }
  | { svc: 'gathered'; id: number; data: unknown[] }
  /** Audit log lines (whole lines, UTF-8) for the file the primary owns, and the outcome of their write. */
  | { svc: 'audit'; id: number; lines: string }
  | { svc: 'audited'; id: number; error?: string };

const isAcceptorMessage = (m: unknown): m is AcceptorMessage => typeof m === 'object' && m !== null && typeof (m as { svc?: unknown }).svc === 'string';

/** How long the primary lets acceptors drain on SIGTERM before it kills them (they stop themselves at 20 s). */
const ACCEPTOR_STOP_BACKSTOP_MS = 25_000;

/** How long the primary waits for each acceptor's share of a gather. */
const GATHER_TIMEOUT_MS = 2000;

interface Member {
  index: number;
  worker: Worker;
  ready: boolean;
  /** Output of a not-yet-ready acceptor other than the first: start-up lines every acceptor prints alike. */
  held: string[] | undefined;
}

/** Forwards a child's stream to ours a whole line at a time, so two acceptors' lines never mix. */
function forwardLines(from: NodeJS.ReadableStream, write: (line: string) => void): void {
  let rest = '';
  from.setEncoding('utf8');
  from.on('data', (chunk: string) => {
    const text = rest + chunk;
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      rest = text;
      return;
    }
    rest = text.slice(end + 1);
    write(text.slice(0, end + 1));
  });
  from.on('end', () => {
    if (rest) write(rest + '\n');
    rest = '';
  });
}

export class AcceptorExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** The primary's view of its acceptors: start, replace, gather, stop. */
export class AcceptorGroup {
  private readonly members: (Member | undefined)[] = [];
  private stopping = false;
  private started = false;
  private nextGather = 1;
  private readonly gathers = new Map<number, { want: number; data: unknown[]; done: (data: unknown[]) => void; timer: NodeJS.Timeout }>();
  /** Consecutive failed starts of each slot, for the replacement backoff. */
  private readonly failures: number[] = [];

  /** Audit lines of every acceptor are written in the order they arrive, one write at a time. */
  private auditWrites: Promise<void> = Promise.resolve();

  constructor(
    readonly count: number,
    private readonly say: (line: string) => void,
    /** The audit log file (--audit-log-path), opened by the primary: one writer rotates it. */
    private readonly auditLog?: LineSink,
    /** The embedded store, written here for every acceptor (the one writer of the machine). */
    private readonly store?: LmdbStore,
  ) {}

  private audit(m: Member, id: number, lines: string): void {
    const sink = this.auditLog;
    this.auditWrites = this.auditWrites.then(async () => {
      let error: string | undefined;
      try {
        if (!sink) throw new Error('no audit log is open');
        await sink.write(Buffer.from(lines, 'utf8'));
      } catch (e) {
        error = (e as Error).message;
      }
      this.send(m, error === undefined ? { svc: 'audited', id } : { svc: 'audited', id, error });
    });
  }

  /** Starts every acceptor; resolves with the first one's serving info once all serve. */
  start(): Promise<AcceptorReady> {
    return new Promise((resolveStart, rejectStart) => {
      let pending = this.count;
      let first: AcceptorReady | undefined;
      const onReady = (index: number, info: AcceptorReady) => {
        if (this.started) return;
        if (index === 0) first = info;
        if (--pending === 0) {
          this.started = true;
          resolveStart(first!);
        }
      };
      const onEarlyExit = (m: Member, code: number) => {
        if (this.started) return;
        // a start that fails stops the whole server; the failing acceptor's output says why
        if (m.held) for (const line of m.held) process.stderr.write(line);
        this.stopping = true;
        for (const other of this.members) if (other && other !== m) other.worker.process.kill('SIGKILL');
        rejectStart(new AcceptorExitError(`acceptor ${m.index} exited with ${code} before serving`, code || 1));
      };
      for (let i = 0; i < this.count; i++) this.fork(i, onReady, onEarlyExit);
    });
  }

  private fork(index: number, onReady: (index: number, info: AcceptorReady) => void, onEarlyExit: (m: Member, code: number) => void): void {
    const worker = cluster.fork({ [ROLE_ENV]: `${index}/${this.count}` });
    const m: Member = { index, worker, ready: false, held: index === 0 ? undefined : [] };
    this.members[index] = m;
    const out = (stream: NodeJS.WriteStream) => (line: string) => {
      if (m.held) m.held.push(line);
      else stream.write(line);
    };
    forwardLines(worker.process.stdout!, out(process.stdout));
    forwardLines(worker.process.stderr!, out(process.stderr));
    const store = this.store;
    if (store) serveWrites(worker, (op) => store.applyWrite(op));
    worker.on('message', (msg: unknown) => {
      if (!isAcceptorMessage(msg)) return;
      if (msg.svc === 'ready') {
        m.ready = true;
        m.held = undefined;
        this.failures[index] = 0;
        onReady(index, msg.info);
      } else if (msg.svc === 'gather') void this.gather(msg.what).then((data) => this.send(m, { svc: 'gathered', id: msg.id, data }));
      else if (msg.svc === 'collected') this.collected(msg.id, msg.data);
      else if (msg.svc === 'audit') this.audit(m, msg.id, msg.lines);
    });
    worker.on('exit', (code, signal) => {
      if (this.members[index] === m) this.members[index] = undefined;
      if (this.stopping) return;
      if (!m.ready) {
        if (!this.started) return onEarlyExit(m, code ?? 1);
        this.failures[index] = (this.failures[index] ?? 0) + 1;
      }
      // a dead acceptor's connections are gone with it; the others never noticed. Its slot gets a new one.
      const delay = Math.min(5000, 100 * 2 ** Math.min(6, this.failures[index] ?? 0));
      this.say(`svc-apiserver: acceptor ${index} (pid ${worker.process.pid}) ended (${signal ?? `exit code ${code}`}); starting another in ${delay} ms`);
      setTimeout(() => {
        if (!this.stopping) this.fork(index, () => undefined, () => undefined);
      }, delay).unref();
    });
  }

  private send(m: Member, msg: AcceptorMessage): void {
    if (m.worker.isConnected()) m.worker.send(msg);
  }

  /** Asks every serving acceptor for `what` and resolves with their answers (late or dead ones left out). */
  private gather(what: string): Promise<unknown[]> {
    const id = this.nextGather++;
    const asked = this.members.filter((m): m is Member => m !== undefined && m.ready && m.worker.isConnected());
    return new Promise((done) => {
      const g = { want: asked.length, data: [] as unknown[], done, timer: setTimeout(() => this.finishGather(id), GATHER_TIMEOUT_MS) };
      this.gathers.set(id, g);
      for (const m of asked) this.send(m, { svc: 'collect', id, what });
      if (asked.length === 0) this.finishGather(id);
    });
  }

  private collected(id: number, data: unknown): void {
    const g = this.gathers.get(id);
    if (!g) return;
    g.data.push(data);
    if (g.data.length >= g.want) this.finishGather(id);
  }

  private finishGather(id: number): void {
    const g = this.gathers.get(id);
    if (!g) return;
    this.gathers.delete(id);
    clearTimeout(g.timer);
    g.done(g.data);
  }

  /** The acceptors' pids (tests and the bench find each acceptor's threads by them). */
  get pids(): number[] {
    return this.members.flatMap((m) => (m?.worker.process.pid ? [m.worker.process.pid] : []));
  }

  /** SIGTERM to every acceptor (each drains as a lone server would); resolves when all have exited. */
  async stop(): Promise<boolean> {
    this.stopping = true;
    const live = this.members.filter((m): m is Member => m !== undefined);
    const exits = live.map((m) => new Promise<boolean>((r) => (m.worker.isDead() ? r(true) : m.worker.once('exit', (code) => r(code === 0)))));
    for (const m of live) m.worker.process.kill('SIGTERM');
    // an acceptor whose drain hangs is ended: each gives itself a deadline too, this one is the backstop
    const backstop = setTimeout(() => {
      for (const m of live) if (!m.worker.isDead()) m.worker.process.kill('SIGKILL');
    }, ACCEPTOR_STOP_BACKSTOP_MS);
    const clean = (await Promise.all(exits)).every(Boolean);
    clearTimeout(backstop);
    // the acceptors' last audit lines and writes were made before they could exit
    await this.auditWrites;
    this.auditLog?.close();
    await this.store?.close();
    return clean;
  }
}

/**
 * The primary: takes the data directory, makes generated certificates once (so every acceptor serves
 * the same ones), starts the acceptors. Resolves with the group once all serve.
 */
export async function startAcceptors(o: ServerOptions, count: number, say: (line: string) => void): Promise<{ group: AcceptorGroup; ready: AcceptorReady; release: () => void }> {
  o.dataDir = resolve(o.dataDir);
  mkdirSync(o.dataDir, { recursive: true });
  const release = ownsDataDir(o.storageBackend) ? lockDataDir(o.dataDir) : () => undefined;
  let store: LmdbStore | undefined;
  try {
    if (!o.tlsCertFile) ensureGeneratedTls(o.dataDir, o.bindAddress, 0);
    // a log path that cannot be opened stops the start here, once, as it would a lone server
    const auditOptions = logBackendOptions(o);
    const auditLog = auditOptions && openLineSink(auditOptions);
    // the store's writes carry bytes: the structured-clone serialization keeps them bytes
    cluster.setupPrimary({ exec: process.argv[1]!, args: process.argv.slice(2), silent: true, serialization: 'advanced' });
    store = o.storageBackend === 'lmdb' ? new LmdbStore({ path: storageOptionsFrom(o).path, sharedByProcesses: true }) : undefined;
    const group = new AcceptorGroup(count, say, auditLog, store);
    const ready = await group.start();
    return { group, ready, release };
  } catch (e) {
    await store?.close();
    release();
    throw e;
  }
}

/** An acceptor's side of the IPC channel: readiness, and answering and asking gathers. */
export class AcceptorLink {
  private nextId = 1;
  private readonly waiting = new Map<number, (data: unknown[]) => void>();
  private readonly providers = new Map<string, () => Promise<unknown>>();
  private readonly auditing = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();

  constructor() {
    process.on('message', (msg: unknown) => {
      if (!isAcceptorMessage(msg)) return;
      if (msg.svc === 'collect') {
        const provide = this.providers.get(msg.what);
        const answer = provide ? provide() : Promise.resolve(undefined);
        void answer.then(
          (data) => this.send({ svc: 'collected', id: msg.id, data }),
          () => this.send({ svc: 'collected', id: msg.id, data: undefined }),
        );
      } else if (msg.svc === 'gathered') {
        this.waiting.get(msg.id)?.(msg.data);
        this.waiting.delete(msg.id);
      } else if (msg.svc === 'audited') {
        const w = this.auditing.get(msg.id);
        this.auditing.delete(msg.id);
        if (msg.error === undefined) w?.resolve();
        else w?.reject(new Error(msg.error));
      }
    });
  }

  /**
   * Calls `stop` when the primary is gone (its channel closed). Node's cluster module would otherwise
   * end the acceptor with process.exit() on the spot: that skips the drain, and process.exit() while a
   * store write is open on a native thread never returns and keeps the store's write lock from every
   * other process on the data dir. Its own handler is replaced by `stop`.
   */
  onPrimaryGone(stop: () => void): void {
    process.removeAllListeners('disconnect');
    process.once('disconnect', stop);
  }

  private send(msg: AcceptorMessage): void {
    if (process.connected) process.send!(msg);
  }

  ready(info: AcceptorReady): void {
    this.send({ svc: 'ready', info });
  }

  /** The audit log as this acceptor writes it: its lines go to the primary, which owns the file. */
  auditLines(): LineSink {
    return {
      write: (bytes) =>
        new Promise<void>((resolve, reject) => {
          if (!process.connected) return reject(new Error('the primary process is gone'));
          const id = this.nextId++;
          this.auditing.set(id, { resolve, reject });
          this.send({ svc: 'audit', id, lines: bytes.toString('utf8') });
        }),
      close: () => undefined,
    };
  }

  /** What this acceptor answers when any acceptor gathers `what`. */
  provide(what: string, provider: () => Promise<unknown>): void {
    this.providers.set(what, provider);
  }

  /** Every serving acceptor's answer to `what` (this one's included); undefined when the primary does not answer. */
  gather(what: string): Promise<unknown[] | undefined> {
    const id = this.nextId++;
    return new Promise((resolveGather) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolveGather(undefined);
      }, GATHER_TIMEOUT_MS * 2);
      this.waiting.set(id, (data) => {
        clearTimeout(timer);
        resolveGather(data);
      });
      this.send({ svc: 'gather', id, what });
    });
  }
}
