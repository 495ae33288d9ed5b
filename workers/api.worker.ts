/**
 * Pool worker: opens the store (the same factory as the main thread) and runs registry tasks
 * (decode, validate, merge, store, encode). Thin by design: everything it does lives in core/.
 */
import { workerData, move, transferableSymbol, valueSymbol } from 'piscina';
import { Registry } from '../core/registry/registry.js';
import { buildRegistryContext, type RegistrySettings } from '../core/registry/build-context.js';
import { openStore, type StorageOptions } from '../core/storage/factory.js';
import { type ApiTask, type ApiTaskResult, movableBytes } from '../core/registry/task.js';

export interface WorkerSettings extends RegistrySettings {
  storage: StorageOptions;
}

const settings = workerData as WorkerSettings;
const registry = new Registry(buildRegistryContext(openStore(settings.storage), settings));

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
  return transferable(await registry.run(task));
}
