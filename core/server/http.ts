/**
 * HTTP plumbing shared by every stage: request and response types for HTTP/1.1 and HTTP/2 (compat
 * API), body reading with the size limit, response writing with upstream's headers, Warning headers,
 * and Status errors in the negotiated media type.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { errors, type StatusError, toStatusError } from '../api/status.js';
import { encodeValue } from '../codec/encode.js';
import { warningHeader } from '../api/warnings.js';
import type { ResponseMediaType } from '../codec/media-types.js';

export type Req = IncomingMessage | Http2ServerRequest;
export type Res = ServerResponse | Http2ServerResponse;

const CACHE_CONTROL = 'no-cache, private';
const BASE_HEADERS = { 'cache-control': CACHE_CONTROL } as const;

/** A Warning header value: `299 - "text"`, valid for any text (core/api/warnings.ts). */
export { warningHeader } from '../api/warnings.js';

export function sendBytes(
  res: Res,
  code: number,
  contentType: string,
  body: Uint8Array,
  headers?: Record<string, string>,
  warnings?: readonly string[],
): void {
  if (res.headersSent || res.writableEnded) return;
  // a flat [name, value, ...] list: no per-response header object to build and walk
  const h: (string | number)[] = ['cache-control', CACHE_CONTROL, 'content-type', contentType, 'content-length', body.byteLength];
  if (headers) for (const k in headers) h.push(k, headers[k]!);
  if (warnings) for (const w of warnings) h.push('warning', warningHeader(w));
  res.writeHead(code, h as never);
  res.end(body);
}

export function sendError(res: Res, err: unknown, mediaType: ResponseMediaType = 'application/json', pretty = false): StatusError {
  const e = toStatusError(err);
  sendBytes(res, e.code, mediaType, encodeValue(e.status, { mediaType, pretty }), e.headers);
  return e;
}

/** What of an over-limit body is still read (and dropped), at most: enough for any client that stops on its own. */
const DRAIN_BYTES = 16 * 1024 * 1024;
const DRAIN_MS = 15_000;

/**
 * Refuses a body over the limit (413), after reading on and dropping what the client still sends,
 * for a while: a client still writing when the connection closes gets a reset instead of the 413
 * (upstream's Go server lingers on such connections for the same reason).
 */
async function tooLarge(req: Req, limit: number): Promise<never> {
  await new Promise<void>((resolve) => {
    let left = DRAIN_BYTES;
    const done = (): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', done);
      req.off('close', done);
      req.off('error', done);
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      left -= chunk.length;
      if (left <= 0) done();
    };
    const timer = setTimeout(done, DRAIN_MS);
    req.on('data', onData);
    req.once('end', done);
    req.once('close', done);
    req.once('error', done);
    req.resume();
  });
  throw errors.requestEntityTooLarge(limit);
}

/** Reads the whole body, refusing more than `limit` bytes (413; the connection is then closed). */
export async function readBody(req: Req, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return tooLarge(req, limit);
  const chunks: Buffer[] = [];
  let size = 0;
  // not destroyed on the early exit: the 413 must still be written on this connection
  for await (const chunk of (req as Readable).iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return tooLarge(req, limit);
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

/** Writes one chunk, waiting for the socket to drain when its buffer is full; false once the response is gone. */
export async function writeDrained(res: Res, chunk: Buffer): Promise<boolean> {
  if (res.destroyed) return false;
  const r = res as ServerResponse;
  if (!r.write(chunk)) await Promise.race([once(r, 'drain'), once(r, 'close')]);
  return !res.destroyed;
}

/** Writes a streamed body (chunked over HTTP/1.1), waiting for drain between chunks. */
export async function sendStream(res: Res, code: number, contentType: string, chunks: Iterable<Buffer>, warnings?: readonly string[]): Promise<void> {
  const h: Record<string, string | string[]> = { ...BASE_HEADERS, 'content-type': contentType };
  if (warnings && warnings.length) h.warning = warnings.map(warningHeader);
  const it = chunks[Symbol.iterator]();
  const first = it.next();
  // A body that fits in one chunk is sent with a Content-Length, like any other response.
  if (first.done) return sendBytes(res, code, contentType, Buffer.alloc(0), undefined, warnings);
  const second = it.next();
  if (second.done) return sendBytes(res, code, contentType, first.value, undefined, warnings);
  res.writeHead(code, h as never);
  if (!(await writeDrained(res, first.value)) || !(await writeDrained(res, second.value))) return;
  for (let r = it.next(); !r.done; r = it.next()) if (!(await writeDrained(res, r.value))) return;
  res.end();
}
