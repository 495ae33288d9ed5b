/**
 * The request scope: one object per request that every stage of the chain reads and fills in turn
 * (upstream keeps the same things in the request context). It is transport-neutral: the HTTP and
 * gRPC adapters build it from their own framing and give it a ResponseSink; nothing past the adapter
 * knows which transport carries the request.
 */
import type { Duplex } from 'node:stream';
import type { UserInfo } from '../api/types.js';
import type { Headers, PeerIdentity } from '../authn/authenticator.js';
import type { ResponseForm } from '../registry/task.js';
import type { RequestInfo } from './request-info.js';

export type { Headers, PeerIdentity } from '../authn/authenticator.js';

/**
 * Where the answer goes. `send` writes a whole response; `sendChunks` a large one piece by piece;
 * a watch opens a stream and writes frames. Writes after the client left are ignored.
 */
export interface ResponseSink {
  /** Whether the answer has started (headers out, or the stream opened). */
  readonly started: boolean;
  /** Whether the client is gone or the answer ended. */
  readonly closed: boolean;
  send(code: number, contentType: string, body: Uint8Array, headers?: Readonly<Record<string, string>>, warnings?: readonly string[]): void;
  sendChunks(code: number, contentType: string, chunks: Iterable<Uint8Array>, warnings?: readonly string[]): Promise<void>;
  /** Starts a stream of frames (watch), or of a proxied answer with its own status and headers. */
  openStream(contentType: string, code?: number, headers?: Readonly<Record<string, string>>): void;
  /** Writes one frame now, however full the buffer is; false when the buffer is past its mark (see drained()). */
  write(frame: Uint8Array): boolean;
  /** The status code of the answer once it has started (0 before); for metrics and audit. */
  readonly code?: number;
  /** Body bytes handed to the transport so far (before compression); for metrics. */
  readonly bytes?: number;
  /** Bytes written but not yet taken by the client. */
  readonly buffered: number;
  /** Resolves once the buffer has drained (true) or the client is gone (false). */
  drained(): Promise<boolean>;
  /**
   * The ports of the TCP connection this answer has to itself (HTTP/1.1), so that what the kernel
   * holds unacknowledged for it can be counted as unsent; undefined on a shared connection (HTTP/2,
   * gRPC: flow control keeps a stuck stream's bytes in `buffered`).
   */
  readonly ownConnection?: { localPort: number; remotePort: number } | undefined;
  /**
   * An HTTP/2 stream: its session sends what was written in the event loop's check phase, after the
   * turn, and its buffer grows past the mark only once the client's flow-control window is used up.
   */
  readonly flowControlled?: boolean;
  /** Ends the answer (and the stream). */
  end(): void;
  /** Ends the answer at once and drops the connection (a response that cannot be delivered in time). */
  abort(): void;
  /** Called once when the client is gone or the answer ended, whichever comes first. */
  onClose(fn: () => void): void;
  /**
   * The connection of a request that asked to switch protocols (HTTP/1.1 Upgrade), taken over by the
   * caller: the answer is over as far as the server is concerned (status 101), and whatever is written
   * next on the connection is the caller's. Undefined when the request did not ask, or on HTTP/2 and gRPC.
   */
  takeOver?(): { socket: Duplex; head: Buffer } | undefined;
  /** Errors that upstream's filters answer as plain text may be answered so (HTTP; gRPC carries a Status). */
  readonly plainTextErrors?: boolean;
  /** A header every answer of this request carries (set before the answer starts; gRPC: metadata). */
  addHeader?(name: string, value: string): void;
  /**
   * How this transport frames watch events, when not as the serializer's own stream (HTTP): gRPC
   * writes each event as a message holding the event type and the encoded object. `objectType` is the
   * Content-Type of the encoded objects.
   */
  watchFraming?(objectType: string): WatchFraming;
}

/** One transport's framing of watch events; frames are memoized per event under `key`. */
export interface WatchFraming {
  readonly key: string;
  encodeWatchFrame(type: string, object: Uint8Array): Uint8Array;
}

export interface RequestScope {
  /** HTTP method semantics (gRPC maps its methods to these). */
  readonly method: string;
  /** The decoded path. */
  readonly path: string;
  readonly rawQuery: string;
  /** The request target as the client sent it (escapes and a bare `?` kept), for logs and audit, as upstream's RequestURI. */
  readonly requestURI: string;
  readonly query: URLSearchParams;
  readonly headers: Headers;
  readonly peer: PeerIdentity | undefined;
  /** Where the answer goes (the audit stage wraps it for the requests it records). */
  sink: ResponseSink;
  /** Reads the body, refusing more than `limit` bytes (413); rejects when the request is abandoned. */
  readBody(limit: number): Promise<Buffer>;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /** The request's audit ID: the client's Audit-ID header, or a new UUID; echoed in the Audit-Id response header. */
  readonly auditID: string;

  /** Set by the authentication stage (and replaced by impersonation). */
  user: UserInfo;
  /** Set by the request-info stage. */
  info: RequestInfo;
  /** How the answer is written: set by negotiation; errors are written in its serializer (JSON before). */
  form: ResponseForm;
  /** Warnings for the `Warning` header, added by any stage. */
  warnings: string[];
  /** When the request must be answered by (ms since epoch); set by the timeout stage. */
  deadline: number;
  /** The request's audit event when the policy records it (set by the audit stage): stages add annotations to it. */
  audit: { annotate(key: string, value: string): void } | undefined;
}
