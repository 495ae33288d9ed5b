/**
 * The request path, top to bottom:
 *   1 authenticate        -> UserInfo, or 401
 *   2 request info        -> verb, group, version, resource, subresource, namespace, name
 *   3 authorize           -> allow, or 403
 *   4 admit load          -> 429 beyond --max-requests-inflight / --max-mutating-requests-inflight
 *   5 route               -> non-resource (health, version, discovery) or a declared resource (404, 405)
 *   6 negotiate           -> response media type (406), pretty
 *   7 serve               -> get/list/watch from the watch cache; writes and store reads as pool tasks
 *                            (decode, validate, merge, store, encode happen there)
 *   8 write               -> bytes to the socket, with Warning headers
 * Every failure is a Status in the negotiated media type; nothing here throws past the top.
 */
import type { TLSSocket } from 'node:tls';
import { errors, StatusError } from '../api/status.js';
import type { UserInfo } from '../api/types.js';
import { anonymousUser } from '../authn/anonymous.js';
import { AuthenticationError, type Authenticator } from '../authn/authenticator.js';
import { type Authorizer, forbiddenMessage, type Attributes } from '../authz/authorizer.js';
import { encodeValue } from '../codec/encode.js';
import { negotiateResponse, type ResponseMediaType, responseMediaTypes, streamMediaTypes } from '../codec/media-types.js';
import type { Endpoint, Health } from '../health/health.js';
import { type RequestInfo, requestInfoFor } from '../request/request-info.js';
import { isPromise, type MaybePromise, then } from '../api/maybe-async.js';
import type { ApiTask, Executor, TaskVerb } from '../../workers/protocol.js';
import type { Cacher } from '../storage/cacher.js';
import { resourceId } from '../registry/context.js';
import { allVerbs, type ResourceType, type Verb } from '../registry/resource-type.js';
import type { DiscoveryDocs } from './discovery.js';
import { parseDuration } from './options.js';
import { readBody, type Req, type Res, sendBytes, sendError, sendStream } from './http.js';
import { getFromCache, listFromCache, parseListOptions, type ReadContext } from './reads.js';
import { type WatchSettings, WatchStream, watchFilter } from './watch.js';

export interface HandlerDeps {
  authn: Authenticator;
  anonymousAuth: boolean;
  authz: Authorizer;
  /** Served resource types by `group/version/plural`. */
  types: ReadonlyMap<string, ResourceType>;
  discovery: DiscoveryDocs;
  health: Health;
  version: Record<string, string>;
  read: ReadContext;
  watch: WatchSettings;
  executor: Executor;
  cacher: Cacher;
  maxRequestBodyBytes: number;
  maxReadonlyInflight: number;
  maxMutatingInflight: number;
  /** --request-timeout: the longest a non-long-running request may take (504 after). */
  requestTimeoutMs: number;
  /** Extra non-resource routes (OpenAPI), by path. */
  extraRoutes?: ReadonlyMap<string, (req: Req, res: Res, query: URLSearchParams) => void | Promise<void>>;
}

const EMPTY_QUERY = new URLSearchParams();
const mutatingVerbs = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** Upstream pretty-prints when ?pretty is true, or for curl, Wget and browsers when it is unset. */
function isPretty(query: URLSearchParams, userAgent: string | undefined): boolean {
  const p = query.get('pretty');
  if (p) return ['1', 't', 'true'].includes(p.toLowerCase());
  if (!userAgent) return false;
  return userAgent.startsWith('curl') || userAgent.startsWith('Wget') || userAgent.startsWith('Mozilla/5.0');
}

function socketOf(req: Req): TLSSocket | undefined {
  return req.socket as TLSSocket | undefined;
}

export class RequestHandler {
  private readonlyInflight = 0;
  private mutatingInflight = 0;

  constructor(private readonly d: HandlerDeps) {}

  readonly handle = (req: Req, res: Res): void => {
    try {
      const r = this.serve(req, res);
      if (isPromise(r)) r.catch((err: unknown) => this.fail(res, err));
    } catch (err) {
      this.fail(res, err);
    }
  };

  private fail(res: Res, err: unknown): void {
    if (!(err instanceof StatusError)) console.error('svc-apiserver: request failed:', err);
    if (!res.headersSent) sendError(res, err);
    else if (!res.writableEnded) res.end();
  }

  private authenticate(req: Req): MaybePromise<UserInfo | undefined> {
    const anonymous = this.d.anonymousAuth ? anonymousUser : undefined;
    const rejected = (e: unknown): undefined => {
      if (!(e instanceof AuthenticationError)) throw e;
      return undefined;
    };
    let u: MaybePromise<UserInfo | null>;
    try {
      u = this.d.authn.authenticate({ headers: req.headers, socket: socketOf(req) });
    } catch (e) {
      return rejected(e);
    }
    if (isPromise(u)) return u.then((v) => v ?? anonymous, rejected);
    return u ?? anonymous;
  }

