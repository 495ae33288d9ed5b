/**
 * A real authorization webhook for tests: HTTPS on loopback with its own generated CA, requiring a
 * client certificate from that CA (the API server's credentials in the kubeconfig it writes). It
 * records every SubjectAccessReview it receives and answers with what the test's `answer` function
 * returns: a status, garbage bytes, an HTTP error, a delay, or no answer at all (hang).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { ensureGeneratedTls, issueClientCert } from '../../core/server/certs.js';
import { tmp } from './fixtures.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Review = any;

export type WebhookAnswer =
  | { status: { allowed?: unknown; denied?: unknown; reason?: unknown; evaluationError?: unknown }; apiVersion?: string; kind?: string }
  | { raw: string; code?: number }
  | { hang: true }
  | { delayMs: number; then: WebhookAnswer };

export interface ReceivedReview {
  body: Review;
  /** CN of the client certificate the API server presented. */
  peer: string;
  authorization: string | undefined;
}

let tlsDir: string | undefined;
/** One CA and serving certificate per test process (key generation is the slow part). */
function webhookTls(): string {
  if (!tlsDir) {
    tlsDir = tmp('svc-webhook-tls-');
    ensureGeneratedTls(tlsDir, '127.0.0.1', 0);
    const client = issueClientCert(tlsDir, 'svc-apiserver-client', []);
    writeFileSync(join(tlsDir, 'client.crt'), client.cert);
    writeFileSync(join(tlsDir, 'client.key'), client.key);
  }
  return tlsDir;
}

export class AuthzWebhook {
  readonly received: ReceivedReview[] = [];
  answer: (review: Review) => WebhookAnswer = () => ({ status: { allowed: true } });
  private readonly sockets = new Set<Socket>();
  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly dir: string,
  ) {}

  static async start(path = '/authorize'): Promise<AuthzWebhook> {
    const tls = webhookTls();
    const f = (n: string) => readFileSync(join(tls, n), 'utf8');
    let self: AuthzWebhook | undefined;
    const server = createServer({ cert: f('apiserver.crt'), key: f('apiserver.key'), ca: f('ca.crt'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Review;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        const peer = (req.socket as TLSSocket).getPeerCertificate()?.subject?.CN ?? '';
        self!.received.push({ body, peer: String(peer), authorization: req.headers.authorization });
        const send = (a: WebhookAnswer): void => {
          if ('hang' in a) return;
          if ('delayMs' in a) return void setTimeout(() => send(a.then), a.delayMs);
          if ('raw' in a) {
            res.writeHead(a.code ?? 200, { 'content-type': 'application/json' });
            return void res.end(a.raw);
          }
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ apiVersion: body?.apiVersion, kind: 'SubjectAccessReview', ...a }));
        };
        send(self!.answer(body));
      });
    });
    server.on('secureConnection', (s: Socket) => {
      self?.sockets.add(s);
      s.on('close', () => self?.sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const dir = tmp('svc-webhook-cfg-');
    self = new AuthzWebhook(server, `https://127.0.0.1:${port}${path}`, dir);
    return self;
  }

  /**
   * Writes a kubeconfig for this webhook: the CA inline, the client certificate and key as files
   * next to it (relative paths, resolved against the kubeconfig's directory), a bearer token.
   */
  kubeconfig(name = 'webhook.kubeconfig'): string {
    const tls = webhookTls();
    writeFileSync(join(this.dir, 'client.crt'), readFileSync(join(tls, 'client.crt')));
    writeFileSync(join(this.dir, 'client.key'), readFileSync(join(tls, 'client.key')));
    const ca = Buffer.from(readFileSync(join(tls, 'ca.crt'))).toString('base64');
    const path = join(this.dir, name);
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: authz',
        '  cluster:',
        `    server: ${this.url}`,
        `    certificate-authority-data: ${ca}`,
        'users:',
        '- name: apiserver',
        '  user:',
        '    client-certificate: client.crt',
        '    client-key: client.key',
        '    token: webhook-secret-token',
        'contexts:',
        '- name: authz',
        '  context:',
        '    cluster: authz',
        '    user: apiserver',
        'current-context: authz',
        '',
      ].join('\n'),
    );
    return path;
  }

  /** Reviews received so far. */
  get count(): number {
    return this.received.length;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Resolves once `check` holds, polling; fails after `limitMs` (a bound, not an assertion about speed). */
export async function eventually(check: () => boolean | Promise<boolean>, limitMs = 15_000): Promise<void> {
  const until = Date.now() + limitMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
