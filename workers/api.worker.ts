/**
 * Pool worker: opens the store (the same factory as the main thread) and runs registry tasks
 * (decode, validate, merge, store, encode). Thin by design: everything it does lives in core/.
 */
import { workerData, move, transferableSymbol, valueSymbol } from 'piscina';
import { Registry } from '../core/registry/registry.js';
import { buildRegistryContext, type RegistrySettings } from '../core/registry/build-context.js';
import { openStore, type StorageOptions } from '../core/storage/factory.js';
import { type ApiTask, type ApiTaskResult, movableBytes } from '../core/registry/task.js';
import { StoreTimingBuffer, TimedStore } from '../core/storage/timed-store.js';
import { startMemoryReclaimer } from '../core/server/memory-reclaim.js';

export interface WorkerSettings extends RegistrySettings {
  storage: StorageOptions;
}

const settings = workerData as WorkerSettings;
// store timings ride back to the main thread's metrics with each task's result
const timings = new StoreTimingBuffer();
const registry = new Registry(buildRegistryContext(new TimedStore(openStore(settings.storage), timings), settings));
// a worker that goes quiet after large bodies gives their memory back
startMemoryReclaimer();

/** Transfers the body's memory back to the main thread when it owns its ArrayBuffer (no copy). */
function transferable(r: ApiTaskResult): unknown {
  const b = r.body;
  if (!movableBytes(b)) return r;
  return move({
    get [transferableSymbol]() {
      return [b.buffer];
    },
    get [valueSymbol]() {
      return r;
    },
  } as never);
}

export default async function run(task: ApiTask): Promise<unknown> {
  const r = await registry.run(task);
  const t = timings.drain();
  if (t) r.storeTimings = t;
  return transferable(r);
}
