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
