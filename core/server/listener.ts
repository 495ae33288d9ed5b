/**
 * The secure listener: TLS, then HTTP/2 or HTTP/1.1 by ALPN on the same port, with upstream's limits
 * on connections that do not speak: the TLS handshake and the request headers must arrive within
 * 32 s (upstream's read-header timeout), headers may be up to 1 MiB (its max header bytes) on both
 * protocols, and an idle keep-alive connection is closed after 90 s. Requests the HTTP parser refuses
 * (CONNECT, unknown methods, malformed or oversized headers) still get a Status answer before the
 * connection closes.
 */
import { createServer as createHttpServer, IncomingMessage, type Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createHttp2Server, type Http2Server, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import { errors, type Status } from '../api/status.js';
import { ChunkedBodyError, ChunkedDecoder, isChunked } from './chunked-body.js';

/** Upstream's read-header timeout: handshake and headers must arrive within it. */
export const READ_HEADER_TIMEOUT_MS = 32_000;
/** Upstream's max header bytes (request line and headers). */
export const MAX_HEADER_BYTES = 1 << 20;
/** Idle keep-alive connections are closed after this long (upstream's HTTP/2 idle timeout). */
export const IDLE_TIMEOUT_MS = 90_000;

export interface ListenerTls {
  cert: string;
  key: string;
  /** CAs whose client certificates the handshake verifies (verification is reported, not enforced). */
  clientCA?: string;
}

type Handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

function statusBytes(code: number, reason: string, message: string): Buffer {
  const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: reason as Status['reason'], code };
  return Buffer.from(`${JSON.stringify(s)}\n`);
}

/** How long a connection ended after a refusal is still read from (and dropped) before it is closed. */
const LINGER_MS = 2000;

/**
 * Ends a connection (after `last`, if given): what the client is still sending is read and dropped
 * for a moment, so closing does not reset the connection before it reads the answer.
 */
