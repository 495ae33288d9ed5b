/**
 * A chunked request body (HTTP/1.1 `Transfer-Encoding: chunked`, RFC 9112 section 7.1) decoded from
 * raw connection bytes. Node's parser decodes bodies itself, except for a request asking to switch
 * protocols: the 'upgrade' event hands it over with its body still on the connection, and the
 * listener (listener.ts) reads it with this, as the parser would have. Chunk extensions and trailer
 * fields are read and dropped, as upstream's Go server drops them; anything else is a malformed
 * request, named by the parser error code Node gives the same fault in an ordinary request.
 */

/** What a chunk-size line may hold at most (hex size, extensions): Go's limit for the line. */
const MAX_LINE_BYTES = 4096;
/** Hex digits of a chunk size: 16 would pass 2^53, which no body here comes near. */
const MAX_SIZE_DIGITS = 13;
/** Trailer fields, all together. */
const MAX_TRAILER_BYTES = 64 << 10;

const CR = 0x0d;
const LF = 0x0a;

export class ChunkedBodyError extends Error {
  constructor(readonly code: string, why: string) {
    super(why);
  }
}

type State = 'size' | 'data' | 'dataEnd' | 'trailer' | 'done';

/**
 * Feeds on the connection's bytes; hands each piece of body out through `onData`. `write` returns how
 * many bytes of its chunk belonged to the body (the rest follows the message); it throws a
 * ChunkedBodyError for a malformed body.
 */
export class ChunkedDecoder {
  private state: State = 'size';
  /** The line being read (a chunk size, a trailer field), without its CRLF. */
  private line: number[] = [];
  private lineCR = false;
  private left = 0;
  private trailerBytes = 0;

  constructor(private readonly onData: (piece: Buffer) => void) {}

  get done(): boolean {
    return this.state === 'done';
  }

  write(chunk: Buffer): number {
    let i = 0;
    while (i < chunk.length && this.state !== 'done') {
      if (this.state === 'data') {
        const n = Math.min(this.left, chunk.length - i);
        this.onData(chunk.subarray(i, i + n));
        this.left -= n;
        i += n;
        if (this.left === 0) this.state = 'dataEnd';
        continue;
      }
      const b = chunk[i++]!;
      if (this.state === 'dataEnd') {
        // CR then LF after each chunk's data, nothing else
        if (!this.lineCR && b === CR) this.lineCR = true;
        else if (this.lineCR && b === LF) (this.lineCR = false), (this.state = 'size');
        else throw new ChunkedBodyError('HPE_STRICT', 'expected CRLF after chunk data');
        continue;
      }
      if (this.lineCR) {
        if (b !== LF) throw new ChunkedBodyError(this.state === 'size' ? 'HPE_INVALID_CHUNK_SIZE' : 'HPE_INVALID_HEADER_TOKEN', 'expected LF after CR');
        this.lineCR = false;
        this.endLine();
        continue;
      }
      if (b === CR) {
        this.lineCR = true;
        continue;
      }
      if (b === LF) throw new ChunkedBodyError(this.state === 'size' ? 'HPE_INVALID_CHUNK_SIZE' : 'HPE_INVALID_HEADER_TOKEN', 'bare LF');
      if (this.state === 'trailer' && ++this.trailerBytes > MAX_TRAILER_BYTES) throw new ChunkedBodyError('HPE_HEADER_OVERFLOW', 'trailer too large');
      if (this.line.length >= MAX_LINE_BYTES) throw new ChunkedBodyError(this.state === 'size' ? 'HPE_INVALID_CHUNK_SIZE' : 'HPE_HEADER_OVERFLOW', 'line too long');
      this.line.push(b);
    }
    return i;
  }

  /** A whole line was read (its CRLF consumed). */
  private endLine(): void {
    const text = Buffer.from(this.line).toString('latin1');
    this.line = [];
    if (this.state === 'trailer') {
      // an empty line ends the trailer section, and the message
      if (text === '') this.state = 'done';
      else if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+:/.test(text)) throw new ChunkedBodyError('HPE_INVALID_HEADER_TOKEN', 'invalid trailer field');
      return;
    }
    // chunk-size [ chunk-ext ]: hex digits, then optional ";name[=value]" extensions (whitespace allowed before them)
    const m = /^([0-9A-Fa-f]+)[ \t]*(;.*)?$/.exec(text);
    if (!m || m[1]!.length > MAX_SIZE_DIGITS) throw new ChunkedBodyError('HPE_INVALID_CHUNK_SIZE', `invalid chunk size ${JSON.stringify(text.slice(0, 32))}`);
    const size = parseInt(m[1]!, 16);
    if (size === 0) this.state = 'trailer';
    else (this.left = size), (this.state = 'data');
  }
}

/** Whether a request's Transfer-Encoding ends with `chunked` (its body is framed in chunks). */
export function isChunked(te: string | string[] | undefined): boolean {
  const v = Array.isArray(te) ? te.join(',') : te;
  if (!v) return false;
  const codings = v.split(',').map((x) => x.trim().toLowerCase()).filter(Boolean);
  return codings.at(-1) === 'chunked';
}
