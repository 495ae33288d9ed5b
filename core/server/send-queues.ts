/**
 * What the kernel holds for each TCP connection that the peer has not acknowledged (Linux's
 * /proc/self/net/tcp and tcp6, `tx_queue`). A client that stops reading keeps acknowledging only
 * until its receive buffer is full; after that, up to the send buffer (several MiB, more on loopback)
 * waits in our kernel before Node's own buffer grows at all. Counting it is how a watch over HTTP/1.1
 * tells a stuck reader within seconds rather than after megabytes. Elsewhere (no procfs) nothing is
 * known and only Node's buffer counts.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

const TABLES = ['/proc/self/net/tcp', '/proc/self/net/tcp6'];
const ESTABLISHED = '01';
/** Room for the table of about 27,000 connections (150 bytes each); it grows when there are more. */
const READ_BUFFER_BYTES = 4 * 1024 * 1024;
let readBuffer: Buffer | undefined;

/** `localPort:remotePort` of a connection, the key of sendQueues(). */
export const connectionKey = (localPort: number, remotePort: number): string => `${localPort}:${remotePort}`;

/**
 * Reads a table synchronously: the kernel hands it over a page or so per read call, and an
 * asynchronous read would wait a turn of the (busy) event loop for each, seconds in all under load;
 * read at once it costs the kernel's walk of its hash table, milliseconds.
 */
function readTable(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    let buf = (readBuffer ??= Buffer.allocUnsafe(READ_BUFFER_BYTES));
    let n = 0;
    for (;;) {
      // more connections than room: a buffer twice the size, kept for the next reads
      if (n === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger);
        buf = readBuffer = bigger;
      }
      const bytesRead = readSync(fd, buf, n, buf.length - n, null);
      if (bytesRead === 0) return buf.toString('latin1', 0, n);
      n += bytesRead;
    }
  } finally {
    closeSync(fd);
  }
}

const portOf = (address: string): number => parseInt(address.slice(address.lastIndexOf(':') + 1), 16);

/**
 * Unacknowledged bytes per established connection, keyed by connectionKey(); a port pair seen twice
 * (two peers that chose the same port) is left out, as is everything when procfs is not there.
 */
export function sendQueues(): Map<string, number> | undefined {
  const out = new Map<string, number>();
  const ambiguous = new Set<string>();
  let readAny = false;
  for (const path of TABLES) {
    const text = readTable(path);
    if (text === undefined) continue;
    readAny = true;
    for (const line of text.split('\n')) {
      // "  sl  local_address rem_address st tx_queue:rx_queue ..."
      const f = line.trim().split(/\s+/);
      if (f.length < 5 || f[3] !== ESTABLISHED) continue;
      const key = connectionKey(portOf(f[1]!), portOf(f[2]!));
      const tx = parseInt(f[4]!.slice(0, f[4]!.indexOf(':')), 16);
      if (out.has(key)) ambiguous.add(key);
      out.set(key, tx);
    }
  }
  for (const k of ambiguous) out.delete(k);
  return readAny ? out : undefined;
}

/**
 * sendQueues() on a thread of its own, for a request thread that cannot stop for the read: one
 * read at a time, the answer restricted to the connections asked about. The thread starts on the
 * first read and stays (unreferenced) until close().
 */
export class SendQueueReader {
  private worker: Worker | undefined;
  private pending: Promise<Map<string, number> | undefined> | undefined;

  /** Unacknowledged bytes of the connections `keys` (connectionKey()), or undefined without procfs. */
  read(keys: readonly string[]): Promise<Map<string, number> | undefined> {
    if (this.pending) return this.pending;
    const w = (this.worker ??= this.start());
    // never rejects: a thread that fails or is stopped answers "nothing known" (only Node's buffer counts)
    this.pending = new Promise<Map<string, number> | undefined>((resolve) => {
      const settle = (m: Map<string, number> | undefined): void => {
        w.off('message', settle);
        w.off('error', failed);
        w.off('exit', failed);
        this.pending = undefined;
        resolve(m);
      };
      const failed = (): void => {
        if (this.worker === w) this.worker = undefined;
        settle(undefined);
      };
      w.on('message', settle);
      w.on('error', failed);
      w.on('exit', failed);
      w.postMessage(keys);
    });
    return this.pending;
  }

  private start(): Worker {
    const w = new Worker(new URL('./send-queues-worker.js', import.meta.url));
    w.unref();
    return w;
  }

  close(): void {
    void this.worker?.terminate();
    this.worker = undefined;
  }
}
