/**
 * A small extension API server for aggregation tests: real HTTPS on loopback serving the group
 * wardle.example.com/v1alpha1 with one namespaced kind, Flunder (discovery, legacy and aggregated;
 * get, list, create, watch; a Table when asked; OpenAPI v2 and v3). As a real extension server does,
 * it trusts only requests carrying a client certificate from the proxy CA (with an allowed name) and
 * takes the user from the X-Remote-* headers, which it records. Its behaviour can be switched to the
 * failures the aggregator must survive: slow (never answers), garbage (bytes that are not HTTP), cut
 * (a watch closed mid-stream); stop() and start() take it down and bring it back on the same port.
 * A request to switch protocols on a path ending in /echo is switched and echoed (upgrade()).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { KeyPair } from './pki.js';

export const WARDLE_GROUP = 'wardle.example.com';
export const WARDLE_VERSION = 'v1alpha1';
const GV = `${WARDLE_GROUP}/${WARDLE_VERSION}`;

export interface SeenIdentity {
  /** Headers that must never reach an extension (the caller's credentials, impersonation requests). */
  leaked?: string[];
  user: string;
  groups: string[];
  extra: Record<string, string[]>;
  clientCN: string;
  path: string;
}

export type ExtensionMode = 'ok' | 'slow' | 'garbage' | 'cut';

/**
 * How it answers /apis asked for aggregated discovery: apidiscovery v2 (today's servers), v2beta1
 * only (servers of 1.26-1.29), not at all (older servers: the legacy APIGroupList), or 503 (a
 * server whose discovery is not ready).
 */
export type DiscoveryForm = 'v2' | 'v2beta1' | 'legacy' | 'unavailable';

/**
 * The aggregated discovery of its group version. It says more than the legacy list can: the scale
 * subresource with its acceptedTypes, and a category (the legacy list here has neither).
 */
export function aggregatedResources(): Record<string, unknown>[] {
  const scale = { group: 'autoscaling', version: 'v1', kind: 'Scale' };
  return [
    {
      resource: 'flunders',
      responseKind: { group: WARDLE_GROUP, version: WARDLE_VERSION, kind: 'Flunder' },
      scope: 'Namespaced',
      singularResource: 'flunder',
      verbs: ['create', 'get', 'list', 'watch'],
      shortNames: ['fl'],
      categories: ['wardle-all'],
      subresources: [{ subresource: 'scale', responseKind: scale, acceptedTypes: [scale], verbs: ['get', 'patch', 'update'] }],
    },
  ];
}

export interface ExtensionOptions {
  serving: KeyPair;
  /** CA of the aggregator's client certificate. */
  proxyCA: string;
  allowedNames?: string[];
  port?: number;
}

interface Flunder {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; creationTimestamp: string };
  spec?: Record<string, unknown>;
}

const resources = [{ name: 'flunders', singularName: 'flunder', namespaced: true, kind: 'Flunder', verbs: ['create', 'get', 'list', 'watch'], shortNames: ['fl'] }];

const openApiV3 = {
  openapi: '3.0.0',
  info: { title: 'wardle', version: 'v1alpha1' },
  paths: {
    [`/apis/${GV}/namespaces/{namespace}/flunders/{name}`]: {
      get: {
        operationId: 'readWardleV1alpha1NamespacedFlunder',
        responses: { '200': { description: 'OK', content: { 'application/json': { schema: { $ref: '#/components/schemas/com.example.wardle.v1alpha1.Flunder' } } } } },
        'x-kubernetes-action': 'get',
        'x-kubernetes-group-version-kind': { group: WARDLE_GROUP, version: WARDLE_VERSION, kind: 'Flunder' },
      },
    },
  },
  components: {
    schemas: {
      'com.example.wardle.v1alpha1.Flunder': {
        type: 'object',
        description: 'A Flunder is a test kind served by the wardle extension server.',
        properties: {
          apiVersion: { type: 'string', description: 'APIVersion of the object.' },
          kind: { type: 'string', description: 'Kind of the object.' },
          metadata: { type: 'object', description: 'Standard object metadata.' },
          spec: { type: 'object', description: 'What the flunder refers to.', properties: { reference: { type: 'string', description: 'The name of another flunder this one refers to.' } } },
        },
        'x-kubernetes-group-version-kind': [{ group: WARDLE_GROUP, kind: 'Flunder', version: WARDLE_VERSION }],
      },
    },
  },
};

