/**
 * A registry task: one write (or one store read) on one resource, the unit of work an Executor runs
 * (on a pool worker or inline). Bodies cross threads as transferable bytes and the result comes back
 * already encoded in the negotiated media type, so the caller only writes bytes. The pool (workers/)
 * implements Executor; core never imports it.
 */
import type { UserInfo } from '../api/types.js';
import type { StoreTiming } from '../storage/timed-store.js';
import type { Respelling } from '../codec/respell.js';
import type { TransformRequest } from './transform.js';
import type { NamespaceSeen } from './admission.js';

/** How the answer is to be written: chosen by negotiation on the main thread, applied where it is encoded. */
export interface ResponseForm {
  /** The serializer's canonical media type (core/codec/serializer.ts). */
  mediaType: string;
  /** Content-Type of the answer (the client's spelling, transform parameters). */
  contentType: string;
  pretty: boolean;
  /** Table / PartialObjectMetadata, when asked for (reads only). */
  transform?: TransformRequest;
  /** The request's group spelling, when it differs from the canonical one (an upstream alias). */
  respell?: Respelling;
}

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
  /** Content-Type of the request body. */
  contentType: string;
  form: ResponseForm;
  user: UserInfo;
  userAgent: string;
  /** A custom resource's definition and the revision its type was built from (workers build it if they lack it). */
  definition?: { name: string; revision: number };
  /** The task's namespace as the main thread's watch cache holds it (NamespaceLifecycle need not read the store). */
  namespaceSeen?: NamespaceSeen;
}

export interface ApiTaskResult {
  code: number;
  contentType: string;
  body: Uint8Array;
  warnings: string[];
  /** Revision the task committed, so the main thread can pull the watch feed right away. */
  revision?: number;
  headers?: Record<string, string>;
  /** Annotations admission added to the request's audit event (main-thread tasks only). */
  auditAnnotations?: Record<string, string>;
  /** Store requests the task's thread timed since its last result (pool workers), for the main thread's metrics. */
  storeTimings?: StoreTiming[];
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
