/**
 * Many requests fast, for matrix tests: one HTTP/2 session per credential (streams multiplexed, so a
 * watch is cancelled without losing a connection and nothing pays a TLS handshake per request), the
 * path sent byte for byte as given (no URL normalization: percent escapes, case and dot segments
 * reach the server as written), and a pool running tasks with a bounded number in flight.
 */
import { connect, constants, type ClientHttp2Session } from 'node:http2';

export interface H2Answer {
  status: number;
  body: Buffer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  /** For `firstLine` requests: the stream was cancelled after its first line (a watch left open). */
  cut: boolean;
}

export interface H2Options {
  body?: unknown;
  contentType?: string;
  /**
   * Read only up to the first newline, then cancel the stream (watches); a stream that has answered
   * but sent no whole line within FIRST_LINE_MS (a watch with nothing to send) is cancelled there,
   * with what it sent.
   */
  firstLine?: boolean;
}

/** A safety net only (no assertion is made on time): a stream still open after this is cancelled and reported as status 0. */
const STUCK_MS = 30_000;
const FIRST_LINE_MS = 2_000;

/**
 * Streams a session may cancel before the next request opens a new one: Node's HTTP/2 server ends a
 * session with GOAWAY after about a thousand RST_STREAMs from its client (its rapid-reset guard).
 */
const CANCELS_PER_SESSION = 400;

interface Session {
  s: ClientHttp2Session;
  inflight: number;
  cancels: number;
  retired: boolean;
}

export class H2Client {
  private current: Session | undefined;
  private readonly all = new Set<Session>();

  constructor(
    private readonly url: string,
    private readonly ca: string,
    private readonly token: string,
  ) {}

  /** The session for the next stream: a new one once the current one cancelled its share (the old one closes when its streams are done). */
  private open(): Session {
    const cur = this.current;
    if (!cur || cur.s.closed || cur.s.destroyed || cur.cancels >= CANCELS_PER_SESSION) {
      if (cur) this.retire(cur);
      const s: Session = { s: connect(this.url, { ca: this.ca }), inflight: 0, cancels: 0, retired: false };
      s.s.on('error', () => undefined);
      this.all.add(s);
      this.current = s;
    }
    return this.current!;
  }

  private retire(s: Session): void {
    s.retired = true;
    if (s.inflight === 0) {
      s.s.close();
      this.all.delete(s);
    }
  }

  async request(method: string, path: string, o: H2Options = {}): Promise<H2Answer> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, path, o);
      } catch (e) {
        // a stream the server refused (or a session that went away before it was sent) was never processed: send it again
        const code = (e as { code?: string }).code;
        const unsent = code === 'ERR_HTTP2_GOAWAY_SESSION' || code === 'ERR_HTTP2_INVALID_SESSION' || /REFUSED_STREAM/.test(String((e as Error).message));
        if (!unsent || attempt >= 3) throw e;
        if (this.current) this.retire(this.current);
        this.current = undefined;
      }
    }
  }

  private once(method: string, path: string, o: H2Options): Promise<H2Answer> {
    const headers: Record<string, string> = { ':method': method, ':path': path, authorization: `Bearer ${this.token}`, accept: 'application/json' };
    let payload: Buffer | undefined;
    if (o.body !== undefined) {
      payload = Buffer.isBuffer(o.body) ? o.body : Buffer.from(typeof o.body === 'string' ? o.body : JSON.stringify(o.body));
      headers['content-type'] = o.contentType ?? 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const sess = this.open();
    sess.inflight++;
    const settled = (): void => {
      sess.inflight--;
      if (sess.retired) this.retire(sess);
    };
    return new Promise<H2Answer>((resolve, reject) => {
      const stream = sess.s.request(headers, { endStream: payload === undefined });
      let status = 0;
      const chunks: Buffer[] = [];
      let size = 0;
      let done = false;
      let quiet: NodeJS.Timeout | undefined;
      const finish = (cut: boolean): void => {
        if (done) return;
        done = true;
        clearTimeout(stuck);
        clearTimeout(quiet);
        settled();
        const body = Buffer.concat(chunks);
        let json: unknown;
        const text = body.toString('utf8');
        const nl = text.indexOf('\n');
        const line = cut && nl >= 0 ? text.slice(0, nl) : text;
        try {
          json = line ? JSON.parse(line) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status, body, json, cut });
      };
      const stuck = setTimeout(() => {
        status = 0;
        stream.close(constants.NGHTTP2_CANCEL);
        finish(false);
      }, STUCK_MS);
      // (a body's first bytes may be delivered before the 'response' event: cut only once both are here)
      let enough = false;
      const cut = (): void => {
        sess.cancels++;
        stream.close(constants.NGHTTP2_CANCEL);
        finish(true);
      };
      stream.on('response', (h) => {
        status = Number(h[':status']);
        if (enough) cut();
        else if (o.firstLine) quiet = setTimeout(cut, FIRST_LINE_MS);
      });
      stream.on('data', (c: Buffer) => {
        if (enough) return;
        chunks.push(c);
        size += c.length;
        if ((o.firstLine && c.includes(10)) || size > 4 << 20) {
          enough = true;
          if (status !== 0) cut();
        }
      });
      stream.on('end', () => finish(false));
      stream.on('close', () => finish(false));
      stream.on('error', (e) => {
        if (done) return;
        done = true;
        clearTimeout(stuck);
        clearTimeout(quiet);
        settled();
        reject(e);
      });
      if (payload !== undefined) stream.end(payload);
    });
  }

  close(): void {
    for (const s of this.all) s.s.close();
    this.all.clear();
    this.current = undefined;
  }
}

/** Runs `tasks` with at most `limit` in flight; results in the tasks' order. */
export async function pool<T>(tasks: readonly (() => Promise<T>)[], limit: number): Promise<T[]> {
  const out = new Array<T>(tasks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return out;
}

/** A fixed-width text table (for mismatch reports). */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.min(110, Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length))));
  const line = (r: readonly string[]) => r.map((c, i) => (c.length > widths[i]! ? `${c.slice(0, widths[i]! - 1)}…` : c.padEnd(widths[i]!))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
