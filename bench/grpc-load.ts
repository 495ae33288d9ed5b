/**
 * A lean gRPC load generator for the benchmark, the counterpart of autocannon for HTTPS: unary calls
 * over node:http2 sessions with the request message framed once up front and answers only checked
 * for grpc-status, so the figure is the server's rather than a client library's.
 */
import { connect, type ClientHttp2Session, constants } from 'node:http2';
import { performance } from 'node:perf_hooks';
import type { LoadResult } from './lib.js';

export interface GrpcLoadOptions {
  /** https://host:port of --grpc-port (or of the HTTPS port, with `plainGet`). */
  url: string;
  ca: string;
  /** /package.Service/Method (or the HTTP path, with `plainGet`). */
  path: string;
  /** The serialized request message. */
  message: Uint8Array;
  token: string;
  /** A plain HTTP/2 GET with this Accept instead of a gRPC call: the same client on the HTTPS API. */
  plainGet?: string;
  connections: number;
  /** Calls in flight on each connection. */
  streamsPerConnection: number;
  seconds: number;
}

/** Receive windows as gRPC clients set them (grpc-node.flow_control_window): answers are not held back by the 64 KiB default. */
export const STREAM_WINDOW = 1 << 20;
export const CONNECTION_WINDOW = 32 << 20;

const percentile = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0);

/** The 5-byte gRPC message prefix (uncompressed, length) and the message. */
export function grpcFrame(message: Uint8Array): Buffer {
  const b = Buffer.alloc(5 + message.byteLength);
  b.writeUInt32BE(message.byteLength, 1);
  b.set(message, 5);
  return b;
}

function plainGet(session: ClientHttp2Session, o: GrpcLoadOptions): Promise<boolean> {
  return new Promise((resolve) => {
    const stream = session.request({ [constants.HTTP2_HEADER_PATH]: o.path, accept: o.plainGet!, authorization: `Bearer ${o.token}` });
    let ok = false;
    stream.on('response', (h) => (ok = h[':status'] === 200));
    stream.on('data', () => undefined);
    stream.on('close', () => resolve(ok));
    stream.on('error', () => resolve(false));
  });
}

function call(session: ClientHttp2Session, o: GrpcLoadOptions, frame: Buffer): Promise<boolean> {
  if (o.plainGet) return plainGet(session, o);
  return new Promise((resolve) => {
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: o.path,
      'content-type': 'application/grpc',
      te: 'trailers',
      authorization: `Bearer ${o.token}`,
    });
    let ok = false;
    stream.on('response', (h) => {
      // a trailers-only answer carries grpc-status in the headers
      if (h['grpc-status'] !== undefined) ok = h['grpc-status'] === '0';
    });
    stream.on('trailers', (h) => (ok = h['grpc-status'] === '0'));
    stream.on('data', () => undefined);
    stream.on('close', () => resolve(ok));
    stream.on('error', () => resolve(false));
    stream.end(frame);
  });
}

export async function grpcLoad(o: GrpcLoadOptions): Promise<LoadResult> {
  const frame = grpcFrame(o.message);
  const sessions = await Promise.all(
    Array.from({ length: o.connections }, () => new Promise<ClientHttp2Session>((resolve, reject) => {
      const s = connect(o.url, { ca: o.ca, servername: 'localhost', settings: { initialWindowSize: STREAM_WINDOW } });
      s.once('connect', () => s.setLocalWindowSize(CONNECTION_WINDOW));
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    })),
  );
  const latencies: number[] = [];
  let errors = 0;
  const until = performance.now() + o.seconds * 1000;
  const worker = async (session: ClientHttp2Session) => {
    while (performance.now() < until) {
      const t0 = performance.now();
      if (await call(session, o, frame)) latencies.push(performance.now() - t0);
      else errors++;
    }
  };
  await Promise.all(sessions.flatMap((s) => Array.from({ length: o.streamsPerConnection }, () => worker(s))));
  for (const s of sessions) s.close();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / o.seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), errors, non2xx: 0 };
}
