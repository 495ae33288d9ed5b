/**
 * Requests that keep what a higher-level client hides: the raw header list (each Warning header on
 * its own, as sent) and the raw body bytes, on a fresh connection each (HTTP/1.1) so a request that
 * ends its connection cannot disturb the next. Also upstream's reading of a Warning header
 * (apimachinery's ParseWarningHeader), to check the headers we write are ones clients accept.
 */
import { request as httpsRequest } from 'node:https';
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
