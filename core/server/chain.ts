/**
 * The request chain: stages wrapped around a terminal handler, as upstream wraps `WithX(handler)`
 * filters. A stage is built once at start with what it needs and the next handler; per request it
 * reads and fills the scope, then calls `next` or answers by throwing a StatusError. Handlers return a
 * value when they finished in the request's own tick and a promise only when they must wait, so a
 * cache-served GET passes every stage without a microtask hop.
 */
import type { MaybePromise } from '../api/maybe-async.js';
import type { RequestScope } from '../request/scope.js';

export type Handler = (s: RequestScope) => MaybePromise<void>;
export type Stage = (next: Handler) => Handler;

/** `stages[0]` runs first; `terminal` answers the request. */
export function buildChain(stages: readonly Stage[], terminal: Handler): Handler {
  let h = terminal;
  for (let i = stages.length - 1; i >= 0; i--) h = stages[i]!(h);
  return h;
}
