/**
 * The thread that reads the kernel's TCP tables for the stuck-watch sweep (see SendQueueReader): the
 * table lists every socket of the network namespace and the kernel takes tens of milliseconds to
 * write it out with thousands of connections, which must not be the request thread's time.
 */
import { parentPort } from 'node:worker_threads';
import { sendQueues } from './send-queues.js';

parentPort!.on('message', (keys: string[]) => {
  const all = sendQueues();
  if (!all) return parentPort!.postMessage(undefined);
  // only the connections asked about go back: the whole table may hold tens of thousands
  const out = new Map<string, number>();
  for (const k of keys) {
    const v = all.get(k);
    if (v !== undefined) out.set(k, v);
  }
  parentPort!.postMessage(out);
});
