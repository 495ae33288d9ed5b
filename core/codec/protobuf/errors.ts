/**
 * The two error classes of the protobuf codec: a request body that cannot be decoded (the caller turns
 * it into a 400 / 415 in upstream's wording) and an object that cannot be written as protobuf.
 */

/**
 * A protobuf body that is malformed or names a type we do not serve; `message` is upstream-worded.
 * `typeMeta` is set once the envelope named a kind, so a caller can word the error as upstream does
 * for a known kind (`X in version "v1" cannot be handled as a Y: ...`).
 */
export class ProtobufDecodeError extends Error {
  override readonly name = 'ProtobufDecodeError';
  constructor(
    message: string,
    readonly typeMeta?: { apiVersion: string; kind: string },
  ) {
    super(message);
  }
}

/** A JSON object that does not fit the protobuf message of its kind (a bug or an unserved kind). */
export class ProtobufEncodeError extends Error {
  override readonly name = 'ProtobufEncodeError';
}

/**
 * protobufjs's reader errors in the words Go's generated unmarshallers use: running past the end of
 * the buffer is "unexpected EOF", a bad wire type is "illegal wireType".
 */
export function wireErrorMessage(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  if (e instanceof RangeError || /index out of range/.test(text)) return 'unexpected EOF';
  const wire = /invalid wire type (\d+)/.exec(text);
  if (wire) return `proto: illegal wireType ${wire[1]}`;
  return `proto: ${text}`;
}
