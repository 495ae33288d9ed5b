/**
 * One audited request: its event, filled as the request goes (annotations from later stages, the
 * request body, the answer's code, status and body), and written at each stage: RequestReceived
 * before the handler runs, ResponseStarted when a long-running answer (a watch) starts,
 * ResponseComplete when the handler is done (and a watch stream closed), Panic when the handler
 * threw something other than a Status error. The answer is seen through a thin wrapper of the
 * scope's ResponseSink; only audited requests get one.
 */
import type { MaybePromise } from '../api/maybe-async.js';
import { StatusError } from '../api/status.js';
import type { UserInfo } from '../api/types.js';
import type { RequestScope, ResponseSink } from '../request/scope.js';
import type { Auditor, EventParts } from './auditor.js';
import { annotationsJsonOf, type AuditEvent, authMethodsMessage, cachedIdentityJson, identityJson, decodeForAudit, epochOf, type EventStatus, microTime, objectRefOf, quoted, sourceIPs, statusOf, withoutManagedFields } from './event.js';
import { atLeast, type RequestAuditConfig, type Stage } from './policy.js';
import { auditStats } from './stats.js';
import { DECISION_ANNOTATION as DECISION, EVENT_API_VERSION, REASON_ANNOTATION as REASON } from './event.js';

/** What later stages may do with the current request's event (scope.audit). */
export interface AuditAnnotator {
  /** Adds an annotation (authorization decision, deprecation) to the request's event. */
  annotate(key: string, value: string): void;
}

