/**
 * An admission webhook server for the tests: HTTPS on loopback with the shared test CA, one behaviour
 * per path, each answering AdmissionReviews (or breaking them on purpose), recording every review.
 *
 *   /allow /deny /deny-code /mutate-label /warn /annotate /hang /garbage /wrong-uid /no-response
 *   /huge /redirect /error500 /bad-patch /patch-breaks-schema /patch-status /echo-v1beta1
 */
import { createServer, type Server } from 'node:https';
import { createSecureServer } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { sharedLoopbackPki } from './pki.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

export interface RecordedReview {
  path: string;
  query: string;
  body: Obj;
  /** The Authorization header and the client certificate's CN the call came with. */
  authorization: string | undefined;
  clientCN: string | undefined;
  /** '1.1', or '2.0' when the call came over HTTP/2. */
  httpVersion: string;
}

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64');

export class AdmissionWebhookServer {
  readonly reviews: RecordedReview[] = [];
  base = '';
  /** Extra behaviours by path, added by a test. */
  readonly handlers = new Map<string, (review: Obj) => Obj>();
  private server!: Server | ReturnType<typeof createSecureServer>;
  private readonly sockets = new Set<Socket>();

  /** `http2`: the server offers HTTP/2 by ALPN (and HTTP/1.1), as Go's webhook servers do. */
  static async start(o: { http2?: boolean } = {}): Promise<AdmissionWebhookServer> {
    const w = new AdmissionWebhookServer();
    const { serving } = sharedLoopbackPki();
    const tls = { cert: serving.cert, key: serving.key, ca: sharedLoopbackPki().ca.cert, requestCert: true, rejectUnauthorized: false };
    w.server = o.http2
      ? createSecureServer({ ...tls, allowHTTP1: true }, (req, res) => w.handle(req as unknown as IncomingMessage, res as unknown as ServerResponse))
      : createServer(tls, (req, res) => w.handle(req, res));
    w.server.on('connection', (s: Socket) => {
      w.sockets.add(s);
      s.on('close', () => w.sockets.delete(s));
    });
    await new Promise<void>((r) => w.server.listen(0, '127.0.0.1', r));
    w.base = `https://127.0.0.1:${(w.server.address() as { port: number }).port}`;
    return w;
  }

  /** The CA bundle (base64 PEM) a webhook configuration names for this server. */
  static caBundle(): string {
    return Buffer.from(sharedLoopbackPki().ca.cert).toString('base64');
  }

  url(path: string): string {
    return `${this.base}${path}`;
  }

  /** Reviews received on a path. */
  on(path: string): Obj[] {
    return this.reviews.filter((r) => r.path === path).map((r) => r.body);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'https://x');
      let review: Obj = {};
      try {
        review = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      } catch {
        review = {};
      }
      const cert = (req.socket as TLSSocket).getPeerCertificate();
      this.reviews.push({ path: u.pathname, query: u.search, body: review, authorization: req.headers.authorization, clientCN: (cert?.subject?.CN as string | undefined) || undefined, httpVersion: req.httpVersion });
      const uid = review.request?.uid;
      const answer = (response: Obj, apiVersion = review.apiVersion ?? 'admission.k8s.io/v1'): void => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ apiVersion, kind: 'AdmissionReview', response: { uid, ...response } }));
      };
      const custom = this.handlers.get(u.pathname);
      if (custom) return answer(custom(review));
      switch (u.pathname) {
        case '/allow':
          return answer({ allowed: true });
        case '/deny':
          return answer({ allowed: false, status: { message: 'this object is not welcome', reason: 'Forbidden', code: 403 } });
        case '/deny-code':
          return answer({ allowed: false, status: { code: 200 } });
        case '/mutate-label': {
          const labels = review.request?.object?.metadata?.labels;
          const patch = labels ? [{ op: 'add', path: '/metadata/labels/mutated', value: 'yes' }] : [{ op: 'add', path: '/metadata/labels', value: { mutated: 'yes' } }];
          return answer({ allowed: true, patchType: 'JSONPatch', patch: b64(patch) });
        }
        case '/warn':
          return answer({ allowed: true, warnings: ['first warning', 'second warning'] });
        case '/annotate':
          return answer({ allowed: true, auditAnnotations: { decision: 'looked-at-it' } });
        case '/hang':
          return; // never answers
        case '/garbage':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end('<html>not json</html>');
        case '/wrong-uid':
          return answer({ uid: 'not-the-uid', allowed: true });
        case '/no-response':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }));
        case '/wrong-kind':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'TokenReview', response: { uid, allowed: true } }));
        case '/huge':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true, warnings: ['x'.repeat(6 * 1024 * 1024)] } }));
        case '/redirect':
          res.writeHead(307, { location: `${this.base}/allow` });
          return res.end();
        case '/error500':
          res.writeHead(500, { 'content-type': 'text/plain' });
          return res.end('boom');
        case '/bad-patch':
          return answer({ allowed: true, patchType: 'JSONPatch', patch: b64([{ op: 'remove', path: '/no/such/field' }]) });
        case '/patch-breaks-schema':
          return answer({ allowed: true, patchType: 'JSONPatch', patch: b64([{ op: 'add', path: '/data', value: 'not-a-map' }]) });
        case '/patch-status':
          return answer({ allowed: true, patch: b64([{ op: 'add', path: '/metadata/labels', value: { x: 'y' } }]) });
        default:
          res.writeHead(404);
          return res.end();
      }
    });
  }
}

/** A webhook entry of a configuration, with what tests usually leave to defaults. */
export function webhookEntry(name: string, url: string, more: Obj = {}): Obj {
  return {
    name,
    clientConfig: { url, caBundle: AdmissionWebhookServer.caBundle() },
    rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    ...more,
  };
}
