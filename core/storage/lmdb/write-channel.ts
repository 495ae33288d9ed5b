/**
 * One writer per machine for a server's acceptors. Every process of the server reads the store's
 * directory directly (LMDB is built for many readers on one mapped file), but only the primary
 * process writes it: an acceptor's main thread sends each write over the cluster's IPC channel, a
 * pool thread of an acceptor sends it to its main thread, which passes it on. So:
 * - a process killed in the middle of a write holds no write lock: the writer is a process that
 *   serves no connection, and acceptors come and go without ever touching LMDB's writer lock;
 * - concurrent writes of every acceptor meet in one process, where lmdb-js groups the transactions
 *   begun in one event turn into one commit and one fdatasync;
 * - a write is answered after its commit is durable, and the commit is readable by every process
 *   before the answer leaves the primary (LMDB writes the meta page last), so read-your-writes holds
 *   on any acceptor.
 *
 * The messages are the store's own (`svcStore`), beside the server's acceptor messages on the same
 * channel; values travel as bytes (the cluster runs with the `advanced` serialization).
 */
import { BroadcastChannel, isMainThread, threadId } from 'node:worker_threads';
import { StoreError, type StoreErrorCode } from '../interface.js';

/** One write, as the store's methods take it. */
export type WriteOp =
  | { op: 'create'; key: string; value: Uint8Array }
  | { op: 'update'; key: string; expected: number; value: Uint8Array }
  | { op: 'delete'; key: string; expected?: number }
  | { op: 'compact'; revision: number };

/** A write's outcome: its result, the StoreError it refused with, or a failure (the commit did not happen). */
export type WriteOutcome = { ok: unknown } | { storeError: { code: StoreErrorCode; message: string; revision: number } } | { failure: string };

/** Where a process (or thread) sends its writes. */
export interface WriteChannel {
  write(op: WriteOp): Promise<unknown>;
  close(): void;
}

export type WriteMessage = { svcStore: 'write'; id: number; op: WriteOp } | { svcStore: 'written'; id: number; out: WriteOutcome };

const isWriteMessage = (m: unknown): m is WriteMessage => typeof m === 'object' && m !== null && typeof (m as { svcStore?: unknown }).svcStore === 'string';

/** The outcome of running a write (the primary's side). */
export async function outcomeOf(run: () => Promise<unknown>): Promise<WriteOutcome> {
  try {
    return { ok: await run() };
  } catch (e) {
    if (e instanceof StoreError) return { storeError: { code: e.code, message: e.message, revision: e.revision } };
    return { failure: (e as Error).message };
  }
}

function settle(out: WriteOutcome, resolve: (v: unknown) => void, reject: (e: Error) => void): void {
  if ('ok' in out) resolve(out.ok);
  else if ('storeError' in out) reject(new StoreError(out.storeError.code, out.storeError.message, out.storeError.revision));
  else reject(new Error(`the store's writer failed: ${out.failure}`));
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

const primaryGone = (): Error => new Error('the primary process (the store\'s writer) is gone: the write was not made');

/** An acceptor's main thread: writes go to the primary over the process's IPC channel. */
export function primaryWriteChannel(): WriteChannel {
  const pending = new Map<number, Pending>();
  let nextId = 1;
  const onMessage = (m: unknown): void => {
    if (!isWriteMessage(m) || m.svcStore !== 'written') return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    settle(m.out, p.resolve, p.reject);
  };
  // a write the primary never answers: it died with it (uncommitted, or committed and unacknowledged, as with any crash)
  const onGone = (): void => {
    for (const p of pending.values()) p.reject(primaryGone());
    pending.clear();
  };
  process.on('message', onMessage);
  process.on('disconnect', onGone);
  return {
    write: (op) =>
      new Promise((resolve, reject) => {
        if (!process.connected || !process.send) return reject(primaryGone());
        const id = nextId++;
        pending.set(id, { resolve, reject });
        process.send({ svcStore: 'write', id, op } satisfies WriteMessage);
      }),
    close: () => {
      process.off('message', onMessage);
      process.off('disconnect', onGone);
      onGone();
    },
  };
}

/** The name of the channel between an acceptor's threads for the store at `path`. */
const threadChannelName = (path: string): string => `svc-store-writes:${path}`;

interface ThreadWrite {
  svcStore: 'write';
  /** `<threadId>:<n>`: every thread hears every answer and takes its own. */
  id: string;
  op: WriteOp;
}
interface ThreadWritten {
  svcStore: 'written';
  id: string;
  out: WriteOutcome;
}

/** A pool thread of an acceptor: writes go to the main thread, which sends them on to the primary. */
export function threadWriteChannel(path: string): WriteChannel {
  const bc = new BroadcastChannel(threadChannelName(path));
  bc.unref();
  const pending = new Map<string, Pending>();
  let nextId = 1;
  bc.onmessage = (e) => {
    const m = (e as { data: ThreadWrite | ThreadWritten }).data;
    if (m.svcStore !== 'written') return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    settle(m.out, p.resolve, p.reject);
  };
  return {
    write: (op) =>
      new Promise((resolve, reject) => {
        const id = `${threadId}:${nextId++}`;
        pending.set(id, { resolve, reject });
        bc.postMessage({ svcStore: 'write', id, op } satisfies ThreadWrite);
      }),
    close: () => bc.close(),
  };
}

/** On an acceptor's main thread: passes its pool threads' writes to `channel` and their outcomes back. */
export function relayThreadWrites(path: string, channel: WriteChannel): () => void {
  const bc = new BroadcastChannel(threadChannelName(path));
  bc.unref();
  bc.onmessage = (e) => {
    const m = (e as { data: ThreadWrite | ThreadWritten }).data;
    if (m.svcStore !== 'write') return;
    void outcomeOf(() => channel.write(m.op)).then((out) => bc.postMessage({ svcStore: 'written', id: m.id, out } satisfies ThreadWritten));
  };
  return () => bc.close();
}

/** Where this thread of an acceptor sends its writes. */
export function acceptorWriteChannel(path: string): { channel: WriteChannel; close: () => void } {
  if (!isMainThread) {
    const channel = threadWriteChannel(path);
    return { channel, close: () => channel.close() };
  }
  const channel = primaryWriteChannel();
  const stopRelay = relayThreadWrites(path, channel);
  return {
    channel,
    close: () => {
      stopRelay();
      channel.close();
    },
  };
}

/** What the primary needs of one acceptor process: its messages and a way to answer. */
export interface WriterPeer {
  on(event: 'message', listener: (m: unknown) => void): unknown;
  send(m: WriteMessage): unknown;
  isConnected(): boolean;
}

/** The primary's side: runs each acceptor's writes with `apply` and answers with the outcome. */
export function serveWrites(peer: WriterPeer, apply: (op: WriteOp) => Promise<WriteOutcome>): void {
  peer.on('message', (m) => {
    if (!isWriteMessage(m) || m.svcStore !== 'write') return;
    void apply(m.op).then((out) => {
      if (peer.isConnected()) peer.send({ svcStore: 'written', id: m.id, out });
    });
  });
}
