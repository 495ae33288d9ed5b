/**
 * Answering a scope: a Status error in the negotiated media type, and the top of the chain that turns
 * anything thrown into one. A failure after the answer started cannot become a Status any more: the
 * answer is ended where it stands.
 */
import { isPromise } from '../api/maybe-async.js';
import { StatusError, toStatusError } from '../api/status.js';
import { encodeError, errorContentType } from '../registry/respond.js';
import type { Handler } from './chain.js';
import type { RequestScope } from '../request/scope.js';

export function sendStatus(s: RequestScope, err: unknown): StatusError {
  const e = toStatusError(err);
  if (!(err instanceof StatusError)) console.error('svc-apiserver: request failed:', err);
  if (s.sink.started) {
    if (!s.sink.closed) s.sink.end();
    return e;
  }
  if (e.plainText && s.sink.plainTextErrors) s.sink.send(e.code, 'text/plain; charset=utf-8', Buffer.from(`${e.message}\n`), { ...e.headers, 'x-content-type-options': 'nosniff' }, s.warnings);
  else s.sink.send(e.code, errorContentType(s.form), encodeError(e, s.form).body, e.headers, s.warnings);
  return e;
}

/** Runs the chain for one scope; nothing thrown escapes. */
export function serveScope(h: Handler, s: RequestScope): void {
  try {
    const r = h(s);
    if (isPromise(r)) r.catch((err: unknown) => sendStatus(s, err));
  } catch (err) {
    sendStatus(s, err);
  }
}
