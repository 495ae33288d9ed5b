/**
 * Pool worker: opens the shared LMDB store and runs registry tasks (decode, validate, merge, store,
 * encode). Thin by design: everything it does lives in core/registry.
 */
import { workerData, move, transferableSymbol, valueSymbol } from 'piscina';
import { Registry } from '../core/registry/registry.js';
import { buildRegistryContext, type RegistrySettings } from '../core/registry/build-context.js';
import { LmdbStore } from '../core/storage/lmdb/store.js';
import { type ApiTask, type ApiTaskResult, movableBytes } from '../core/registry/task.js';

export interface WorkerSettings extends RegistrySettings {
  storePath: string;
}

const settings = workerData as WorkerSettings;
const registry = new Registry(buildRegistryContext(new LmdbStore({ path: settings.storePath }), settings));

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
