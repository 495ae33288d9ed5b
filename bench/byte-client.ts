/**
 * A load client that reads answers as bytes: keep-alive HTTP/1.1 over TLS, one request in flight per
 * connection, each answer's end found from its Content-Length or its chunk sizes, the body skipped
 * without being looked at. autocannon appends every body to a JS string, which for a binary body
 * (protobuf, CBOR) is a UTF-8 decode into a two-byte string: about 0.6 ms for a 320 KB protobuf list
 * against 0.05 ms for the 520 KB JSON one, more than the server spends on the list. With client and
 * server on the same cores, that decoding, not the server, would set the ratio between formats.
 */
import { connect, type TLSSocket } from 'node:tls';
import type { LoadResult } from './lib.js';

export interface ByteLoadOptions {
  url: string;
  headers: Record<string, string>;
  connections: number;
  /** Seconds measured. */
  duration: number;
  ca: string;
}

const CRLF = 0x0d;
const HEAD_END = Buffer.from('\r\n\r\n');

/** Where one connection is in the answer it reads. */
const enum Part {
  Head,
  Body,
  ChunkSize,
  ChunkData,
  LastChunkEnd,
}

/** One connection: sends a request, reads the answer's framing, calls `done` with its status, repeats. */
class ByteConnection {
  private part = Part.Head;
  private head: Buffer = Buffer.alloc(0);
  private sizeLine = '';
  /** Body or chunk bytes (with the chunk's CRLF) still to skip. */
  private left = 0;
  private status = 0;
  private started = 0;
  private stopped = false;

  constructor(
    private readonly sock: TLSSocket,
    private readonly request: Buffer,
    private readonly done: (status: number, ms: number) => void,
  ) {
    sock.on('data', (b: Buffer) => this.read(b));
    sock.on('error', () => undefined);
  }

  send(): void {
    if (this.stopped) return;
    this.started = performance.now();
    this.sock.write(this.request);
  }

  stop(): void {
    this.stopped = true;
    this.sock.destroy();
  }

  private finish(): void {
    this.part = Part.Head;
    this.done(this.status, performance.now() - this.started);
    this.send();
  }

  private read(b: Buffer): void {
    let i = 0;
    while (i < b.length) {
      switch (this.part) {
        case Part.Head:
          i = this.readHead(b, i);
          break;
        case Part.Body:
        case Part.ChunkData: {
          const n = Math.min(this.left, b.length - i);
          i += n;
          this.left -= n;
          if (this.left > 0) break;
          if (this.part === Part.Body) this.finish();
          else this.part = Part.ChunkSize;
          break;
        }
        case Part.ChunkSize: {
          const eol = b.indexOf(CRLF, i);
          const end = eol < 0 ? b.length : eol;
          this.sizeLine += b.toString('latin1', i, end);
          if (eol < 0) return;
          i = eol + 2; // the LF may be in the next read: LastChunkEnd / ChunkData skip by count
          const size = parseInt(this.sizeLine, 16);
          this.sizeLine = '';
          if (size === 0) {
            this.part = Part.LastChunkEnd;
            this.left = 2; // the empty trailer's CRLF
          } else {
            this.part = Part.ChunkData;
            this.left = size + 2;
          }
          if (i > b.length) {
            // the size line's LF was not in this read: it counts against what follows
            this.left += i - b.length;
            return;
          }
          break;
        }
        case Part.LastChunkEnd: {
          const n = Math.min(this.left, b.length - i);
          i += n;
          this.left -= n;
          if (this.left === 0) this.finish();
          break;
        }
      }
    }
  }

  /** Gathers the head until its blank line; returns where the body starts in `b`, or b.length. */
  private readHead(b: Buffer, from: number): number {
    const had = this.head.length;
    this.head = had ? Buffer.concat([this.head, b.subarray(from)]) : b.subarray(from);
    const end = this.head.indexOf(HEAD_END);
    if (end < 0) {
      if (!had) this.head = Buffer.from(this.head);
      return b.length;
    }
    const text = this.head.toString('latin1', 0, end).toLowerCase();
    this.head = Buffer.alloc(0);
    this.status = Number(text.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/.exec(text);
    if (length) {
      this.left = Number(length[1]);
      this.part = Part.Body;
    } else if (text.includes('\r\ntransfer-encoding: chunked')) this.part = Part.ChunkSize;
    else throw new Error('answer without a length');
    const bodyStart = from + (end + HEAD_END.length - had);
    if (this.part === Part.Body && this.left === 0) this.finish();
    return bodyStart;
  }
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs `seconds` of load without warm-up; answers finished in that window count. */
export async function measureBytes(o: ByteLoadOptions, seconds = o.duration): Promise<LoadResult> {
  const u = new URL(o.url);
  const headerLines = Object.entries({ host: u.host, ...o.headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  const request = Buffer.from(`GET ${u.pathname}${u.search} HTTP/1.1\r\n${headerLines.join('')}\r\n`);
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const conns: ByteConnection[] = [];
  await Promise.all(
    Array.from(
      { length: o.connections },
      () =>
        new Promise<void>((resolve, reject) => {
          const sock = connect({ host: u.hostname, port: Number(u.port), ca: o.ca, rejectUnauthorized: false }, () => resolve());
          sock.once('error', reject);
          sock.on('close', () => errors++);
          conns.push(
            new ByteConnection(sock, request, (status, ms) => {
              latencies.push(ms);
              if (status < 200 || status >= 300) non2xx++;
            }),
          );
        }),
    ),
  );
  errors = 0;
  for (const c of conns) c.send();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const n = latencies.length;
  const closedEarly = errors;
  for (const c of conns) c.stop();
  latencies.sort((a, b) => a - b);
  return { rps: n / seconds, p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), errors: closedEarly, non2xx };
}
