/**
 * A small typed client of the gRPC resource API for internal components: connect with a
 * kubeconfig-like config (server address, CA, client certificate and key, or a token), then get,
 * list, create, update, patch, delete, deleteCollection and watch (an async iterator). Bodies are
 * decoded with the project's own serializers (protobuf envelope, JSON, CBOR), so a caller gets plain
 * objects whatever media type it asked for; errors carry the server's Status.
 */
import { readFileSync } from 'node:fs';
import { type CallOptions as GrpcCallOptions, Client, credentials, Metadata, type ServiceError, status as Code } from '@grpc/grpc-js';
import type { Status } from '../api/status.js';
import { protobufSerializer } from '../codec/protobuf-serializer.js';
import { isProtobufMediaType } from '../codec/protobuf.js';
import { bodySerializerFor } from '../codec/serializer.js';
import { methodOf, RESOURCES_SERVICE, type RequestMessage, type ResponseMessage, type UnaryMethod, type WatchEventMessage } from './proto.js';
import { STATUS_METADATA_KEY } from './status.js';
import { yamlLibrary } from '../codec/yaml-library.js';

export interface GrpcClientConfig {
  /** host:port of --grpc-port. */
  server: string;
  /** PEM of the CA that signed the serving certificate. */
  ca: string;
  token?: string;
  /** PEM client certificate and key (verified against --client-ca-file). */
  cert?: string;
  key?: string;
  /** The name the serving certificate is checked against, when not the server's host. */
  serverName?: string;
  /** Identity to act as (impersonation metadata). */
  impersonate?: { user: string; groups?: string[]; uid?: string; extra?: Record<string, string[]> };
}

/** A resource address; the core group is "". */
export interface Ref {
  group?: string;
  version: string;
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: string;
}

export interface CallOptions {
  /** HTTP query parameters (resourceVersion, limit, labelSelector, dryRun, ...). */
  options?: Record<string, string>;
  /** Default: protobuf where the kind has messages, else JSON. */
  accept?: string;
  /** Media type of the body (default application/json; for patch the patch type). */
  contentType?: string;
  /** gRPC deadline (Date or ms since epoch). */
  deadline?: Date | number;
  /** Extra metadata. */
  metadata?: Record<string, string | string[]>;
}

export interface Answer<T = Record<string, unknown>> {
  body: Buffer;
  contentType: string;
  warnings: string[];
  /** The body decoded with the serializer of its content type. */
  object: T;
}

export interface WatchEvent<T = Record<string, unknown>> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
  raw: Buffer;
  contentType: string;
}

/** A failed call: the gRPC code and, when the server sent one, its Status. */
export class GrpcStatusError extends Error {
  constructor(
    readonly code: Code,
    message: string,
    readonly status: Status | undefined,
  ) {
    super(message);
  }
}

/** A body decoded with the project's serializer for its media type. */
export function decodeBody<T = Record<string, unknown>>(contentType: string, body: Uint8Array): T {
  const s = bodySerializerFor(contentType.replace(/;stream=watch/, ''), { cbor: true });
  if (!s) throw new Error(`no serializer for ${contentType}`);
  return s.decodeBody(body).value as T;
}

function toStatusError(e: ServiceError): GrpcStatusError {
  const bin = e.metadata?.get(STATUS_METADATA_KEY)[0];
  let status: Status | undefined;
  if (bin) {
    try {
      status = protobufSerializer.decodeBody(bin as Buffer).value as Status;
    } catch {
      status = undefined;
    }
  }
  return new GrpcStatusError(e.code, e.details, status);
}

/** The body as bytes: objects are written as JSON, or in the protobuf envelope when the content type says so. */
function bodyBytes(body: unknown, contentType: string): Buffer {
  if (body === undefined) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (typeof body === 'string') return Buffer.from(body);
  if (isProtobufMediaType(contentType)) return Buffer.from(protobufSerializer.encodeValue(body as Record<string, unknown>, { pretty: false }));
  return Buffer.from(JSON.stringify(body));
}

