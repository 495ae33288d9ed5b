/**
 * The log backend (--audit-log-path): one JSON event per line, to a file or to stdout (`-`).
 *
 * Lines are queued in the request's own tick and written in order by one writer that coalesces what
 * arrived meanwhile into one write, so a request never waits for the disk. The file rotates as
 * upstream's lumberjack rotates it: before a line would take it past --audit-log-maxsize MB (100 when
 * 0), it is renamed `<name>-<UTC time>.<ext>` and a new file is opened; backups beyond
 * --audit-log-maxbackup (0: all kept) or older than --audit-log-maxage days (0: no limit) are removed.
 * A path that is not a regular file (/dev/null, a named pipe) is written to and never rotated.
 *
 * Modes, as upstream: `blocking` (default) and `blocking-strict` queue every event (none is dropped;
 * strict refuses a request whose RequestReceived event cannot be written because the log is failing);
 * `batch` keeps at most --audit-log-batch-buffer-size events queued and drops (and counts) beyond.
 * A failed write (full disk) loses that write's events: they are counted and logged, never fatal.
 */
import { closeSync, openSync, readdirSync, renameSync, statSync, unlinkSync, write as fsWrite, fstatSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { StartError } from '../api/start-error.js';
import { auditStats } from './stats.js';
import type { Backend } from './backend.js';

const MB = 1024 * 1024;
/**
 * How long the first queued event waits for others to join its write, and how many bytes make a
 * write leave at once: one write syscall (and thread-pool round trip) for many events keeps the
 * request path's cost per event to a string and an array push.
 */
const COALESCE_MS = 5;
const COALESCE_BYTES = 256 * 1024;
/** Each of the two write buffers; one grows past it when a burst outruns a write. */
const INITIAL_BUFFER_BYTES = 512 * 1024;
/** lumberjack's size limit when none is given. */
const DEFAULT_MAX_MB = 100;
const DAY_MS = 24 * 3600 * 1000;

export interface LogBackendOptions {
  path: string;
  maxAgeDays: number;
  maxBackups: number;
  maxSizeMB: number;
  mode: 'blocking' | 'blocking-strict' | 'batch';
  /** Events queued at most in batch mode. */
  bufferSize: number;
}

export class LogStartError extends StartError {}

/**
 * Where lines end up: a rotating file or stdout, or, in an acceptor of a server of several processes,
 * the primary process, which owns the one file (so rotation stays one writer's job).
 */
export interface LineSink {
  /** Writes whole lines (each ending in \n); rejects when the write failed. */
  write(bytes: Buffer): Promise<void>;
  close(): void;
}

/** lumberjack's backup time stamp: 2006-01-02T15-04-05.000, in UTC. */
export function backupTimestamp(d: Date): string {
  return d.toISOString().slice(0, 23).replace(/:/g, '-');
}

/** The name of a backup of `path` made at `d`: <name>-<timestamp>.<ext>. */
export function backupName(path: string, d: Date): string {
  const ext = extname(path);
  const name = basename(path, ext);
  return join(dirname(path), `${name}-${backupTimestamp(d)}${ext}`);
}

const writeFd = (fd: number, buf: Buffer): Promise<void> =>
  new Promise((resolve, reject) => {
    let off = 0;
    const more = (): void =>
      fsWrite(fd, buf, off, buf.length - off, null, (err, n) => {
        if (err) return reject(err);
        off += n;
        if (off < buf.length) more();
        else resolve();
      });
    more();
  });

class RotatingFile implements LineSink {
  private fd: number;
  private size: number;
  private readonly max: number;
  /**
   * Only a regular file rotates: a device or a pipe (/dev/null, a FIFO a collector reads) is written
   * without limit, since renaming it would move the device itself (lumberjack would, given the rights).
   */
  private readonly rotates: boolean;

  constructor(private readonly o: LogBackendOptions) {
    this.max = (o.maxSizeMB > 0 ? o.maxSizeMB : DEFAULT_MAX_MB) * MB;
    // as upstream's ensureLogFile: the file must open for appending now, or the server does not start
    try {
      this.fd = openSync(o.path, 'a', 0o600);
    } catch (e) {
      throw new LogStartError(`--audit-log-path: ensureLogFile: ${(e as Error).message}`);
    }
    const st = fstatSync(this.fd);
    this.size = st.size;
    this.rotates = st.isFile();
  }

  async write(bytes: Buffer): Promise<void> {
    // the common case: everything fits in the current file, one write
    if (this.size + bytes.length <= this.max || !this.rotates) return this.flush(bytes);
    // rotation falls between lines: write up to the last line that fits, rotate, go on
    let start = 0;
    let end = 0;
    while (end < bytes.length) {
      const next = bytes.indexOf(10, end) + 1 || bytes.length;
      if (this.size + (next - start) > this.max && this.size + (end - start) > 0) {
        if (end > start) await this.flush(bytes.subarray(start, end));
        start = end;
        this.rotate();
      }
      end = next;
    }
    if (end > start) await this.flush(bytes.subarray(start, end));
  }

  private async flush(bytes: Buffer): Promise<void> {
    await writeFd(this.fd, bytes);
    this.size += bytes.length;
  }

  /** Renames the file to a backup, opens a new one and prunes old backups (rare: synchronous is fine). */
  private rotate(): void {
    closeSync(this.fd);
    let backup = backupName(this.o.path, new Date());
    // two rotations in the same millisecond must not overwrite each other
    for (let i = 1; exists(backup); i++) backup = backupName(this.o.path, new Date(Date.now() + i));
    renameSync(this.o.path, backup);
    this.fd = openSync(this.o.path, 'a', 0o600);
    this.size = 0;
    this.prune();
  }

  /** Backups of this file, newest first. */
  private backups(): { path: string; time: number }[] {
    const ext = extname(this.o.path);
    const prefix = `${basename(this.o.path, ext)}-`;
    const dir = dirname(this.o.path);
    const out: { path: string; time: number }[] = [];
    for (const f of readdirSync(dir)) {
      if (!f.startsWith(prefix) || !f.endsWith(ext)) continue;
      const stamp = f.slice(prefix.length, f.length - ext.length);
      const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/.exec(stamp);
      if (!m) continue;
      out.push({ path: join(dir, f), time: Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`) });
    }
    return out.sort((a, b) => b.time - a.time);
  }

  private prune(): void {
    const all = this.backups();
    const cutoff = this.o.maxAgeDays > 0 ? Date.now() - this.o.maxAgeDays * DAY_MS : -Infinity;
    all.forEach((b, i) => {
      if ((this.o.maxBackups > 0 && i >= this.o.maxBackups) || b.time < cutoff) {
        try {
          unlinkSync(b.path);
        } catch {
          // already gone
        }
      }
    });
  }

  close(): void {
    closeSync(this.fd);
  }
}

const exists = (p: string): boolean => {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
};

class Stdout implements LineSink {
  write(bytes: Buffer): Promise<void> {
    // stdout may keep the chunk until written: it gets its own copy, the backend reuses its buffer
    return new Promise((resolve, reject) => process.stdout.write(Buffer.from(bytes), (err) => (err ? reject(err) : resolve())));
  }

  close(): void {}
}

/** Logs a recurring failure at most once per interval, with how many were lost meanwhile. */
export class FailureLog {
  private last = 0;
  private lost = 0;
  constructor(
    private readonly what: string,
    private readonly everyMs = 10_000,
  ) {}

  report(err: unknown, events: number): void {
    this.lost += events;
    const now = Date.now();
    if (now - this.last < this.everyMs) return;
    this.last = now;
    console.error(`svc-apiserver: audit ${this.what}: ${(err as Error)?.message ?? err}; ${this.lost} event(s) lost`);
    this.lost = 0;
  }
}

/** The file (or stdout) the options name, opened now: a path that cannot be opened is a start error. */
export function openLineSink(o: LogBackendOptions): LineSink {
  return o.path === '-' ? new Stdout() : new RotatingFile(o);
}

export class LogBackend implements Backend {
  readonly name = 'log' as const;
  readonly strict: boolean;
  /**
   * Lines waiting, encoded as they come into a buffer that is reused: the event strings die young
   * and no large buffer is allocated per write. While one buffer is written, the other fills.
   */
  private filling: Buffer = Buffer.allocUnsafe(INITIAL_BUFFER_BYTES);
  private spare: Buffer | undefined = Buffer.allocUnsafe(INITIAL_BUFFER_BYTES);
  private used = 0;
  private queuedLines = 0;
  private writing: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private closing = false;
  private readonly out: LineSink;
  private failing = false;
  private readonly failures = new FailureLog('log write failed');
  private readonly limit: number;

  constructor(
    o: LogBackendOptions,
    readonly apiVersion: string,
    out?: LineSink,
  ) {
    this.out = out ?? openLineSink(o);
    this.strict = o.mode === 'blocking-strict';
    this.limit = o.mode === 'batch' ? o.bufferSize : Infinity;
  }

  process(line: string): boolean {
    if (this.queuedLines >= this.limit) {
      auditStats.errors.log++;
      auditStats.dropped.log++;
      this.failures.report(new Error('audit buffer queue blocked'), 1);
      return false;
    }
    // UTF-8 takes at most 3 bytes a UTF-16 unit
    if (this.used + line.length * 3 > this.filling.length) this.grow(line.length * 3);
    this.used += this.filling.write(line, this.used, 'utf8');
    this.queuedLines++;
    if (!this.writing) this.writing = this.drain();
    else if (this.used >= COALESCE_BYTES) this.wake?.();
    return !(this.strict && this.failing);
  }

  private grow(atLeast: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(this.filling.length * 2, this.used + atLeast));
    this.filling.copy(bigger, 0, 0, this.used);
    this.filling = bigger;
  }

  /** Resolves after COALESCE_MS, or sooner when enough is queued or the backend shuts down. */
  private gather(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake?.(), COALESCE_MS);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  /** Writes what is queued, in order, until nothing is left; a failed write loses its lines. */
  private async drain(): Promise<void> {
    while (this.queuedLines) {
      // let the events of the next few milliseconds join this write: each write wakes a thread-pool
      // thread, which on a busy machine can take the request thread's core for the copy
      if (this.used < COALESCE_BYTES && !this.closing) await this.gather();
      const full = this.filling;
      const bytes = full.subarray(0, this.used);
      const count = this.queuedLines;
      // the spare buffer fills while this one is written (a new one when the last grew past it)
      this.filling = this.spare && this.spare.length >= INITIAL_BUFFER_BYTES ? this.spare : Buffer.allocUnsafe(INITIAL_BUFFER_BYTES);
      this.spare = undefined;
      this.used = 0;
      this.queuedLines = 0;
      try {
        await this.out.write(bytes);
        auditStats.written.log += count;
        this.failing = false;
      } catch (e) {
        this.failing = true;
        auditStats.errors.log += count;
        this.failures.report(e, count);
      }
      // a buffer grown for a burst is not kept
      this.spare = full.length <= 4 * INITIAL_BUFFER_BYTES ? full : undefined;
    }
    this.writing = undefined;
  }

  async shutdown(): Promise<void> {
    this.closing = true;
    this.wake?.();
    while (this.writing) await this.writing;
    this.out.close();
  }
}
