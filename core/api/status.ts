/**
 * The one error catalogue. Every failure the server reports is a StatusError carrying an upstream
 * `Status` object (reason + code + details); transports only choose how to encode it. Constructors
 * mirror upstream's apimachinery errors so messages read the same to users and clients.
 */
import { type FieldError, fieldErrorBody, fieldErrorString } from './field-errors.js';
import { StoreError } from '../storage/interface.js';

export type StatusReason =
  | ''
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Invalid'
  | 'ServerTimeout'
  | 'Timeout'
  | 'TooManyRequests'
  | 'BadRequest'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'InternalError'
  | 'Expired'
  | 'ServiceUnavailable';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { continue?: string; resourceVersion?: string; remainingItemCount?: number };
  status: 'Success' | 'Failure';
  message?: string;
  reason?: StatusReason;
  details?: StatusDetails;
  code: number;
}

/** Group and plural resource, e.g. {group: 'storage.svc.io', resource: 'csidrivers'}. */
export interface GroupResource {
  group: string;
  resource: string;
}
/** Group and kind, e.g. {group: '', kind: 'ConfigMap'}. */
export interface GroupKind {
  group: string;
  kind: string;
}

export const groupResourceString = (gr: GroupResource): string => (gr.group ? `${gr.resource}.${gr.group}` : gr.resource);
export const groupKindString = (gk: GroupKind): string => (gk.group ? `${gk.kind}.${gk.group}` : gk.kind);

export class StatusError extends Error {
  readonly status: Status;
  /** Extra response headers (Retry-After). */
  readonly headers: Record<string, string>;
  /**
   * Answered over HTTP as upstream's filters answer it: the message as plain text, not a Status
   * (upstream's in-flight and priority-and-fairness filters refuse with http.Error). gRPC still
   * carries the Status.
   */
  plainText = false;
  constructor(code: number, reason: StatusReason, message: string, details?: StatusDetails, headers: Record<string, string> = {}) {
    super(message);
    this.status = details
      ? { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code }
      : { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
    this.headers = headers;
  }
  /** The error a Status received from elsewhere (a task result, a webhook) stands for. */
  static fromStatus(s: Status): StatusError {
    return new StatusError(s.code || 500, s.reason ?? '', s.message ?? '', s.details);
  }
  get code(): number {
    return this.status.code;
  }
  get reason(): StatusReason {
    return this.status.reason ?? '';
  }
}

function details(gr: GroupResource, name?: string, extra: Partial<StatusDetails> = {}): StatusDetails {
  const d: StatusDetails = {};
  if (name) d.name = name;
  if (gr.group) d.group = gr.group;
  if (gr.resource) d.kind = gr.resource;
  return Object.assign(d, extra);
}

export const errors = {
  badRequest: (message: string, details?: StatusDetails): StatusError => new StatusError(400, 'BadRequest', message, details),

  unauthorized: (message = 'Unauthorized'): StatusError => new StatusError(401, 'Unauthorized', message),

  forbidden: (gr: GroupResource, name: string, reason: string): StatusError => {
    const what = groupResourceString(gr);
    const message = !what ? `forbidden: ${reason}` : name ? `${what} "${name}" is forbidden: ${reason}` : `${what} is forbidden: ${reason}`;
    return new StatusError(403, 'Forbidden', message, details(gr, name));
  },

  /** 403 for requests that name no resource (non-resource URLs). */
  forbiddenMessage: (message: string): StatusError => new StatusError(403, 'Forbidden', message, {}),

  notFound: (gr: GroupResource, name: string): StatusError =>
    new StatusError(404, 'NotFound', `${groupResourceString(gr)} "${name}" not found`, details(gr, name)),

  /** 404 for a path that names no API resource at all. */
  pathNotFound: (): StatusError => new StatusError(404, 'NotFound', 'the server could not find the requested resource', {}),

  methodNotSupported: (gr: GroupResource, action: string): StatusError =>
    new StatusError(405, 'MethodNotAllowed', `${action} is not supported on resources of kind "${groupResourceString(gr)}"`, details(gr)),

  /** 405 for a method the path does not serve. */
  methodNotAllowed: (): StatusError => new StatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {}),

