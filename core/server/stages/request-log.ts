/**
 * Stage: one log line per request at verbosity 3, as upstream's HTTP log (httplog's respLogger.Log):
 * `verb` (the method normalized as upstream's metrics.NormalizedVerb: LIST, WATCH, APPLY, CONNECT),
 * `URI`, `latency` (a Go duration: `1.234567ms`), `userAgent`, `audit-ID` (the one the answer
 * carries), `srcIP` (the peer's address and port, Go's RemoteAddr), `resp` (the status code), in that
 * order. A watch is logged when it ends, with its whole duration, as upstream logs when the handler
 * returns. Below -v=3 the stage is not in the chain at all.
 */
import { isPromise } from '../../api/maybe-async.js';
import { toStatusError } from '../../api/status.js';
import type { PeerIdentity } from '../../authn/authenticator.js';
import { goDurationOfMillis } from '../../api/go-format.js';
import { APPLY_PATCH_TYPE } from '../../codec/media-types.js';
import type { Logger } from '../../log/logger.js';
import { queryBool } from '../../request/query-params.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../../request/scope.js';
import { isLongRunning } from './long-running.js';

export const REQUEST_LOG_LEVEL = 3;

/** Upstream logs at most this much of an audit ID (a client may send a long one). */
const MAX_LOGGED_AUDIT_ID = 64;

/**
 * The request's audit ID as the line carries it: the one its answer's Audit-Id header carries (the
 * client's, or the one made for it), cut to its first 64 characters as upstream's GetAuditIDTruncated.
 */
export const loggedAuditID = (id: string): string => (id.length > MAX_LOGGED_AUDIT_ID ? id.slice(0, MAX_LOGGED_AUDIT_ID) : id);

/** Subresources whose requests upstream reports as CONNECT (its metrics' validConnectRequests). */
const CONNECT_SUBRESOURCES = new Set(['log', 'exec', 'portforward', 'attach', 'proxy']);

/**
 * The verb as upstream's httplog writes it (metrics.NormalizedVerb of the request, its request info
 * known): the HTTP method upper-cased, GET and HEAD of a collection (no name, in a namespace or a
 * resource request) LIST; a GET whose first `watch` parameter is not 0 or false (any case) WATCH,
 * whatever its path; a PATCH whose Content-Type is exactly the apply type APPLY; any request to a
 * connect subresource (log, exec, portforward, attach, proxy) CONNECT. A watch by the legacy
 * /watch/ path without the parameter stays LIST, as upstream has it.
 */
export function loggedVerb(s: Pick<RequestScope, 'method' | 'info' | 'query' | 'headers'>): string {
  const info = s.info;
  const method = s.method.toUpperCase();
  let verb = method;
  if (method === 'GET' || method === 'HEAD') {
    // upstream's CleanScope then CanonicalVerb: a named object (or a create) is "resource", GET
    verb = info.name === '' && info.verb !== 'create' && (info.namespace !== '' || info.isResourceRequest) ? 'LIST' : 'GET';
  }
  if (method === 'GET' && queryBool(s.query.get('watch'))) verb = 'WATCH';
  else if (method === 'PATCH') {
    const ct = s.headers['content-type'];
    if ((Array.isArray(ct) ? ct[0] : ct) === APPLY_PATCH_TYPE) verb = 'APPLY';
  }
  if (info.isResourceRequest && info.subresource !== '' && CONNECT_SUBRESOURCES.has(info.subresource)) verb = 'CONNECT';
  return verb;
}

/** The peer's address as Go's RemoteAddr: host:port, an IPv6 host in brackets, IPv4-mapped IPv6 as IPv4. */
export function remoteAddr(address: string | undefined, port: number | undefined): string {
  if (address === undefined) return '';
  let host = address;
  if (host.startsWith('::ffff:') && host.indexOf('.') > 0) host = host.slice(7);
  if (port === undefined) return host;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Each connection's srcIP, made once (a connection's requests share its peer). */
const srcIPs = new WeakMap<PeerIdentity, string>();

function srcIPOf(peer: PeerIdentity | undefined): string {
  if (!peer) return '';
  let ip = srcIPs.get(peer);
  if (ip === undefined) {
    // the connection is the peer's socket (TLS over TCP, for HTTP/1.1, HTTP/2 and gRPC alike)
    const port = (peer.connection as { remotePort?: unknown }).remotePort;
    ip = remoteAddr(peer.remoteAddress, typeof port === 'number' ? port : undefined);
    srcIPs.set(peer, ip);
  }
  return ip;
}

export function withRequestLog(log: Logger): Stage {
  const line = (s: RequestScope, err?: unknown): void => {
    const code = s.sink.code || (err !== undefined ? toStatusError(err).code : 200);
    const ua = s.headers['user-agent'];
    log.info(
      'HTTP',
      {
        verb: loggedVerb(s),
        URI: s.requestURI,
        latency: goDurationOfMillis(performance.now() - s.startedAt),
        userAgent: typeof ua === 'string' ? ua : '',
        'audit-ID': loggedAuditID(s.auditID),
        srcIP: srcIPOf(s.peer),
        resp: code,
      },
      REQUEST_LOG_LEVEL,
    );
  };
  /** Logged now, or when the stream ends for a watch still open (upstream logs when its handler returns). */
  const settled = (s: RequestScope): void => {
    if (isLongRunning(s) && s.sink.started && !s.sink.closed) s.sink.onClose(() => line(s));
    else line(s);
  };
  return (next) => (s) => {
    let r;
    try {
      r = next(s);
    } catch (e) {
      line(s, e);
      throw e;
    }
    if (!isPromise(r)) {
      settled(s);
      return r;
    }
    return r.then(
      () => settled(s),
      (e: unknown) => {
        line(s, e);
        throw e;
      },
    );
  };
}
