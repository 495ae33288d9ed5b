/**
 * What every value transformer of encryption at rest shares: the interface, the error of a value no
 * provider can read, and the marker of a transform that must wait for something outside the thread
 * (a KMS plugin's answer) before it can finish. The marker keeps the synchronous path of every other
 * provider as it is: only a caller that meets it awaits its promise and runs the transform again.
 */

export interface Transformer {
  /** The stored prefix this transformer reads; '' for identity. */
  readonly prefix: string;
  encrypt(plain: Uint8Array, key: string): Uint8Array;
  decrypt(stored: Uint8Array, key: string): Uint8Array;
}

/** A value that cannot be turned back into an object (no provider could read it). */
export class TransformError extends Error {
  constructor(readonly key: string, message: string) {
    super(message);
  }
}

/**
 * Thrown by a transform that cannot finish synchronously: `ready` settles (never rejects) once running
 * it again can finish or fail for good; `failure` is what to answer if it still cannot after that.
 */
export class PendingTransform extends Error {
  constructor(
    readonly ready: Promise<void>,
    readonly failure: Error,
  ) {
    super(failure.message);
  }
}

/** How many times a pending transform is awaited before its failure is answered. */
const MAX_WAITS = 3;

/** Runs `fn`, awaiting and running it again while it throws PendingTransform (at most MAX_WAITS times). */
export async function afterPending<T>(fn: () => T, first: PendingTransform): Promise<T> {
  let pending = first;
  for (let waits = 0; ; waits++) {
    if (waits === MAX_WAITS) throw pending.failure;
    await pending.ready;
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof PendingTransform)) throw err;
      pending = err;
    }
  }
}

/** `fn()` when it finishes synchronously (the common case, no promise made); otherwise a promise of it. */
export function settle<T>(fn: () => T): T | Promise<T> {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof PendingTransform)) throw err;
    return afterPending(fn, err);
  }
}