const headerOf = (s: RequestScope, name: string): string | undefined => {
  const v = s.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** The event of a request as upstream's NewEventFromRequest fills it. */
function newEvent(s: RequestScope, cfg: RequestAuditConfig, user: UserInfo | undefined): AuditEvent {
  const ev: AuditEvent = {
    kind: 'Event',
    apiVersion: EVENT_API_VERSION,
    level: cfg.level,
    auditID: s.auditID,
    stage: 'RequestReceived',
    requestURI: s.requestURI,
    verb: s.info.verb,
    user: user ?? {},
    // every field in upstream's order from the start (one object shape; JSON leaves out the undefined)
    impersonatedUser: undefined,
    sourceIPs: sourceIPs(s.headers, s.peer?.remoteAddress),
    userAgent: headerOf(s, 'user-agent') || undefined,
    objectRef: objectRefOf(s.info),
    responseStatus: undefined,
    requestObject: undefined,
    responseObject: undefined,
    requestReceivedTimestamp: microTime(epochOf(s.startedAt)),
    stageTimestamp: '',
    annotations: undefined,
  };
  return ev;
}

/**
 * The annotations' JSON, keys sorted as upstream writes a map's. Nearly every event carries just the
 * authorization decision and its reason, and the reasons repeat (the same binding allows the same
 * callers): that JSON is kept per reason.
 */
const authzAnnotationsJson = new Map<string, string>();
const AUTHZ_JSON_CACHE_SIZE = 1024;

function annotationsJson(a: Record<string, string>): string | undefined {
  const keys = Object.keys(a);
  if (keys.length !== 2 || keys[0] !== DECISION || keys[1] !== REASON) return annotationsJsonOf(a);
  const key = `${a[DECISION]}\0${a[REASON]}`;
  let json = authzAnnotationsJson.get(key);
  if (json === undefined) {
    json = annotationsJsonOf(a)!;
    if (authzAnnotationsJson.size >= AUTHZ_JSON_CACHE_SIZE) authzAnnotationsJson.clear();
    authzAnnotationsJson.set(key, json);
  }
  return json;
}

export class AuditRecord implements AuditAnnotator, EventParts {
  readonly event: AuditEvent;
  /** The user as authenticated: a different s.user at the end means impersonation. */
  private readonly authenticated: UserInfo;
  private readonly longRunning: boolean;
  private answered = false;
  private streaming = false;
  private done = false;
  /** The scope's own sink, under the wrapper. */
  private readonly inner: ResponseSink;

  constructor(
    private readonly a: Auditor,
    private readonly s: RequestScope,
    private readonly cfg: RequestAuditConfig,
    longRunning: boolean,
  ) {
    this.authenticated = s.user;
    this.longRunning = longRunning;
    this.event = newEvent(s, cfg, s.user);
    this.inner = s.sink;
  }

  annotate(key: string, value: string): void {
    (this.event.annotations ??= {})[key] = value;
    this.annotationsText = undefined;
  }

  /** The event's rarely changing parts as JSON, made when first written and again after they change. */
  private identityText: string | undefined;
  /** The objectRef was completed from the request body: its identity is not the URI's. */
  private bodyNamedObject = false;
  private annotationsText: string | undefined;

  /** The audit ID as JSON, quoted once for both stages. */
  private auditIDText: string | undefined;

  auditID(): string {
    return (this.auditIDText ??= quoted(this.event.auditID));
  }

  identity(): string {
    return (this.identityText ??= this.bodyNamedObject ? identityJson(this.event) : cachedIdentityJson(this.event));
  }

  annotations(): string | undefined {
    const a = this.event.annotations;
    return a && (this.annotationsText ??= annotationsJson(a));
  }

  private process(stage: Stage): MaybePromise<boolean> {
    if (this.s.user !== this.authenticated && this.event.impersonatedUser !== this.s.user) {
      this.event.impersonatedUser = this.s.user;
      this.identityText = undefined;
    }
    return this.a.process(this.event, stage, this.cfg.omitStages, this);
  }

  /** Writes RequestReceived; false (or a promise of it) when a strict backend could not take it. */
  received(): MaybePromise<boolean> {
    return this.process('RequestReceived');
  }

  /** The sink the rest of the chain writes to. */
  sink(): ResponseSink {
    return new AuditedSink(this.inner, this);
  }

  /** Wraps s.readBody: the body becomes requestObject (Request and up), and completes objectRef of a create. */
  readsBody(): boolean {
    return atLeast(this.cfg.level, 'Request') || this.s.info.verb === 'create';
  }

  requestBody(body: Buffer): void {
    const value = decodeForAudit(headerOf(this.s, 'content-type') ?? 'application/json', body);
    if (value === undefined) return;
    this.completeObjectRef(value);
    if (atLeast(this.cfg.level, 'Request')) this.event.requestObject = this.cfg.omitManagedFields ? withoutManagedFields(value) : value;
  }

  /** As upstream's LogRequestObject: an objectRef's empty namespace and name come from the object sent. */
  private completeObjectRef(value: unknown): void {
    const ref = this.event.objectRef;
    const meta = (value as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
    if (!ref || typeof meta !== 'object' || meta === null) return;
    // keys in upstream's order: the objectRef is rebuilt rather than given keys at its end
    const namespace = ref.namespace || (typeof meta.namespace === 'string' && meta.namespace) || undefined;
    const name = ref.name || (typeof meta.name === 'string' && meta.name) || undefined;
    if (namespace === ref.namespace && name === ref.name) return;
    this.event.objectRef = { resource: ref.resource, namespace, name, apiGroup: ref.apiGroup, apiVersion: ref.apiVersion, subresource: ref.subresource };
    this.identityText = undefined;
    this.bodyNamedObject = true;
  }

  /** The answer starts: its code, its status for failures, its object at RequestResponse. */
  answer(code: number, contentType: string, body: Uint8Array | undefined, stream: boolean): void {
    if (this.answered || this.done) return;
    this.answered = true;
    this.streaming = stream;
    let status: EventStatus = { metadata: {}, code };
    const wantObject = body !== undefined && !stream && this.cfg.level === 'RequestResponse';
    const decoded = (code >= 400 || wantObject) && body ? decodeForAudit(contentType, body) : undefined;
    if (code >= 400) status = statusOf(code, decoded);
    this.event.responseStatus = status;
    if (wantObject && decoded !== undefined) this.event.responseObject = this.cfg.omitManagedFields ? withoutManagedFields(decoded) : decoded;
    if (this.longRunning) void this.process('ResponseStarted');
  }

  /** A streamed (chunked) answer's whole body, once sent: the response object at RequestResponse. */
  answerBody(contentType: string, body: Uint8Array): void {
    if (this.done || this.cfg.level !== 'RequestResponse') return;
    const decoded = decodeForAudit(contentType, body);
    if (decoded !== undefined) this.event.responseObject = this.cfg.omitManagedFields ? withoutManagedFields(decoded) : decoded;
  }

  /** Whether chunked answers must be kept to be logged. */
  get keepsResponse(): boolean {
    return this.cfg.level === 'RequestResponse';
  }

  /** The handler is done: ResponseComplete now, or when the stream it opened closes. */
  settled(): void {
    if (this.done) return;
    if (this.streaming && !this.inner.closed) {
      this.inner.onClose(() => this.complete());
      return;
    }
    this.complete();
  }

  private complete(): void {
    if (this.done) return;
    // nothing was written: upstream fakes a success ("Connection closed early")
    if (!this.event.responseStatus) {
      this.event.responseStatus = { metadata: {}, status: 'Success', message: 'Connection closed early', code: 200 };
      if (this.longRunning) void this.process('ResponseStarted');
    }
    this.done = true;
    void this.process('ResponseComplete');
  }

  /** The handler threw: a Status error is answered here and completes the event; anything else is a Panic. */
  failed(err: unknown, answer: (e: unknown) => void): void {
    if (err instanceof StatusError) {
      answer(err);
      this.settled();
      return;
    }
    if (!this.done) {
      this.done = true;
      this.event.responseStatus = { metadata: {}, status: 'Failure', message: `APIServer panic'd: ${String(err)}`, reason: 'InternalError', code: 500 };
      void this.process('Panic');
    }
    answer(err);
  }
}

/** The scope's sink seen by the audit: every call goes through, the answer is noted on the way. */
class AuditedSink implements ResponseSink {
  constructor(
    private readonly inner: ResponseSink,
    private readonly rec: AuditRecord,
  ) {}

  get started(): boolean {
    return this.inner.started;
  }

  get closed(): boolean {
    return this.inner.closed;
  }

  get buffered(): number {
    return this.inner.buffered;
  }

  get plainTextErrors(): boolean | undefined {
    return this.inner.plainTextErrors;
  }

  get ownConnection(): ResponseSink['ownConnection'] {
    return this.inner.ownConnection;
  }

  get flowControlled(): boolean | undefined {
    return this.inner.flowControlled;
  }

  get code(): number | undefined {
    return this.inner.code;
  }

  /** The transport's own watch framing (gRPC), when it has one. */
  get watchFraming(): ResponseSink['watchFraming'] {
    const inner = this.inner;
    return inner.watchFraming && ((objectType: string) => inner.watchFraming!(objectType));
  }

  get bytes(): number | undefined {
    return this.inner.bytes;
  }

  addHeader(name: string, value: string): void {
    this.inner.addHeader?.(name, value);
  }

  send(code: number, contentType: string, body: Uint8Array, headers?: Readonly<Record<string, string>>, warnings?: readonly string[]): void {
    if (!this.inner.started && !this.inner.closed) this.rec.answer(code, contentType, body, false);
    this.inner.send(code, contentType, body, headers, warnings);
  }

  async sendChunks(code: number, contentType: string, chunks: Iterable<Uint8Array>, warnings?: readonly string[]): Promise<void> {
    if (this.inner.started || this.inner.closed) return this.inner.sendChunks(code, contentType, chunks, warnings);
    this.rec.answer(code, contentType, undefined, false);
    if (!this.rec.keepsResponse) return this.inner.sendChunks(code, contentType, chunks, warnings);
    const kept: Uint8Array[] = [];
    function* tee(): Generator<Uint8Array> {
      for (const c of chunks) {
        kept.push(c);
        yield c;
      }
    }
    await this.inner.sendChunks(code, contentType, tee(), warnings);
    this.rec.answerBody(contentType, Buffer.concat(kept));
  }

  openStream(contentType: string, code = 200, headers?: Readonly<Record<string, string>>): void {
    if (!this.inner.started) this.rec.answer(code, contentType, undefined, true);
    this.inner.openStream(contentType, code, headers);
  }

  write(frame: Uint8Array): boolean {
    return this.inner.write(frame);
  }

  drained(): Promise<boolean> {
    return this.inner.drained();
  }

  end(): void {
    this.inner.end();
  }

  abort(): void {
    this.inner.abort();
  }

  onClose(fn: () => void): void {
    this.inner.onClose(fn);
  }
}

/**
 * An authentication failure, audited as upstream's WithFailedAuthenticationAudit: the policy is asked
 * with no user, and one event is written at ResponseStarted with the 401 and which credentials were tried.
 */
export function auditFailedAuthentication(a: Auditor, s: RequestScope): void {
  auditFailedRequest(a, s, 401, authMethodsMessage(s.headers, s.query, !!s.peer?.certificate()));
}

/**
 * A request refused before authentication (a malformed ?timeout=), audited as upstream's
 * withFailedRequestAudit: no user, one event at ResponseStarted with the code and the error.
 */
export function auditFailedRequest(a: Auditor, s: RequestScope, code: number, message: string): void {
  const cfg = a.policy.evaluate({ user: undefined, info: s.info, path: s.path });
  auditStats.levels[cfg.level]++;
  if (cfg.level === 'None') return;
  const ev = newEvent(s, cfg, undefined);
  ev.responseStatus = { metadata: {}, message, code };
  void a.process(ev, 'ResponseStarted', cfg.omitStages);
}