  notAcceptable: (accepted: readonly string[]): StatusError =>
    new StatusError(406, 'NotAcceptable', `only the following media types are accepted: ${accepted.join(', ')}`),

  alreadyExists: (gr: GroupResource, name: string): StatusError =>
    new StatusError(409, 'AlreadyExists', `${groupResourceString(gr)} "${name}" already exists`, details(gr, name)),

  conflict: (gr: GroupResource, name: string, reason: string, causes?: StatusCause[]): StatusError =>
    new StatusError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${groupResourceString(gr)} "${name}": ${reason}`,
      details(gr, name, causes ? { causes } : {}),
    ),

  /** Server-side apply found fields owned by other managers (one cause per field). */
  conflictApply: (message: string, causes: StatusCause[]): StatusError => new StatusError(409, 'Conflict', message, { causes }),

  /** Optimistic-concurrency failure: the object changed since the client read it. */
  staleResourceVersion: (gr: GroupResource, name: string): StatusError =>
    errors.conflict(gr, name, 'the object has been modified; please apply your changes to the latest version and try again'),

  gone: (message: string): StatusError => new StatusError(410, 'Gone', message),

  /** 410 Expired: too old resource version, expired continue token. */
  expired: (message: string): StatusError => new StatusError(410, 'Expired', message),

  requestEntityTooLarge: (limit: number): StatusError =>
    new StatusError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${limit}`),

  unsupportedMediaType: (contentType: string, accepted: readonly string[]): StatusError =>
    new StatusError(
      415,
      'UnsupportedMediaType',
      contentType
        ? `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`
        : `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
    ),

  invalid: (gk: GroupKind, name: string, errs: readonly FieldError[]): StatusError => {
    const causes: StatusCause[] = errs.map((e) => ({ reason: e.type, message: fieldErrorBody(e), field: e.field }));
    let message = `${groupKindString(gk)} "${name}" is invalid`;
    if (errs.length === 1) message += `: ${fieldErrorString(errs[0]!)}`;
    else if (errs.length > 1) message += `: [${errs.map(fieldErrorString).join(', ')}]`;
    const d: StatusDetails = {};
    if (name) d.name = name;
    if (gk.group) d.group = gk.group;
    d.kind = gk.kind;
    d.causes = causes;
    return new StatusError(422, 'Invalid', message, d);
  },

  tooManyRequests: (message: string, retryAfterSeconds: number): StatusError =>
    Object.assign(new StatusError(429, 'TooManyRequests', message, { retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) }), { plainText: true }),

  internal: (err: unknown): StatusError => {
    const msg = err instanceof Error ? err.message : String(err);
    return new StatusError(500, 'InternalError', `Internal error occurred: ${msg}`, { causes: [{ message: msg }] });
  },

  serviceUnavailable: (message: string): StatusError => new StatusError(503, 'ServiceUnavailable', message),

  timeout: (message: string, retryAfterSeconds: number): StatusError =>
    new StatusError(
      504,
      'Timeout',
      `Timeout: ${message}`,
      { retryAfterSeconds },
      retryAfterSeconds > 0 ? { 'Retry-After': String(retryAfterSeconds) } : {},
    ),

  /** 504 for a resourceVersion the store has not reached within the wait window. */
  tooLargeResourceVersion: (requested: number, current: number, retryAfterSeconds = 1): StatusError => {
    const e = errors.timeout(`Too large resource version: ${requested}, current: ${current}`, retryAfterSeconds);
    e.status.details!.causes = [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }];
    return e;
  },
};

/** Wraps anything thrown into a StatusError (unknown errors become 500 InternalError). */
export function toStatusError(err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  // a store that cannot be reached (etcd down) is the server's unavailability, not an internal error
  if (err instanceof StoreError && err.code === 'Unavailable') return errors.serviceUnavailable(err.message);
  return errors.internal(err);
}

/** A Success status, as returned by deletecollection and by delete of most kinds (no code, as upstream). */
export function successStatus(d?: StatusDetails): Omit<Status, 'code'> {
  const s: Omit<Status, 'code'> = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' };
  if (d) s.details = d;
  return s;
}
