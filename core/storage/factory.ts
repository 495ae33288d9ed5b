/**
 * Opens the store named by the options, the same way on the main thread and in every worker: nothing
 * outside core/storage names a backend. Options are plain data, so they cross to the workers as is.
 */
import type { Store } from './interface.js';
import { LmdbStore } from './lmdb/store.js';

export type StorageBackend = 'lmdb';

export interface StorageOptions {
  backend: StorageBackend;
  /** The embedded store's directory (lmdb). */
  path: string;
}

export const storageBackends: readonly StorageBackend[] = ['lmdb'];

export function openStore(o: StorageOptions): Store {
  switch (o.backend) {
    case 'lmdb':
      return new LmdbStore({ path: o.path });
  }
}
