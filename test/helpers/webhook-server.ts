/**
 * A TokenReview webhook for the authentication-webhook tests: HTTPS on loopback with the shared test
 * CA, requiring a client certificate (so the kubeconfig's credentials are exercised), answering each
 * review from a token table, or on purpose badly (garbage, 500, hanging). Records every review.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { sharedLoopbackPki } from './pki.js';

export type WebhookMode = 'answer' | 'garbage' | 'error500' | 'hang' | 'wrong-kind';

export interface ReviewUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export class TestWebhook {
  mode: WebhookMode = 'answer';
  /** Tokens the webhook vouches for. */
  readonly users = new Map<string, ReviewUser>();
  /** status.audiences to answer for a token. */
  readonly audiences = new Map<string, string[]>();
  /** Tokens it reports an error for (status.error, authenticated false). */
  readonly errors = new Map<string, string>();
  /** Every review received (parsed bodies), with the client certificate's CN. */
  readonly reviews: { body: Record<string, unknown>; clientCN: string | undefined }[] = [];
  url = '';
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  readonly client = sharedLoopbackPki().ca.issue({ cn: 'svc-apiserver', client: true });

  static async start(): Promise<TestWebhook> {
    const w = new TestWebhook();
    const { ca, serving } = sharedLoopbackPki();
    w.server = createServer({ cert: serving.cert, key: serving.key, ca: ca.cert, requestCert: true, rejectUnauthorized: true }, (req, res) => w.handle(req, res));
    w.server.on('connection', (s: Socket) => {
      w.sockets.add(s);
      s.on('close', () => w.sockets.delete(s));
    });
    await new Promise<void>((r) => w.server.listen(0, '127.0.0.1', r));
    w.url = `https://127.0.0.1:${(w.server.address() as { port: number }).port}/authenticate`;
    return w;
  }

  /** Writes a kubeconfig for this webhook (files referenced relative to it) and returns its path. */
  kubeconfig(dir: string, name = 'webhook.kubeconfig', server = this.url): string {
    const { ca } = sharedLoopbackPki();
    writeFileSync(join(dir, 'webhook-ca.crt'), ca.cert);
    writeFileSync(join(dir, 'webhook-client.crt'), this.client.cert);
    writeFileSync(join(dir, 'webhook-client.key'), this.client.key);
    const path = join(dir, name);
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: authn',
        '  cluster:',
        '    certificate-authority: webhook-ca.crt',
        `    server: ${server}`,
        'users:',
        '- name: apiserver',
        '  user:',
        '    client-certificate: webhook-client.crt',
        '    client-key: webhook-client.key',
        'contexts:',
        '- name: webhook',
        '  context: {cluster: authn, user: apiserver}',
        'current-context: webhook',
        '',
      ].join('\n'),
    );
    return path;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      const cert = (req.socket as TLSSocket).getPeerCertificate();
      this.reviews.push({ body, clientCN: cert?.subject?.CN as string | undefined });
      const send = (code: number, text: string) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(text);
      };
      switch (this.mode) {
        case 'hang':
          return;
        case 'garbage':
          return send(200, '<html>not json</html>');
        case 'error500':
          return send(500, '{"kind":"Status","status":"Failure","code":500}');
        case 'wrong-kind':
          return send(200, JSON.stringify({ apiVersion: body.apiVersion, kind: 'SubjectAccessReview', status: { authenticated: true, user: { username: 'x' } } }));
      }
      const token = (body.spec as { token?: string } | undefined)?.token ?? '';
      const user = this.users.get(token);
      const error = this.errors.get(token);
      const status = user ? { authenticated: true, user, ...(this.audiences.has(token) ? { audiences: this.audiences.get(token) } : {}) } : error ? { authenticated: false, error } : { authenticated: false };
      send(200, JSON.stringify({ apiVersion: body.apiVersion, kind: 'TokenReview', status }));
    });
  }
}
