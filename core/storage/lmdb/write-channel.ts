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

/**
 * The writes a channel has sent and not yet had answered, each by its id: an answer settles its
 * write (answers to other senders' ids are not ours and are passed over). Both channels keep one:
 * the ids differ only in what makes them unique where the answers arrive.
 */
class WritesInFlight<Id> {
  private readonly waiting = new Map<Id, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  /** Registers the write `id`, then `send`s it; settles with its answer. */
  send(id: Id, send: () => void): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      send();
    });
  }

  answered(id: Id, out: WriteOutcome): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    if ('ok' in out) w.resolve(out.ok);
    else if ('storeError' in out) w.reject(new StoreError(out.storeError.code, out.storeError.message, out.storeError.revision));
    else w.reject(new Error(`the store's writer failed: ${out.failure}`));
  }

  /** Every write still waiting fails with `why()`: no answer will come. */
  failAll(why: () => Error): void {
    for (const w of this.waiting.values()) w.reject(why());
    this.waiting.clear();
  }
}

const primaryGone = (): Error => new Error('the primary process (the store\'s writer) is gone: the write was not made');

/** An acceptor's main thread: writes go to the primary over the process's IPC channel. */
export function primaryWriteChannel(): WriteChannel {
  // ids by number: the process's IPC channel answers this process only
  const inFlight = new WritesInFlight<number>();
  let nextId = 1;
  const onMessage = (m: unknown): void => {
    if (isWriteMessage(m) && m.svcStore === 'written') inFlight.answered(m.id, m.out);
  };
  // a write the primary never answers: it died with it (uncommitted, or committed and unacknowledged, as with any crash)
  const onGone = (): void => inFlight.failAll(primaryGone);
  process.on('message', onMessage);
  process.on('disconnect', onGone);
  return {
    write: (op) => {
      if (!process.connected || !process.send) return Promise.reject(primaryGone());
      const id = nextId++;
      return inFlight.send(id, () => process.send!({ svcStore: 'write', id, op } satisfies WriteMessage));
    },
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
  // ids `<threadId>:<n>`: the broadcast answers reach every thread, each takes its own
  const inFlight = new WritesInFlight<string>();
  let nextId = 1;
  bc.onmessage = (e) => {
    const m = (e as { data: ThreadWrite | ThreadWritten }).data;
    if (m.svcStore === 'written') inFlight.answered(m.id, m.out);
  };
  return {
    write: (op) => {
      const id = `${threadId}:${nextId++}`;
      return inFlight.send(id, () => bc.postMessage({ svcStore: 'write', id, op } satisfies ThreadWrite));
    },
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
