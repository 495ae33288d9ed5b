/**
 * Errors over gRPC: the HTTP code of a Status becomes a gRPC status code (issue 15's table), the Status
 * message its details, and the Status itself, in the protobuf envelope, the trailing metadata
 * `svc-status-bin`, so a client gets the same object the HTTPS API answers.
 */
import { Metadata, status as Code, type ServiceError } from '@grpc/grpc-js';
import type { Status } from '../api/status.js';
import { protobufSerializer } from '../codec/protobuf-serializer.js';
import { bodySerializerFor } from '../codec/serializer.js';
import { isProtobufMediaType } from '../codec/protobuf.js';

export const STATUS_METADATA_KEY = 'svc-status-bin';

/** The gRPC code of an HTTP answer code (and, for 409, the Status reason). */
export function grpcCodeOf(httpCode: number, reason?: string): Code {
  switch (httpCode) {
    case 400:
    case 406:
    case 415:
    case 422:
      return Code.INVALID_ARGUMENT;
    case 401:
      return Code.UNAUTHENTICATED;
    case 403:
      return Code.PERMISSION_DENIED;
    case 404:
      return Code.NOT_FOUND;
    case 405:
      return Code.UNIMPLEMENTED;
    case 409:
      return reason === 'AlreadyExists' ? Code.ALREADY_EXISTS : Code.ABORTED;
    case 410:
      return Code.OUT_OF_RANGE;
    case 412:
      return Code.FAILED_PRECONDITION;
    case 413:
    case 429:
      return Code.RESOURCE_EXHAUSTED;
    case 500:
      return Code.INTERNAL;
    case 503:
      return Code.UNAVAILABLE;
    case 504:
      return Code.DEADLINE_EXCEEDED;
    default:
      // not in the table: the nearest class
      return httpCode >= 500 ? Code.UNKNOWN : Code.FAILED_PRECONDITION;
  }
}

/** The Status an error answer's body holds, read back in its own media type (errors are rare: decoding is fine). */
export function statusOfBody(contentType: string, body: Uint8Array, httpCode: number): Status {
  const s = bodySerializerFor(contentType, { cbor: true });
  try {
    if (s) return s.decodeBody(body).value as Status;
  } catch {
    // fall through: a Status made from the code alone
  }
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: Buffer.from(body).toString('utf8'), code: httpCode };
}

/** A gRPC error carrying a Status: code from the HTTP code, message, and the enveloped Status as trailer. */
export function statusError(status: Status, enveloped?: Uint8Array): Partial<ServiceError> {
  const metadata = new Metadata();
  metadata.set(STATUS_METADATA_KEY, Buffer.from(enveloped ?? protobufSerializer.encodeValue(status as unknown as Record<string, unknown>, { pretty: false })));
  return { code: grpcCodeOf(status.code ?? 500, status.reason), details: status.message ?? '', metadata };
}

/**
 * The error for an HTTP error answer as the chain wrote it; its extra headers (Retry-After) and
 * warnings go along as trailing metadata (`retry-after`, `warning`).
 */
export function errorOfAnswer(code: number, contentType: string, body: Uint8Array, headers?: Readonly<Record<string, string>>, warnings?: readonly string[]): Partial<ServiceError> {
  const status = statusOfBody(contentType, body, code);
  const err = statusError(status, isProtobufMediaType(contentType) ? body : undefined);
  if (headers) for (const k in headers) err.metadata!.set(k.toLowerCase(), headers[k]!);
  if (warnings) for (const w of warnings) err.metadata!.add('warning', w);
  return err;
}