  /**
   * The path, stage by stage. Each stage continues synchronously when the previous one had its answer
   * at once (the common case), so most responses are written in the request's own tick.
   */
  private serve(req: Req, res: Res): MaybePromise<void> {
    const url = req.url ?? '/';
    const qi = url.indexOf('?');
    const rawPath = qi < 0 ? url : url.slice(0, qi);
    const rawQuery = qi < 0 ? '' : url.slice(qi + 1);
    const query = rawQuery ? new URLSearchParams(rawQuery) : EMPTY_QUERY;
    let path: string;
    try {
      path = rawPath.includes('%') ? decodeURIComponent(rawPath) : rawPath;
    } catch {
      return void sendError(res, errors.badRequest(`invalid URL escape in path ${JSON.stringify(rawPath)}`));
    }
    const method = req.method ?? 'GET';
    // 1 authenticate
    return then(this.authenticate(req), (user) => {
      if (!user) return void sendError(res, errors.unauthorized());
      // 2 request info
      const info = requestInfoFor(method, path, query);
      const attrs: Attributes = {
        user,
        verb: info.verb,
        isResourceRequest: info.isResourceRequest,
        path,
        namespace: info.namespace,
        apiGroup: info.apiGroup,
        apiVersion: info.apiVersion,
        resource: info.resource,
        subresource: info.subresource,
        name: info.name,
      };
      // 3 authorize
      return then(this.d.authz.authorize(attrs), (decision) => {
        if (decision.decision !== 'allow') {
          const msg = forbiddenMessage(attrs);
          const reason = decision.reason ? `${msg}: ${decision.reason}` : msg;
          const gr = info.isResourceRequest ? { group: info.apiGroup, resource: info.resource } : { group: '', resource: '' };
          return void sendError(res, errors.forbidden(gr, info.isResourceRequest ? info.name : '', reason));
        }
        return this.admitAndRoute(req, res, method, path, info, user, rawQuery, query);
      });
    });
  }

  /** 4 admit load (watches are long-running and not counted), then 5 route. */
  private admitAndRoute(
    req: Req,
    res: Res,
    method: string,
    path: string,
    info: RequestInfo,
    user: UserInfo,
    rawQuery: string,
    query: URLSearchParams,
  ): MaybePromise<void> {
    const mutating = mutatingVerbs.has(info.verb);
    const counted = info.verb !== 'watch';
    if (counted) {
      const limit = mutating ? this.d.maxMutatingInflight : this.d.maxReadonlyInflight;
      const current = mutating ? this.mutatingInflight : this.readonlyInflight;
      if (limit > 0 && current >= limit) return void sendError(res, errors.tooManyRequests('Too many requests, please try again later.', 1));
      if (mutating) this.mutatingInflight++;
      else this.readonlyInflight++;
    }
    const release = (): void => {
      if (!counted) return;
      if (mutating) this.mutatingInflight--;
      else this.readonlyInflight--;
    };
    let timeoutMs = this.d.requestTimeoutMs;
    const asked = query.get('timeout');
    if (asked) {
      let parsed: number;
      try {
        parsed = parseDuration(asked);
      } catch {
        release();
        return void sendError(res, errors.badRequest(`invalid timeout specified in the request URL: ${asked}`));
      }
      if (parsed > 0 && parsed < timeoutMs) timeoutMs = parsed;
    }
    let r: MaybePromise<void>;
    try {
      r = info.isResourceRequest ? this.resource(req, res, method, info, user, rawQuery, query) : this.nonResource(req, res, method, path, query);
    } catch (e) {
      release();
      throw e;
    }
    if (!isPromise(r)) {
      release();
      return r;
    }
    // only a request that had to wait can run out of time; watches have their own timeout
    const timer =
      counted && timeoutMs > 0
        ? setTimeout(() => {
            if (!res.headersSent) sendError(res, errors.timeout('request did not complete within requested timeout - context deadline exceeded', 0));
          }, timeoutMs)
        : undefined;
    return r.finally(() => {
      if (timer) clearTimeout(timer);
      release();
    });
  }

  private async nonResource(req: Req, res: Res, method: string, path: string, query: URLSearchParams): Promise<void> {
    const clean = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const [, first = '', ...rest] = clean.split('/');
    if (first === 'livez' || first === 'readyz' || first === 'healthz') {
      if (method !== 'GET' && method !== 'HEAD') return void sendError(res, errors.methodNotAllowed());
      const r = await this.d.health.run(first as Endpoint, rest.join('/'), query);
      return void sendBytes(res, r.code, 'text/plain; charset=utf-8', Buffer.from(r.body), { 'x-content-type-options': 'nosniff' });
    }
    const extra = this.d.extraRoutes?.get(clean);
    if (extra) return void (await extra(req, res, query));
    const doc = clean === '/version' ? this.d.version : this.d.discovery.byPath.get(clean);
    if (doc === undefined) return void sendError(res, errors.pathNotFound());
    if (method !== 'GET' && method !== 'HEAD') return void sendError(res, errors.methodNotAllowed());
    const mediaType = negotiateResponse(req.headers.accept, responseMediaTypes);
    if (!mediaType) return void sendError(res, errors.notAcceptable(responseMediaTypes));
    const pretty = isPretty(query, req.headers['user-agent']);
    sendBytes(res, 200, mediaType, encodeValue(doc as object, { mediaType, pretty }));
  }

