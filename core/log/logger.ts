/**
 * The server's log: upstream-like text lines by default (klog's `I1127 07:05:00.123456 <pid> ...]`
 * header, then the message and key="value" pairs) or, with --logging-format=json, one JSON object per
 * line (`ts`, `caller`, `msg`, `v`, the pairs; `err` on errors), as upstream's structured logging.
 * `ts` is milliseconds since the epoch with their fraction, as component-base's JSON logger writes it.
 * `-v` sets the verbosity: a line of level n is written when n <= v; nothing per request at the default.
 */
import { performance } from 'node:perf_hooks';
import { format as formatArgs } from 'node:util';
import { compareUtf8 } from '../api/go-format.js';

export type LoggingFormat = 'text' | 'json';
export const loggingFormats: readonly LoggingFormat[] = ['text', 'json'];

export type Severity = 'I' | 'W' | 'E';
export type LogPairs = Readonly<Record<string, unknown>>;

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** Where the high-resolution clock's readings sit on the wall clock (epoch ms = offset + performance.now()). */
let clockOffset = performance.timeOrigin;

/**
 * Now, in milliseconds since the epoch with a sub-millisecond fraction (upstream logs nanoseconds / 1e6).
 * The fraction comes from the monotonic clock, kept on Date.now(): a reading more than a millisecond
 * below or two above the wall clock's (the wall clock was set, or the two drifted) sets the offset
 * again, and that line has the wall clock's whole millisecond.
 */
export function epochMillisNow(): number {
  const fine = performance.now();
  const wall = Date.now();
  const t = clockOffset + fine;
  if (t >= wall - 1 && t < wall + 2) return t;
  clockOffset = wall - fine;
  return wall;
}

/** klog's header: severity, MMDD, time with microseconds, pid. The time is local, as klog's (Go's time.Now()). */
function klogHeader(sev: Severity, epochMs: number): string {
  const d = new Date(Math.floor(epochMs));
  const us = pad(d.getMilliseconds() * 1000 + Math.floor((epochMs - Math.floor(epochMs)) * 1000), 6);
  return `${sev}${pad(d.getMonth() + 1)}${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${us} ${String(process.pid).padStart(7)} svc-apiserver]`;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
};

/**
 * A pair's value as upstream's loggers write a Go map: its keys sorted (encoding/json, which klog's
 * text format and zap's JSON encoder use for maps, sorts them), within lists and nested maps too.
 * Plain objects are maps here; anything else is written as JSON writes it.
 */
function asGoMap(v: unknown): unknown {
  if (Array.isArray(v)) return v.some((e) => typeof e === 'object' && e !== null) ? v.map(asGoMap) : v;
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort(compareUtf8)) out[k] = asGoMap(v[k]);
  return out;
}

function textValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(asGoMap(v)) ?? 'null';
}

/** A pair's value in a JSON line: an Error as its message, a map with its keys sorted. */
function jsonValue(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  return v instanceof Error ? v.message : asGoMap(v);
}

export class Logger {
  constructor(
    readonly format: LoggingFormat = 'text',
    readonly verbosity = 0,
    /** Where lines go: info to stdout, warnings and errors to stderr, unless told otherwise. */
    private readonly out: (line: string, severity: Severity) => void = (l, sev) => (sev === 'I' ? process.stdout : process.stderr).write(`${l}\n`),
    /** The time of a line, in milliseconds since the epoch (fractional). */
    private readonly now: () => number = epochMillisNow,
  ) {}

  /** Whether lines of level `level` are written. */
  enabled(level: number): boolean {
    return level <= this.verbosity;
  }

  info(msg: string, pairs?: LogPairs, level = 0): void {
    if (level <= this.verbosity) this.write('I', msg, pairs, level);
  }

  warn(msg: string, pairs?: LogPairs): void {
    this.write('W', msg, pairs, 0);
  }

  error(msg: string, err?: unknown, pairs?: LogPairs): void {
    this.write('E', msg, err === undefined ? pairs : { ...pairs, err: err instanceof Error ? err.message : String(err) }, 0);
  }

  private write(sev: Severity, msg: string, pairs: LogPairs | undefined, level: number): void {
    const d = this.now();
    if (this.format === 'json') {
      const o: Record<string, unknown> = { ts: d, caller: 'svc-apiserver', msg };
      // upstream's JSON: errors carry `err` and no `v`; info lines carry their verbosity
      if (sev !== 'E') o.v = level;
      if (pairs) for (const k in pairs) o[k] = jsonValue(pairs[k]);
      this.out(JSON.stringify(o), sev);
      return;
    }
    let line = `${klogHeader(sev, d)} ${JSON.stringify(msg)}`;
    if (pairs) for (const k in pairs) line += ` ${k}=${textValue(pairs[k])}`;
    this.out(line, sev);
  }

  /**
   * Sends console output through this logger, so every line the process writes has the chosen format
   * (parts that print with console.* keep working, and a JSON log stays one object per line).
   */
  captureConsole(): () => void {
    const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error };
    console.log = (...a: unknown[]) => this.info(formatArgs(...a));
    console.info = (...a: unknown[]) => this.info(formatArgs(...a));
    console.warn = (...a: unknown[]) => this.warn(formatArgs(...a));
    console.error = (...a: unknown[]) => this.error(formatArgs(...a));
    return () => Object.assign(console, saved);
  }
}
