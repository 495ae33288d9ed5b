/**
 * Opens the store named by the options, the same way on the main thread and in every worker: nothing
 * outside core/storage names a backend. Options are plain data, so they cross to the workers as is.
 */
import { join } from 'node:path';
import type { Store } from './interface.js';
import { LmdbStore } from './lmdb/store.js';
import { Etcd3Store } from './etcd3/store.js';
import { parseEncryptionConfig } from './encryption.js';
import { TransformingStore } from './transforming-store.js';
import { EncryptionConfigReloader } from './encryption-reload.js';
import { JSON_MEDIA_TYPE, MediaTypeCodec, PROTOBUF_STORAGE_MEDIA_TYPE, storageFormOf, storageMediaTypes } from './media-type.js';
import { storedKindOfKey } from '../registry/stored-kinds.js';
import type { ConfigReloadStatus } from '../api/config-reload-status.js';

export type StorageBackend = 'lmdb' | 'etcd3';

export interface EtcdOptions {
  /** --etcd-servers */
  servers: string[];
  /** --etcd-prefix */
  prefix: string;
  caFile: string;
  certFile: string;
  keyFile: string;
}

export interface StorageOptions {
  backend: StorageBackend;
  /** The embedded store's directory (lmdb). */
  path: string;
  /** The embedded store's directory is read by several processes of one server (its acceptors). */
  sharedByProcesses?: boolean;
  /** The embedded store's writes are made by the server's primary process (an acceptor's threads). */
  writesViaPrimary?: boolean;
  /** etcd's endpoints and credentials (etcd3). */
  etcd?: EtcdOptions;
  /** Deadline of one call to a remote store, in ms. */
  callTimeoutMs?: number;
  /** EncryptionConfiguration text (--encryption-provider-config, read once on the main thread); absent: values stored as they are. */
  encryptionConfig?: string;
  /** With --encryption-provider-config-automatic-reload: the file each thread follows. */
  encryptionConfigReloadPath?: string;
  /** --storage-media-type: the form built-in objects are written in (any form is read); absent: JSON. */
  mediaType?: string;
}

/** What only the opening thread holds (not plain data: not sent to workers). */
export interface StoreHooks {
  /** Where the outcome of encryption config reloads is recorded (the main thread's metrics). */
  encryptionReloads?: ConfigReloadStatus;
}

export const storageBackends: readonly StorageBackend[] = ['lmdb', 'etcd3'];

/** The server flags the storage options are made of. */
export interface StorageFlags {
  storageBackend: StorageBackend;
  dataDir: string;
  etcdServers: string[];
  etcdPrefix: string;
  etcdCafile: string;
  etcdCertfile: string;
  etcdKeyfile: string;
  requestTimeoutMs: number;
  /** --storage-media-type; empty: the backend's default. */
  storageMediaType: string;
}

/** The media type objects are stored in: the flag's, or protobuf on etcd (upstream's default) and JSON on the embedded store. */
export const effectiveStorageMediaType = (f: Pick<StorageFlags, 'storageBackend' | 'storageMediaType'>): string =>
  f.storageMediaType || (f.storageBackend === 'etcd3' ? PROTOBUF_STORAGE_MEDIA_TYPE : JSON_MEDIA_TYPE);

export function storageOptionsFrom(f: StorageFlags): StorageOptions {
  const o: StorageOptions = { backend: f.storageBackend, path: join(f.dataDir, 'store'), mediaType: effectiveStorageMediaType(f) };
  if (f.storageBackend === 'etcd3') {
    o.etcd = { servers: f.etcdServers, prefix: f.etcdPrefix, caFile: f.etcdCafile, certFile: f.etcdCertfile, keyFile: f.etcdKeyfile };
    // a call outlives its request by a little, so a stuck etcd is answered by the request timeout (504) and calls still end
    o.callTimeoutMs = f.requestTimeoutMs + 1000;
  }
  return o;
}

/** Flag errors of the storage options, or undefined. */
export function storageFlagError(f: StorageFlags): string | undefined {
  if (!storageBackends.includes(f.storageBackend)) {
    return `--storage-backend: unsupported value ${JSON.stringify(f.storageBackend)}: supported values: ${storageBackends.map((b) => JSON.stringify(b)).join(', ')}`;
  }
  if (f.storageMediaType && !storageMediaTypes.includes(f.storageMediaType)) {
    return `--storage-media-type ${JSON.stringify(f.storageMediaType)} invalid, allowed values: ${storageMediaTypes.join(', ')}`;
  }
  if (f.storageBackend !== 'etcd3') return undefined;
  if (f.etcdServers.length === 0) return '--etcd-servers must be specified with --storage-backend=etcd3';
  const bad = f.etcdServers.find((s) => !/^(https?:\/\/)?[^/\s]+:\d+\/?$/.test(s));
  if (bad) return `--etcd-servers: ${JSON.stringify(bad)} is not an endpoint (http(s)://host:port)`;
  if (!!f.etcdCertfile !== !!f.etcdKeyfile) return '--etcd-certfile and --etcd-keyfile must be given together';
  return undefined;
}

/** Whether the backend keeps its data in --data-dir, so that one process at a time may use the directory. */
export const ownsDataDir = (backend: StorageBackend): boolean => backend === 'lmdb';

/**
 * The backend, then encryption, then the media type: a write is encoded to the media type first and
 * then encrypted, a read decrypted and then decoded, as upstream layers them. The media type layer is
 * always there, since any store may hold values written under another --storage-media-type.
 */
export function openStore(o: StorageOptions, hooks: StoreHooks = {}): Store {
  // a media type write is stored only when it reads back as the bytes written, so stored bytes seen before need no decoding
  return new TransformingStore(openEncrypted(o, hooks), new MediaTypeCodec(storageFormOf(o.mediaType ?? JSON_MEDIA_TYPE), storedKindOfKey), { rememberValues: true });
}

function openEncrypted(o: StorageOptions, hooks: StoreHooks): Store {
  const store = openBackend(o);
  if (!o.encryptionConfig) return store;
  let current = parseEncryptionConfig(o.encryptionConfig);
  // upstream's check of the KMS plugins; with reload on it follows whichever configuration is current
  const kmsCheck = { name: 'kms-providers', check: () => current.kmsHealth() };
  const t = new TransformingStore(store, current, current.hasKms || o.encryptionConfigReloadPath ? { dependencyChecks: [kmsCheck] } : {});
  if (o.encryptionConfigReloadPath) {
    const reloader = new EncryptionConfigReloader(
      o.encryptionConfigReloadPath,
      o.encryptionConfig,
      (next) => {
        const old = current;
        current = next;
        t.replaceTransformer(next);
        // the old configuration's plugin connections end with it, after reads that still use them
        old.closeAfterGrace();
      },
      hooks.encryptionReloads,
    );
    t.closeWith(() => reloader.close());
  }
  t.closeWith(() => current.close());
  return t;
}

function openBackend(o: StorageOptions): Store {
  switch (o.backend) {
    case 'lmdb':
      return new LmdbStore({ path: o.path, sharedByProcesses: o.sharedByProcesses === true, writesViaPrimary: o.writesViaPrimary === true });
    case 'etcd3': {
      const e = o.etcd!;
      return new Etcd3Store({
        endpoints: e.servers,
        prefix: e.prefix,
        ...(e.caFile ? { caFile: e.caFile } : {}),
        ...(e.certFile ? { certFile: e.certFile, keyFile: e.keyFile } : {}),
        ...(o.callTimeoutMs ? { callTimeoutMs: o.callTimeoutMs } : {}),
      });
    }
  }
}
