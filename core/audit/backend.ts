/** Where audit events go: the log file and the webhook each implement this. */
import type { BackendName } from './stats.js';

export interface Backend {
  readonly name: BackendName;
  /** The apiVersion the backend's events are written in (audit.svc.io/v1, or upstream's spelling). */
  readonly apiVersion: string;
  /** blocking-strict: a RequestReceived event that cannot be stored refuses the request. */
  readonly strict: boolean;
  /**
   * Takes one serialized event (a JSON line ending in \n). False when it could not be stored (full
   * buffer, failing backend); a promise only in blocking webhook mode, where the request waits for the send.
   */
  process(line: string): boolean | Promise<boolean>;
  /** Writes or sends what is still buffered, then releases the backend. */
  shutdown(): Promise<void>;
}