const PATH = `/${RESOURCES_SERVICE}/`;

export class ResourceClient {
  private readonly client: Client;
  private readonly base = new Metadata();

  constructor(readonly config: GrpcClientConfig) {
    const creds = credentials.createSsl(Buffer.from(config.ca), config.key ? Buffer.from(config.key) : null, config.cert ? Buffer.from(config.cert) : null);
    // large receive windows: a busy watch connection is not throttled to 64 KiB per round trip
    const opts: Record<string, unknown> = { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1, 'grpc-node.flow_control_window': 8 << 20 };
    if (config.serverName) opts['grpc.ssl_target_name_override'] = config.serverName;
    this.client = new Client(config.server, creds, opts);
    if (config.token) this.base.set('authorization', `Bearer ${config.token}`);
    const imp = config.impersonate;
    if (imp) {
      this.base.set('impersonate-user', imp.user);
      for (const g of imp.groups ?? []) this.base.add('impersonate-group', g);
      if (imp.uid) this.base.set('impersonate-uid', imp.uid);
      for (const [k, vs] of Object.entries(imp.extra ?? {})) for (const v of vs) this.base.add(`impersonate-extra-${k}`, v);
    }
  }

  /**
   * From a kubeconfig (path or text): its current context's cluster CA and user credentials; the
   * server's host with `grpcPort` as the port.
   */
  static fromKubeconfig(pathOrText: string, grpcPort: number): ResourceClient {
    const text = pathOrText.includes('\n') ? pathOrText : readFileSync(pathOrText, 'utf8');
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const kc = yamlLibrary().parse(text) as any;
    const ctx = kc.contexts?.find((c: { name: string }) => c.name === kc['current-context'])?.context ?? kc.contexts?.[0]?.context;
    const cluster = kc.clusters?.find((c: { name: string }) => c.name === ctx?.cluster)?.cluster ?? kc.clusters?.[0]?.cluster;
    const user = kc.users?.find((u: { name: string }) => u.name === ctx?.user)?.user ?? kc.users?.[0]?.user ?? {};
    const data = (b64: string | undefined): string | undefined => (b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined);
    const url = new URL(cluster.server);
    return new ResourceClient({
      server: `${url.hostname}:${grpcPort}`,
      ca: data(cluster['certificate-authority-data']) ?? readFileSync(cluster['certificate-authority'], 'utf8'),
      cert: data(user['client-certificate-data']) ?? (user['client-certificate'] ? readFileSync(user['client-certificate'], 'utf8') : undefined),
      key: data(user['client-key-data']) ?? (user['client-key'] ? readFileSync(user['client-key'], 'utf8') : undefined),
      token: user.token,
    });
  }

  private request(ref: Ref, o: CallOptions, body?: unknown): RequestMessage {
    const contentType = o.contentType ?? (body === undefined ? '' : 'application/json');
    return {
      ref: { group: ref.group ?? '', version: ref.version, resource: ref.resource, namespace: ref.namespace ?? '', name: ref.name ?? '', subresource: ref.subresource ?? '' },
      options: o.options ?? {},
      body: bodyBytes(body, contentType),
      content_type: contentType,
      accept: o.accept ?? '',
    };
  }

  private metadataFor(o: CallOptions): Metadata {
    if (!o.metadata) return this.base;
    const md = this.base.clone();
    for (const [k, v] of Object.entries(o.metadata)) for (const x of Array.isArray(v) ? v : [v]) md.add(k, x);
    return md;
  }

  private callOptions(o: CallOptions): GrpcCallOptions {
    return o.deadline === undefined ? {} : { deadline: o.deadline };
  }