function endSoon(socket: Socket, last?: string): void {
  // the parser goes on reading after it refused a request and may refuse again: the connection is
  // already ending, and destroying it now would drop the answer still being written
  if (socket.writableEnded) return;
  if (!socket.writable) return void socket.destroy();
  if (last === undefined) socket.end();
  else socket.end(last, 'latin1');
  socket.on('data', () => undefined);
  socket.resume();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

/** Writes a whole HTTP/1.1 answer on a raw socket, then ends the connection (endSoon). */
function answerRaw(socket: Socket, code: number, text: string, reason: string, message: string): void {
  const body = statusBytes(code, reason, message);
  endSoon(socket, `HTTP/1.1 ${code} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nCache-Control: no-cache, private\r\nConnection: close\r\n\r\n${body.toString('latin1')}`);
}

/**
 * Whether an answer to the connection's request is already on its way: Node's own clientError
 * handler then writes nothing either (a 413 answered while the rest of the body was read, whose
 * client gave up sending it, was followed by a 400 for the body cut short).
 */
function answering(socket: Socket): boolean {
  return (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
}

/** Whether a request starts with an RFC 9110 token (a method name) followed by a space. */
function isTokenMethod(raw: Buffer | undefined): boolean {
  if (!raw) return false;
  const sp = raw.indexOf(0x20);
  return sp > 0 && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(raw.subarray(0, sp).toString('latin1'));
}

/** The answer to a request the HTTP/1.1 parser refused, as upstream's server would give it. */
function refuse(err: NodeJS.ErrnoException & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return void socket.destroy();
  if (answering(socket)) return endSoon(socket);
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return answerRaw(socket, 431, 'Request Header Fields Too Large', 'BadRequest', 'request header fields too large');
    case 'HPE_INVALID_METHOD':
      // a well-formed method the parser does not know is a method not served; anything else is garbage
      if (isTokenMethod((err as { rawPacket?: Buffer }).rawPacket)) {
        return answerRaw(socket, 405, 'Method Not Allowed', 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      }
      return answerRaw(socket, 400, 'Bad Request', 'BadRequest', 'malformed HTTP request: invalid method');
    default:
      return answerRaw(socket, 400, 'Bad Request', 'BadRequest', `malformed HTTP request: ${err.code ?? err.message}`);
  }
}

/** A connection that asked to switch protocols (HTTP/1.1 `Connection: Upgrade`), by the response made for its request. */
const upgradeRequests = new WeakMap<object, { socket: Socket; head: Buffer }>();

/**
 * The connection of a request that asked to switch protocols, for a handler that switches it (the
 * aggregator's proxy, after this server's chain authorized the request); undefined for any other.
 */
export function upgradeConnection(res: object): { socket: Socket; head: Buffer } | undefined {
  return upgradeRequests.get(res);
}

/** A copy of `req` whose body is the `length` bytes that follow its head on the connection. */
function withBody(req: IncomingMessage, socket: Socket, head: Buffer, length: number): IncomingMessage {
  const out = new IncomingMessage(socket);
  Object.assign(out, { method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, httpVersion: req.httpVersion, httpVersionMajor: req.httpVersionMajor, httpVersionMinor: req.httpVersionMinor });
  let left = length;
  const take = (chunk: Buffer): void => {
    const part = chunk.subarray(0, left);
    left -= part.length;
    if (part.length) out.push(part);
    if (left > 0) return;
    socket.off('data', take);
    // bytes past the body (a pipelined request) are not read: the connection ends after this answer
    out.complete = true; // an incomplete message ending would take the connection down with it
    out.push(null);
  };
  take(head);
  if (left > 0) socket.on('data', take);
  return out;
}

/**
 * A copy of `req` whose body is the chunked body that follows its head on the connection, decoded.
 * A malformed body fails the body's reading with a 400 (the handler answers it; the connection then
 * ends), never the connection itself: the answer must still be written on it.
 */
function withChunkedBody(req: IncomingMessage, socket: Socket, head: Buffer): IncomingMessage {
  const out = new IncomingMessage(socket);
  Object.assign(out, { method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, httpVersion: req.httpVersion, httpVersionMajor: req.httpVersionMajor, httpVersionMinor: req.httpVersionMinor });
  // IncomingMessage's own destroy takes the connection down with an unfinished body
  out._destroy = (err, cb) => cb(err);
  // its failure is read from it by the body's reader (readable.errored), which may come after it
  out.on('error', () => undefined);
  const decoder = new ChunkedDecoder((piece) => out.push(piece));
  const take = (chunk: Buffer): void => {
    try {
      decoder.write(chunk);
    } catch (err) {
      socket.off('data', take);
      const why = err instanceof ChunkedBodyError ? `${err.code}: ${err.message}` : String(err);
      out.destroy(errors.badRequest(`malformed HTTP request: invalid chunked body (${why})`));
      return;
    }
    if (!decoder.done) return;
    socket.off('data', take);
    // bytes past the body (a pipelined request) are not read: the connection ends after this answer
    out.complete = true;
    out.push(null);
  };
  take(head);
  if (!decoder.done && !out.destroyed) {
    socket.on('data', take);
    // a client gone before the last chunk: the body's reading fails rather than waiting on
    socket.once('close', () => {
      if (!decoder.done && !out.destroyed) out.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    });
  }
  return out;
}

export class SecureListener {
  private readonly tls: TlsServer;
  private readonly http1: HttpServer;
  private readonly http2: Http2Server;
  readonly sockets = new Set<TLSSocket>();
  readonly sessions = new Set<Http2Session>();

  constructor(t: ListenerTls, handler: Handler) {
    this.http1 = createHttpServer(
      { maxHeaderSize: MAX_HEADER_BYTES, headersTimeout: READ_HEADER_TIMEOUT_MS, requestTimeout: 0, keepAliveTimeout: IDLE_TIMEOUT_MS, connectionsCheckingInterval: 1000 },
      handler as (req: IncomingMessage, res: ServerResponse) => void,
    );
    this.http1.on('clientError', refuse);
    // The HTTP/1.1 server is handed connections and never listens itself, but Node starts its
    // header and request timeout checks on 'listening': start them the same way.
    this.http1.emit('listening');
    // CONNECT has no handler here: answer it like any method not served
    this.http1.on('connect', (_req: IncomingMessage, socket: Socket) =>
      answerRaw(socket, 405, 'Method Not Allowed', 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
    );
    // A request asking to switch protocols goes through the same chain as any other, answered on a
    // response made for its connection; a handler that switches takes the connection over (see
    // upgradeConnection), any other answer is written as usual and ends the connection.
    this.http1.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      // Node hands such a request over with its body unread (in `head` and still on the connection):
      // a body it declares is read into a request of its own, as the parser would have
      const length = Number(req.headers['content-length'] ?? 0);
      if (isChunked(req.headers['transfer-encoding'])) {
        req = withChunkedBody(req, socket, head);
        head = Buffer.alloc(0);
      } else if (Number.isSafeInteger(length) && length > 0) {
        req = withBody(req, socket, head, length);
        head = Buffer.alloc(0);
      }
      const res = new ServerResponse(req);
      res.shouldKeepAlive = false;
      res.assignSocket(socket);
      upgradeRequests.set(res, { socket, head });
      res.on('finish', () => endSoon(socket));
      handler(req, res);
    });
    this.http2 = createHttp2Server({ maxSessionMemory: 64, settings: { maxHeaderListSize: MAX_HEADER_BYTES } }, handler as (req: Http2ServerRequest, res: Http2ServerResponse) => void);
    this.http2.on('session', (s: Http2Session) => {
      this.sessions.add(s);
      s.on('close', () => this.sessions.delete(s));
    });
    this.tls = createTlsServer({
      cert: t.cert,
      key: t.key,
      ALPNProtocols: ['h2', 'http/1.1'],
      handshakeTimeout: READ_HEADER_TIMEOUT_MS,
      ...(t.clientCA ? { ca: t.clientCA, requestCert: true, rejectUnauthorized: false } : {}),
    });
    this.tls.on('secureConnection', (sock: TLSSocket) => {
      // streamed responses end with a small write; without this it waits for a delayed ACK
      sock.setNoDelay(true);
      this.sockets.add(sock);
      sock.on('close', () => this.sockets.delete(sock));
      (sock.alpnProtocol === 'h2' ? this.http2 : this.http1).emit('connection', sock);
    });
    // a handshake that fails or times out ends there; nothing to answer
    this.tls.on('tlsClientError', (_err: Error, sock: TLSSocket) => sock.destroy());
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.tls.once('error', reject);
      this.tls.listen(port, host, () => {
        this.tls.off('error', reject);
        resolve();
      });
    });
  }

  get port(): number {
    return (this.tls.address() as AddressInfo).port;
  }

  /**
   * New serving certificate or trusted client CAs (a reloaded file): used by connections made from
   * now on. Client certificates stay requested only if they were at start.
   */
  setTls(t: ListenerTls): void {
    this.tls.setSecureContext({ cert: t.cert, key: t.key, ...(t.clientCA ? { ca: t.clientCA } : {}) });
  }

  /** Stops accepting; resolves when every connection is gone. */
  close(): Promise<void> {
    this.http1.closeIdleConnections();
    return new Promise((r) => this.tls.close(() => r()));
  }
}
