/**
 * The typed edge between the main thread and the worker pool. A task is one write (or one store
 * read) on one resource; bodies cross as transferable bytes, and the result comes back already
 * encoded in the negotiated media type, so the main thread only writes bytes to the socket.
 */
import type { UserInfo } from '../core/api/types.js';
import type { ResponseMediaType } from '../core/codec/media-types.js';

export type TaskVerb = 'create' | 'update' | 'patch' | 'delete' | 'deletecollection' | 'list';

export interface ApiTask {
  verb: TaskVerb;
  /** Resource id: `group/version/plural`. */
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** Raw query string (without `?`). */
  query: string;
  body?: Uint8Array;
  contentType: string;
  mediaType: ResponseMediaType;
  pretty: boolean;
  user: UserInfo;
  userAgent: string;
}

export interface ApiTaskResult {
  code: number;
  contentType: string;
  body: Uint8Array;
  warnings: string[];
  /** Revision the task committed, so the main thread can pull the watch feed right away. */
  revision?: number;
  headers?: Record<string, string>;
}

/**
 * Whether bytes are worth moving between threads instead of copying: they own their whole
 * ArrayBuffer (moving it takes nothing else along) and are large enough for a copy to cost.
 */
export const movableBytes = (b: Uint8Array | undefined): b is Uint8Array =>
  b !== undefined && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.byteLength >= 4096;

/** Runs tasks: on a worker pool, or inline on the calling thread (--workers=0). */
export interface Executor {
  run(task: ApiTask): Promise<ApiTaskResult>;
  close(): Promise<void>;
}
