/**
 * Waiting for the store at start: a remote store (etcd) may come up after the server, so the server
 * asks it until it answers or --storage-initialization-timeout passes, saying what it waits for, and
 * then fails with a message naming the store. An embedded store answers at once.
 */
import { StartError } from '../api/start-error.js';
import type { Store } from './interface.js';

export async function waitForStore(store: Store, timeoutMs: number, log: (line: string) => void = (l) => console.warn(l)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let delay = 250;
  let said = false;
  for (;;) {
    try {
      await store.currentRevision();
      if (said) log('svc-apiserver: the store answers; loading the watch cache');
      return;
    } catch (err) {
      const message = (err as Error).message;
      if (Date.now() + delay > deadline) {
        throw new StartError(`storage did not become ready within ${Math.round(timeoutMs / 1000)}s (--storage-initialization-timeout): ${message}`);
      }
      if (!said) log(`svc-apiserver: waiting for the store: ${message}`);
      said = true;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
    }
  }
}