  private resource(req: Req, res: Res, method: string, info: RequestInfo, user: UserInfo, rawQuery: string, query: URLSearchParams): MaybePromise<void> {
    const rt = this.d.types.get(`${info.apiGroup}/${info.apiVersion}/${info.resource}`);
    if (!rt) return void sendError(res, errors.pathNotFound());
    const parts = info.parts;
    // namespace objects are addressed as /namespaces/<name>: the request namespace is the object's name
    const namespace = rt.namespaced ? info.namespace : '';
    if (parts.length > 3 || (rt.namespaced && parts.length > 1 && !info.namespace) || (!rt.namespaced && info.namespace && rt.plural !== 'namespaces')) {
      return void sendError(res, errors.pathNotFound());
    }
    const name = parts[1] ?? '';
    const sub = parts[2] ?? '';
    const subDef = sub ? rt.subresources?.[sub] : undefined;
    if (sub && !subDef) return void sendError(res, errors.pathNotFound());
    const verb = info.verb as Verb;
    const served = subDef ? subDef.verbs : (rt.verbs ?? allVerbs);
    if (!served.includes(verb) || (name === '' && (method === 'PUT' || method === 'PATCH')) || (name !== '' && method === 'POST')) {
      return void sendError(res, errors.methodNotAllowed());
    }
    if (verb === 'create' && rt.namespaced && !info.namespace) return void sendError(res, errors.methodNotAllowed());

    // 6 negotiate
    const pretty = isPretty(query, req.headers['user-agent']);
    const offered = verb === 'watch' ? streamMediaTypes : responseMediaTypes;
    const mediaType = negotiateResponse(req.headers.accept, offered);
    if (!mediaType) return void sendError(res, errors.notAcceptable(offered));
    const enc = { mediaType, pretty };

    // 7 serve: a get answered from the cache stays synchronous; everything else may wait
    if (verb === 'get') {
      const sent = (body: Buffer): void => sendBytes(res, 200, mediaType, body);
      const failed = (err: unknown): void => void sendError(res, err, mediaType, pretty);
      try {
        const body = getFromCache(this.d.read, rt, namespace, name, query, enc);
        return isPromise(body) ? body.then(sent, failed) : sent(body);
      } catch (err) {
        return failed(err);
      }
    }
    return this.serveAsync({ req, res, verb, rt, namespace, name, sub, user, rawQuery, query, mediaType, pretty });
  }

  /** Everything after the cache-served get: lists, watches, and writes run as pool tasks. */
  private async serveAsync(r: ResolvedRequest): Promise<void> {
    const { req, res, rt, mediaType, pretty } = r;
    try {
      switch (r.verb) {
        case 'list': {
          const o = parseListOptions(rt, r.query);
          const page = await listFromCache(this.d.read, rt, r.namespace, o, { mediaType, pretty });
          if (page.kind === 'stream') return void (await sendStream(res, 200, mediaType, page.chunks));
          if (page.kind === 'bytes') return void sendBytes(res, 200, mediaType, page.body);
          return void (await this.runTask(r, 'list', undefined));
        }
        case 'watch': {
          const o = parseListOptions(rt, r.query);
          const t = { rt, namespace: r.namespace, name: r.name, mediaType };
          return void (await new WatchStream(this.d.watch, t, o, watchFilter(t, o), res).start());
        }
        default: {
          let body: Buffer | undefined;
          try {
            body = await readBody(req, this.d.maxRequestBodyBytes);
          } catch (e) {
            // the unread rest of the body makes an HTTP/1.1 connection unusable
            if (req.httpVersionMajor === 1) res.setHeader('connection', 'close');
            throw e;
          }
          return void (await this.runTask(r, r.verb as TaskVerb, body));
        }
      }
    } catch (err) {
      sendError(res, err, mediaType, pretty);
    }
  }

  private async runTask(r: ResolvedRequest, verb: TaskVerb, body: Buffer | undefined): Promise<void> {
    const { req, rt } = r;
    const task: ApiTask = {
      verb,
      resource: resourceId(rt),
      subresource: r.sub,
      namespace: r.namespace,
      name: r.name,
      query: r.rawQuery,
      contentType: String(req.headers['content-type'] ?? ''),
      mediaType: r.mediaType,
      pretty: r.pretty,
      user: r.user,
      userAgent: String(req.headers['user-agent'] ?? ''),
    };
    if (body && body.length) task.body = body;
    const result = await this.d.executor.run(task);
    if (result.revision) this.d.cacher.notifyCommitted(result.revision);
    sendBytes(r.res, result.code, result.contentType, result.body, result.headers, result.warnings);
  }
}

/** A resource request after routing and negotiation: what the serving stages need. */
interface ResolvedRequest {
  req: Req;
  res: Res;
  verb: Verb;
  rt: ResourceType;
  namespace: string;
  name: string;
  sub: string;
  user: UserInfo;
  rawQuery: string;
  query: URLSearchParams;
  mediaType: ResponseMediaType;
  pretty: boolean;
}
