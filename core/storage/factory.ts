/**
 * Opens the store named by the options, the same way on the main thread and in every worker: nothing
 * outside core/storage names a backend. Options are plain data, so they cross to the workers as is.
 */
import type { Store } from './interface.js';
import { LmdbStore } from './lmdb/store.js';
import { parseEncryptionConfig } from './encryption.js';
import { TransformingStore } from './transforming-store.js';

export type StorageBackend = 'lmdb';

export interface StorageOptions {
  backend: StorageBackend;
  /** The embedded store's directory (lmdb). */
  path: string;
  /** EncryptionConfiguration text (--encryption-provider-config, read once on the main thread); absent: values stored as they are. */
  encryptionConfig?: string;
}

export const storageBackends: readonly StorageBackend[] = ['lmdb'];

export function openStore(o: StorageOptions): Store {
  const store = openBackend(o);
  return o.encryptionConfig ? new TransformingStore(store, parseEncryptionConfig(o.encryptionConfig)) : store;
}

function openBackend(o: StorageOptions): Store {
  switch (o.backend) {
    case 'lmdb':
      return new LmdbStore({ path: o.path });
  }
}
