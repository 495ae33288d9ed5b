/**
 * The gRPC listener (--grpc-port): svc.api.v1.Resources over the same request chain as the HTTPS API,
 * grpc.health.v1.Health and server reflection. TLS is ours, not grpc-js's, so that the handshake is
 * the HTTPS listener's (serving certificate, the same client CA bundles, client certificates asked
 * for but optional, HTTP/2 only by ALPN) and a call's verified certificate reaches the same
 * authenticators; the decrypted connections are handed to grpc-js. Each connection may hold a bounded
 * number of calls at once; one more is answered RESOURCE_EXHAUSTED.
 */
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import {
  type ConnectionInjector,
  Server,
  ServerCredentials,
  type ServiceDefinition,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { errors } from '../api/status.js';
import type { Health } from '../health/health.js';
import type { Handler } from '../server/chain.js';
import { peerOfSocket } from '../server/http.js';
import { READ_HEADER_TIMEOUT_MS } from '../server/listener.js';
import { unaryHandler, watchHandler } from './adapter.js';
import { healthService } from './health.js';
import { HEALTH_SERVICE, packageDefinition, RESOURCES_SERVICE, UNARY_METHODS, type UnaryMethod } from './proto.js';
import { statusError } from './status.js';

/** Room in a Request message beyond its body (ref, options, media types). */
const REQUEST_OVERHEAD_BYTES = 64 * 1024;

export interface GrpcServerOptions {
  tls: { cert: string; key: string; clientCA?: string };
  chain: Handler;
  health: Health;
  /** The HTTP API's body limit: larger bodies are RESOURCE_EXHAUSTED (413). */
  maxRequestBodyBytes: number;
  /** Calls one connection may have open at once (watches included). */
  maxStreamsPerConnection: number;
}

type AnyCall = ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown>;

/** The Resources service with WatchEvent messages written as the bytes the watch framed. */
function resourcesDefinition(): ServiceDefinition {
  const def = { ...(packageDefinition[RESOURCES_SERVICE] as unknown as ServiceDefinition) };
  def.Watch = { ...def.Watch!, responseSerialize: (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength) };
  return def;
}

export class GrpcServer {
  private readonly server: Server;
  private readonly tls: TlsServer;
  private readonly injector: ConnectionInjector;
  /** Live connections by the peer address grpc-js reports for a call ("addr:port"). */
  private readonly connections = new Map<string, TLSSocket>();
  private readonly open = new WeakMap<TLSSocket, number>();

  constructor(private readonly o: GrpcServerOptions) {
    this.server = new Server({
      'grpc.max_receive_message_length': o.maxRequestBodyBytes + REQUEST_OVERHEAD_BYTES,
      'grpc.max_send_message_length': -1,
      // per-call channelz bookkeeping costs CPU on every call and nothing here reads it
      'grpc.enable_channelz': 0,
    });
    const peerOf = (call: { getPeer(): string }) => {
      const sock = this.connections.get(call.getPeer());
      return sock && peerOfSocket(sock);
    };
    const impl: UntypedServiceImplementation = {};
    for (const m of Object.keys(UNARY_METHODS) as UnaryMethod[]) impl[m] = this.limited(unaryHandler(o.chain, m, peerOf) as never);
    impl.Watch = this.limited(watchHandler(o.chain, peerOf) as never);
    this.server.addService(resourcesDefinition(), impl);
    this.server.addService(packageDefinition[HEALTH_SERVICE] as unknown as ServiceDefinition, healthService(o.health));
    new ReflectionService(packageDefinition).addToServer(this.server);
    this.injector = this.server.createConnectionInjector(ServerCredentials.createInsecure());
    this.tls = createTlsServer({
      cert: o.tls.cert,
      key: o.tls.key,
      ALPNProtocols: ['h2'],
      handshakeTimeout: READ_HEADER_TIMEOUT_MS,
      ...(o.tls.clientCA ? { ca: o.tls.clientCA, requestCert: true, rejectUnauthorized: false } : {}),
    });
    this.tls.on('secureConnection', (sock: TLSSocket) => this.accept(sock));
    this.tls.on('tlsClientError', (_err: Error, sock: TLSSocket) => sock.destroy());
  }

  private accept(sock: TLSSocket): void {
    // gRPC is HTTP/2 only
    if (sock.alpnProtocol !== 'h2') return void sock.destroy();
    sock.setNoDelay(true);
    const key = `${sock.remoteAddress}:${sock.remotePort}`;
    this.connections.set(key, sock);
    sock.once('close', () => this.connections.delete(key));
    this.injector.injectConnection(sock);
  }

  /** Wraps a handler with the per-connection cap on open calls. */
  private limited(handler: (call: AnyCall, cb?: sendUnaryData<unknown>) => void): (call: AnyCall, cb?: sendUnaryData<unknown>) => void {
    const cap = this.o.maxStreamsPerConnection;
    return (call, cb) => {
      const sock = this.connections.get(call.getPeer());
      if (!sock) return handler(call, cb);
      const n = this.open.get(sock) ?? 0;
      if (n >= cap) {
        const err = statusError(errors.tooManyRequests(`too many concurrent calls on this connection (limit ${cap})`, 1).status);
        if (cb) return cb(err);
        return void call.emit('error', err);
      }
      this.open.set(sock, n + 1);
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        this.open.set(sock, (this.open.get(sock) ?? 1) - 1);
      };
      call.once('cancelled', release);
      if (cb) {
        return handler(call, (err, value, trailer, flags) => {
          release();
          cb(err, value, trailer, flags);
        });
      }
      for (const ev of ['finish', 'close', 'error']) call.once(ev, release);
      handler(call);
    };
  }

  /**
   * New serving certificate or trusted client CAs: TLS is terminated here (node:tls, connections then
   * handed to grpc-js), so the new context serves every connection made from now on.
   */
  setTls(t: GrpcServerOptions['tls']): void {
    this.tls.setSecureContext({ cert: t.cert, key: t.key, ...(t.clientCA ? { ca: t.clientCA } : {}) });
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.tls.once('error', reject);
      this.tls.listen(port, host, () => {
        this.tls.off('error', reject);
        resolve();
      });
    });
  }

  get port(): number {
    return (this.tls.address() as AddressInfo).port;
  }

  /** Stops accepting, ends the calls, closes every connection. */
  async close(): Promise<void> {
    const closed = new Promise<void>((r) => this.tls.close(() => r()));
    this.injector.drain(1000);
    this.server.forceShutdown();
    for (const sock of this.connections.values()) sock.destroy();
    await closed;
  }
}