  /** One unary call with a raw Request (for callers that build their own). */
  callRaw(method: UnaryMethod, req: RequestMessage, o: CallOptions = {}): Promise<ResponseMessage> {
    const m = methodOf<RequestMessage, ResponseMessage>(RESOURCES_SERVICE, method);
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(PATH + method, m.requestSerialize, m.responseDeserialize, req, this.metadataFor(o), this.callOptions(o), (err, res) =>
        err ? reject(toStatusError(err)) : resolve(res!),
      );
    });
  }

  private async call<T>(method: UnaryMethod, ref: Ref, o: CallOptions, body?: unknown): Promise<Answer<T>> {
    const res = await this.callRaw(method, this.request(ref, o, body), o);
    return {
      body: res.body,
      contentType: res.content_type,
      warnings: res.warnings,
      get object() {
        return decodeBody<T>(res.content_type, res.body);
      },
    };
  }

  get<T = Record<string, unknown>>(ref: Ref, o: CallOptions = {}): Promise<Answer<T>> {
    return this.call('Get', ref, o);
  }
  list<T = Record<string, unknown>>(ref: Ref, o: CallOptions = {}): Promise<Answer<T>> {
    return this.call('List', ref, o);
  }
  create<T = Record<string, unknown>>(ref: Ref, body: unknown, o: CallOptions = {}): Promise<Answer<T>> {
    return this.call('Create', ref, o, body);
  }
  update<T = Record<string, unknown>>(ref: Ref, body: unknown, o: CallOptions = {}): Promise<Answer<T>> {
    return this.call('Update', ref, o, body);
  }
  /** `patchType`: application/json-patch+json, merge-patch+json, strategic-merge-patch+json or apply-patch+yaml. */
  patch<T = Record<string, unknown>>(ref: Ref, body: unknown, patchType: string, o: CallOptions = {}): Promise<Answer<T>> {
    return this.call('Patch', ref, { ...o, contentType: patchType }, body);
  }
  delete<T = Record<string, unknown>>(ref: Ref, o: CallOptions & { body?: unknown } = {}): Promise<Answer<T>> {
    return this.call('Delete', ref, o, o.body);
  }
  deleteCollection<T = Record<string, unknown>>(ref: Ref, o: CallOptions & { body?: unknown } = {}): Promise<Answer<T>> {
    return this.call('DeleteCollection', ref, o, o.body);
  }

  /**
   * A watch as an async iterator of decoded events; leaving the loop (or `signal`) cancels the call on
   * the server. A watch refused before it starts throws GrpcStatusError.
   */
  async *watch<T = Record<string, unknown>>(ref: Ref, o: CallOptions & { signal?: AbortSignal } = {}): AsyncGenerator<WatchEvent<T>> {
    const m = methodOf<RequestMessage, WatchEventMessage>(RESOURCES_SERVICE, 'Watch');
    const call = this.client.makeServerStreamRequest(PATH + 'Watch', m.requestSerialize, m.responseDeserialize, this.request(ref, o), this.metadataFor(o), this.callOptions(o));
    const abort = (): void => call.cancel();
    o.signal?.addEventListener('abort', abort, { once: true });
    try {
      for await (const ev of call as AsyncIterable<WatchEventMessage>) {
        // decoded when asked for: a component that only counts or forwards events pays nothing
        let object: T | undefined;
        yield {
          type: ev.type as WatchEvent['type'],
          raw: ev.object,
          contentType: ev.content_type,
          get object(): T {
            return (object ??= decodeBody<T>(ev.content_type, ev.object));
          },
        };
      }
    } catch (e) {
      const err = e as ServiceError;
      // a cancel we asked for is the end of the watch, not an error
      if (err.code === Code.CANCELLED && o.signal?.aborted) return;
      throw typeof err.code === 'number' ? toStatusError(err) : e;
    } finally {
      o.signal?.removeEventListener('abort', abort);
      call.cancel();
    }
  }

  /** Resolves once the connection is up (or rejects after `deadline`). */
  ready(deadline: Date | number = Date.now() + 10_000): Promise<void> {
    return new Promise((resolve, reject) => this.client.waitForReady(deadline, (err) => (err ? reject(err) : resolve())));
  }

  close(): void {
    this.client.close();
  }
}