/**
 * Its v2 document: the flunder path, a path outside its group version (the aggregator leaves it out),
 * and a definition no path uses (left out too).
 */
export const openApiV2 = {
  swagger: '2.0',
  info: { title: 'wardle', version: 'v1alpha1' },
  paths: {
    [`/apis/${GV}/namespaces/{namespace}/flunders/{name}`]: {
      get: {
        operationId: 'readWardleV1alpha1NamespacedFlunder',
        produces: ['application/json'],
        responses: { '200': { description: 'OK', schema: { $ref: '#/definitions/com.example.wardle.v1alpha1.Flunder' } } },
        'x-kubernetes-action': 'get',
        'x-kubernetes-group-version-kind': { group: WARDLE_GROUP, version: WARDLE_VERSION, kind: 'Flunder' },
      },
      parameters: [{ name: 'name', in: 'path', required: true, type: 'string', uniqueItems: true, description: 'name of the Flunder' }],
    },
    '/version/': { get: { operationId: 'getWardleVersion', responses: { '200': { description: 'OK', schema: { $ref: '#/definitions/com.example.wardle.Info' } } } } },
  },
  definitions: {
    'com.example.wardle.v1alpha1.Flunder': openApiV3.components.schemas['com.example.wardle.v1alpha1.Flunder'],
    'com.example.wardle.Info': { type: 'object', properties: { version: { type: 'string' } } },
    'com.example.wardle.v1alpha1.Unused': { type: 'object' },
  },
};

export class ExtensionApiServer {
  private server: Server | undefined;
  port = 0;
  mode: ExtensionMode = 'ok';
  readonly seen: SeenIdentity[] = [];
  /** Requests refused for lacking a trusted client certificate. */
  refused = 0;
  /** Paths of requests held unanswered (slow) that the other side gave up on. */
  readonly abandoned: string[] = [];
  private rv = 1;
  private readonly flunders = new Map<string, Flunder>();
  private readonly watchers = new Set<{ ns: string; res: ServerResponse }>();
  /** A fixed body (bench): GET /apis/wardle.example.com/v1alpha1/namespaces/<ns>/flunders/fixed. */
  fixedBody = Buffer.from(JSON.stringify({ apiVersion: GV, kind: 'Flunder', metadata: { name: 'fixed', namespace: 'default' }, spec: { reference: 'x'.repeat(900) } }));

  constructor(private readonly o: ExtensionOptions) {}

