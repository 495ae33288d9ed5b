/**
 * Values that are usually ready now and only sometimes need waiting. The request path returns these
 * instead of always awaiting: a response written in the same tick as the request (no microtask hop)
 * is markedly cheaper for Node's HTTP stack, and most stages (token lookup, AlwaysAllow, a cache read)
 * never wait.
 */
export type MaybePromise<T> = T | Promise<T>;

export const isPromise = <T>(v: MaybePromise<T>): v is Promise<T> => typeof (v as { then?: unknown } | null | undefined)?.then === 'function';

/** Applies `f` now if `v` is ready, after it resolves otherwise. */
export function then<T, U>(v: MaybePromise<T>, f: (t: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(v) ? v.then(f) : f(v);
}

/**
 * Runs a generator that yields what it would await: a yielded promise is waited for (its value or
 * error sent back in), any other value is sent straight back. The result comes at once when nothing
 * yielded was a promise, so code written once runs synchronously on its usual path and waits only
 * where something is pending.
 */
export function runSteps<T>(g: Generator<unknown, T, unknown>): MaybePromise<T> {
  const go = (step: IteratorResult<unknown, T>): MaybePromise<T> => {
    while (!step.done) {
      const v = step.value;
      if (isPromise(v)) return v.then((x) => go(g.next(x)), (e: unknown) => go(g.throw(e)));
      step = g.next(v);
    }
    return step.value;
  };
  return go(g.next());
}
