/**
 * Requests that keep what a higher-level client hides: the raw header list (each Warning header on
 * its own, as sent) and the raw body bytes, on a fresh connection each (HTTP/1.1) so a request that
 * ends its connection cannot disturb the next. Also upstream's reading of a Warning header
 * (apimachinery's ParseWarningHeader), to check the headers we write are ones clients accept.
 */
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { ADMIN_TOKEN } from './server.js';

export interface RawResponse {
  status: number;
  rawHeaders: string[];
  body: Buffer;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface RawTarget {
  url: string;
  ca: string;
}

export interface RawOptions {
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Send the body with Transfer-Encoding: chunked (no Content-Length). */
  chunked?: boolean;
  token?: string;
}

export function rawRequest(srv: RawTarget, method: string, path: string, o: RawOptions = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string> = { authorization: `Bearer ${o.token ?? ADMIN_TOKEN}`, ...(o.headers ?? {}) };
    if (o.body !== undefined && !o.chunked) h['content-length'] = String(Buffer.byteLength(o.body));
    const req = httpsRequest(new URL(path, srv.url), { method, headers: h, ca: srv.ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const text = body.toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, rawHeaders: res.rawHeaders, body, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (o.body !== undefined && o.chunked) {
      const b = Buffer.isBuffer(o.body) ? o.body : Buffer.from(o.body);
      for (let i = 0; i < b.length; i += 64 * 1024) req.write(b.subarray(i, i + 64 * 1024));
      req.end();
    } else req.end(o.body);
  });
}

/** Every value of one header, in order (Node would join repeated Warning headers into one string). */
export function headerValues(r: Pick<RawResponse, 'rawHeaders'>, name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2) if (r.rawHeaders[i]!.toLowerCase() === name) out.push(r.rawHeaders[i + 1]!);
  return out;
}

export interface ParsedWarning {
  code: number;
  agent: string;
  /** The text, decoded from the header's UTF-8 bytes and unquoted. */
  text: string;
}

/**
 * Reads one Warning header value as upstream's client does: `<3-digit code> <agent> "<text>"`, the
 * text a quoted-string in valid UTF-8 without control characters. Returns why it is not, otherwise.
 */
export function parseWarningHeader(value: string): ParsedWarning | { invalid: string } {
  // Node hands header bytes over as Latin-1 characters: turn them back into the bytes sent
  const bytes = Buffer.from(value, 'latin1');
  const utf8 = bytes.toString('utf8');
  if (!Buffer.from(utf8, 'utf8').equals(bytes)) return { invalid: 'not valid UTF-8' };
  const m = /^(\d{3}) (\S+) "((?:[^"\\]|\\.)*)"$/su.exec(utf8);
  if (!m) return { invalid: `not <code> <agent> "<text>": ${JSON.stringify(utf8)}` };
  const text = m[3]!.replace(/\\(.)/gsu, '$1');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(text)) return { invalid: `control character in ${JSON.stringify(text)}` };
  return { code: Number(m[1]), agent: m[2]!, text };
}

/** The Warning texts of a response, or a failure for the first header clients would refuse. */
export function warningTexts(r: Pick<RawResponse, 'rawHeaders'>): string[] | { invalid: string } {
  const out: string[] = [];
  for (const v of headerValues(r, 'warning')) {
    const w = parseWarningHeader(v);
    if ('invalid' in w) return w;
    if (w.code !== 299 || w.agent !== '-') return { invalid: `code/agent ${w.code} ${w.agent}` };
    out.push(w.text);
  }
  return out;
}

export interface UploadOptions {
  /** Transfer-Encoding: chunked, or a Content-Length of `size`. */
  chunked: boolean;
  /** Sends Expect: 100-continue (a 'whole' client sends its body without waiting; a 'stop' client waits for the 100 first, as curl does). */
  expectContinue?: boolean;
  /** Bytes of body. */
  size: number;
  /**
   * 'whole': the whole body is handed to the connection at once and nothing is read until it is all
   * written (a client that reads its answer only once it has sent its request); 'stop': the body is
   * written as the connection takes it, 64 KiB at a time, reading meanwhile, and the writing stops
   * (the client's side ended) once an answer's head arrives, as Go's and curl's clients do; 'quit':
   * as 'stop', and the client also gives up after `quitAfter` bytes of body, answer or not (its side
   * ended with the body cut short).
   */
  client: 'whole' | 'stop' | 'quit';
  /** For 'quit': bytes of body sent before giving up. */
  quitAfter?: number;
  path?: string;
  token?: string;
}