  async start(): Promise<void> {
    const server = createServer({ cert: this.o.serving.cert, key: this.o.serving.key, ca: this.o.proxyCA, requestCert: true, rejectUnauthorized: false }, (req, res) => this.handle(req, res));
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
    // every connection, so that stop() ends them all: closeAllConnections() knows only those still in
    // HTTP, and close() waits for the rest (a refused switch left half-closed by its client hung a file)
    server.on('connection', (socket: Duplex) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.port ?? this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    for (const w of this.watchers) w.res.destroy();
    this.watchers.clear();
    for (const u of this.upgraded) u.destroy();
    for (const c of this.sockets) c.destroy();
    this.sockets.clear();
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }

  /**
   * A request to switch protocols: with a trusted client certificate, the caller is recorded as for
   * any request; a path ending in /echo switches (101, the protocol asked for) and then echoes every
   * byte back prefixed with `echo:`; any other path is refused with a plain 400, not switched.
   */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const sock = req.socket as TLSSocket;
    const cnRaw = sock.getPeerCertificate()?.subject?.CN ?? '';
    const cn = Array.isArray(cnRaw) ? cnRaw.join(',') : cnRaw;
    if (!sock.authorized || (this.o.allowedNames?.length && !this.o.allowedNames.includes(cn))) {
      this.refused++;
      return void socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    }
    const url = new URL(req.url ?? '/', 'https://x');
    const leaked = Object.keys(req.headers).filter((k) => k === 'authorization' || k.startsWith('impersonate-'));
    this.seen.push({ user: String(req.headers['x-remote-user'] ?? ''), groups: req.headersDistinct['x-remote-group'] ?? [], extra: {}, clientCN: cn, path: url.pathname, ...(leaked.length ? { leaked } : {}) });
    this.upgradeHeaders.push(req.headers);
    if (!url.pathname.endsWith('/echo')) return void socket.end('HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 16\r\nConnection: close\r\n\r\nno upgrade here\n');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${req.headers.upgrade}\r\nConnection: Upgrade\r\nX-Stream-Protocol-Version: echo.v1\r\n\r\n`);
    this.upgraded.add(socket);
    socket.on('close', () => this.upgraded.delete(socket));
    if (head.length) socket.write(Buffer.concat([Buffer.from('echo:'), head]));
    socket.on('data', (chunk: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), chunk])));
    socket.on('end', () => socket.end());
  }

  /** SHA-256 fingerprints of the client certificates of the requests it served, in order. */
  readonly clientFingerprints: string[] = [];
  /** How /apis answers a request for aggregated discovery. */
  discoveryForm: DiscoveryForm = 'v2';
  /** Its aggregated discovery resources (a test may change them, as a new build would). */
  aggregated: Record<string, unknown>[] = aggregatedResources();
  /** Requests for aggregated discovery answered 304 (the If-None-Match named the document served). */
  discoveryNotModified = 0;

  /** The v2 document it serves (a test may change it, as a new build of the extension would). */
  openApiV2: typeof openApiV2 = structuredClone(openApiV2);

  /** Connections switched by upgrade() and still open. */
  readonly upgraded = new Set<Duplex>();
  /** Every open connection (see start()). */
  private readonly sockets = new Set<Duplex>();
  /** Headers of each request to switch protocols that reached this server. */
  readonly upgradeHeaders: IncomingMessage['headers'][] = [];

  private send(res: ServerResponse, code: number, body: unknown, contentType = 'application/json'): void {
    const b = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    res.writeHead(code, { 'content-type': contentType, 'content-length': b.byteLength });
    res.end(b);
  }

  private status(res: ServerResponse, code: number, reason: string, message: string): void {
    this.send(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    if (this.mode === 'slow') {
      // never answers; counts the requests the other side gives up on
      res.on('close', () => this.abandoned.push(new URL(req.url ?? '/', 'https://x').pathname));
      return;
    }
    if (this.mode === 'garbage') {
      req.socket.end('this is not HTTP at all\r\n\r\n');
      return;
    }
    const sock = req.socket as TLSSocket;
    const cert = sock.getPeerCertificate();
    const cnRaw = cert?.subject?.CN ?? '';
    const cn = Array.isArray(cnRaw) ? cnRaw.join(',') : cnRaw;
    if (!sock.authorized || (this.o.allowedNames?.length && !this.o.allowedNames.includes(cn))) {
      this.refused++;
      return this.status(res, 401, 'Unauthorized', 'Unauthorized');
    }
    const url = new URL(req.url ?? '/', 'https://x');
    const extra: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (k.startsWith('x-remote-extra-')) extra[decodeURIComponent(k.slice('x-remote-extra-'.length))] = String(v).split(', ');
    }
    this.clientFingerprints.push(cert?.fingerprint256 ?? '');
    const groups = req.headersDistinct['x-remote-group'] ?? [];
    const leaked = Object.keys(req.headers).filter((k) => k === 'authorization' || k.startsWith('impersonate-'));
    this.seen.push({ user: String(req.headers['x-remote-user'] ?? ''), groups, extra, clientCN: cn, path: url.pathname, ...(leaked.length ? { leaked } : {}) });
    const accept = String(req.headers.accept ?? '');
    const path = url.pathname.replace(/\/$/, '');
    if (path === '/apis') {
      const form = this.discoveryForm;
      if (form === 'unavailable' && accept.includes('as=APIGroupDiscoveryList')) return this.status(res, 503, 'ServiceUnavailable', 'discovery is not ready');
      if (form !== 'legacy' && form !== 'unavailable' && accept.split(',').some((a) => a.includes('as=APIGroupDiscoveryList') && a.includes(`v=${form};`))) {
        const items = [{ metadata: { name: WARDLE_GROUP }, versions: [{ version: WARDLE_VERSION, resources: this.aggregated, freshness: 'Current' }] }];
        const body = Buffer.from(JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${form}`, metadata: {}, items }));
        const etag = `"${createHash('sha256').update(body).digest('hex')}"`;
        if (req.headers['if-none-match'] === etag) {
          this.discoveryNotModified++;
          res.writeHead(304, { etag });
          return void res.end();
        }
        res.setHeader('etag', etag);
        return this.send(res, 200, body, `application/json;g=apidiscovery.k8s.io;v=${form};as=APIGroupDiscoveryList`);
      }
      return this.send(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [{ name: WARDLE_GROUP, versions: [{ groupVersion: GV, version: WARDLE_VERSION }], preferredVersion: { groupVersion: GV, version: WARDLE_VERSION } }] });
    }
    if (path === `/apis/${WARDLE_GROUP}`) return this.send(res, 200, { kind: 'APIGroup', apiVersion: 'v1', name: WARDLE_GROUP, versions: [{ groupVersion: GV, version: WARDLE_VERSION }], preferredVersion: { groupVersion: GV, version: WARDLE_VERSION } });
    if (path === `/apis/${GV}`) return this.send(res, 200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: GV, resources });
    if (path === '/openapi/v3') return this.send(res, 200, { paths: { [`apis/${GV}`]: { serverRelativeURL: `/openapi/v3/apis/${GV}?hash=ABC` } } });
    if (path === `/openapi/v3/apis/${GV}`) return this.send(res, 200, openApiV3);
    if (path === '/openapi/v2') return this.send(res, 200, this.openApiV2);
    const m = /^\/apis\/wardle\.example\.com\/v1alpha1(?:\/namespaces\/([^/]+))?\/flunders(?:\/([^/]+))?$/.exec(path);
    if (!m) return this.status(res, 404, 'NotFound', 'the server could not find the requested resource');
    const [, ns = '', name] = m;
    if (req.method === 'POST' && ns && !name) return this.create(req, res, ns);
    if (req.method !== 'GET') return this.status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    if (name === 'fixed') return this.send(res, 200, this.fixedBody);
    if (name) {
      const f = this.flunders.get(`${ns}/${name}`);
      return f ? this.send(res, 200, f) : this.status(res, 404, 'NotFound', `flunders.${WARDLE_GROUP} "${name}" not found`);
    }
    const items = [...this.flunders.values()].filter((f) => !ns || f.metadata.namespace === ns);
    if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1') return this.watch(res, ns, items);
    if (accept.includes('as=Table')) {
      return this.send(res, 200, {
        kind: 'Table',
        apiVersion: 'meta.k8s.io/v1',
        metadata: { resourceVersion: String(this.rv) },
        columnDefinitions: [{ name: 'Name', type: 'string', format: 'name', description: 'Name' }, { name: 'Reference', type: 'string', description: 'Reference' }],
        rows: items.map((f) => ({ cells: [f.metadata.name, String(f.spec?.reference ?? '')], object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: f.metadata } })),
      });
    }
    return this.send(res, 200, { kind: 'FlunderList', apiVersion: GV, metadata: { resourceVersion: String(this.rv) }, items });
  }

  private create(req: IncomingMessage, res: ServerResponse, ns: string): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Partial<Flunder>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Partial<Flunder>;
      } catch {
        return this.status(res, 400, 'BadRequest', 'the body is not JSON');
      }
      const name = body.metadata?.name;
      if (!name) return this.status(res, 422, 'Invalid', 'metadata.name: Required value');
      if (this.flunders.has(`${ns}/${name}`)) return this.status(res, 409, 'AlreadyExists', `flunders.${WARDLE_GROUP} "${name}" already exists`);
      const f: Flunder = { apiVersion: GV, kind: 'Flunder', metadata: { name, namespace: ns, uid: randomUUID(), resourceVersion: String(++this.rv), creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }, spec: body.spec ?? {} };
      this.flunders.set(`${ns}/${name}`, f);
      for (const w of this.watchers) if (!w.ns || w.ns === ns) this.event(w.res, 'ADDED', f);
      this.send(res, 201, f);
    });
  }

  private event(res: ServerResponse, type: string, f: Flunder): void {
    res.write(`${JSON.stringify({ type, object: f })}\n`);
  }

  private watch(res: ServerResponse, ns: string, items: Flunder[]): void {
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    for (const f of items) this.event(res, 'ADDED', f);
    if (this.mode === 'cut') {
      // one event, then the connection goes away mid-stream
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    }
    const w = { ns, res };
    this.watchers.add(w);
    res.on('close', () => this.watchers.delete(w));
  }
}