export interface UploadResult {
  /** Every status line received, in order (a 100 Continue first when the server sent one). */
  statusLines: string[];
  /** The final answer's status code (0 when none arrived whole). */
  status: number;
  /** The final answer's headers, names lower-cased. */
  headers: Record<string, string>;
  /** The final answer's body: its Content-Length of bytes. */
  body: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  /** What followed the final answer's body (nothing, on a clean end), as Latin-1 text. */
  extra: string;
  /** Bytes of the body written when the final answer's head arrived (the size if it came after). */
  sentBeforeAnswer: number;
  /** The server ended the connection (TLS close and FIN) rather than resetting it. */
  ended: boolean;
  /** A socket error, if any (ECONNRESET, EPIPE). */
  error?: string;
}

const PIECE = 64 * 1024;

/**
 * A POST of `size` bytes of body on its own HTTP/1.1 TLS connection, written as `o.client` says, read
 * until the server ends the connection. Reports what a client sees: the answer, whether the
 * connection ended cleanly or was reset, how much it had sent when the answer came.
 */
export function uploadRaw(srv: RawTarget, o: UploadOptions): Promise<UploadResult> {
  const u = new URL(srv.url);
  const piece = Buffer.alloc(PIECE, 0x20);
  const frame = (n: number): Buffer[] => (o.chunked ? [Buffer.from(`${n.toString(16)}\r\n`), piece.subarray(0, n), Buffer.from('\r\n')] : [piece.subarray(0, n)]);
  return new Promise((resolve) => {
    let input: Buffer = Buffer.alloc(0);
    const statusLines: string[] = [];
    let final: { status: number; headers: Record<string, string>; length: number } | undefined;
    let sent = 0;
    let sentBeforeAnswer = -1;
    let ended = false;
    let error: string | undefined;
    let continued = false;
    // the writer waits on the connection: a drain, an answer's head, its end
    let wake: () => void = () => undefined;
    const event = (): Promise<void> => new Promise((r) => (wake = r));
    const sock = tlsConnect({ host: u.hostname, port: Number(u.port), ca: srv.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => void send());
    // one answer head at a time: a 100 Continue, then the final answer
    const parse = (): void => {
      while (!final) {
        const end = input.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = input.subarray(0, end).toString('latin1').split('\r\n');
        const status = Number(lines[0]!.split(' ')[1]);
        statusLines.push(lines[0]!);
        input = input.subarray(end + 4);
        if (status >= 100 && status < 200) {
          continued = true;
          continue;
        }
        const headers: Record<string, string> = {};
        for (const l of lines.slice(1)) {
          const c = l.indexOf(':');
          headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
        }
        final = { status, headers, length: Number(headers['content-length'] ?? -1) };
        sentBeforeAnswer = sent;
      }
    };
    const send = async (): Promise<void> => {
      const framing = o.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${o.size}`;
      const expect = o.expectContinue ? 'Expect: 100-continue\r\n' : '';
      sock.write(`POST ${o.path ?? '/api/v1/namespaces/default/configmaps'} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${o.token ?? ADMIN_TOKEN}\r\nContent-Type: application/json\r\n${framing}\r\n${expect}\r\n`);
      if (o.client === 'whole') {
        // everything queued now; the answer is read once the last byte is written (or the write failed)
        sock.pause();
        for (let at = 0; at < o.size; at += PIECE) for (const b of frame(Math.min(PIECE, o.size - at))) sock.write(b);
        sock.write(o.chunked ? '0\r\n\r\n' : '', () => {
          if (!sock.destroyed) sent = o.size;
          sock.resume();
        });
        return;
      }
      while (o.expectContinue && !continued && !final && !sock.destroyed) await event();
      const upTo = o.client === 'quit' ? Math.min(o.size, o.quitAfter ?? 0) : o.size;
      for (let at = 0; at < upTo && !final && !sock.destroyed; at += PIECE) {
        const n = Math.min(PIECE, o.size - at);
        let ok = true;
        for (const b of frame(n)) ok = sock.write(b);
        sent += n;
        while (!ok && sock.writableNeedDrain && !final && !sock.destroyed) await event();
      }
      if (sock.destroyed) return;
      // an answer before the whole body: stop sending, as Go's and curl's clients do, and read it out
      if (final || upTo < o.size) return void sock.end();
      if (o.chunked) sock.write('0\r\n\r\n');
    };
    sock.on('data', (d: Buffer) => {
      input = input.length ? Buffer.concat([input, d]) : d;
      parse();
      wake();
    });
    sock.on('drain', () => wake());
    sock.on('end', () => (ended = true));
    sock.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    sock.on('close', () => {
      wake();
      parse();
      const length = final ? (final.length >= 0 ? final.length : input.length) : 0;
      const body = final ? input.subarray(0, length).toString('utf8') : '';
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({
        statusLines,
        status: final && input.length >= length ? final.status : 0,
        headers: final?.headers ?? {},
        body,
        json,
        extra: input.subarray(Math.min(length, input.length)).toString('latin1'),
        sentBeforeAnswer: sentBeforeAnswer < 0 ? sent : sentBeforeAnswer,
        ended,
        error,
      });
    });
  });
}
