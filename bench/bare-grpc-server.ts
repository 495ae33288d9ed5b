/**
 * The gRPC baseline: a bare @grpc/grpc-js server whose one unary method (the path of Resources/Get)
 * answers fixed bytes of the size of a CSIDriver's answer, with no API work at all: what grpc-js and
 * Node's HTTP/2 cost per call on this machine, the ceiling of any gRPC figure. Same TLS setup as the
 * API server. Run as its own process by bench/lib.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { RESOURCES_SERVICE } from '../core/grpc/proto.js';

const [dir, port] = process.argv.slice(2) as [string, string];
const answer = Buffer.alloc(800, 0x78);
const bytes = (b: Buffer): Buffer => b;
const server = new grpc.Server();
server.addService(
  { Get: { path: `/${RESOURCES_SERVICE}/Get`, requestStream: false, responseStream: false, requestSerialize: bytes, requestDeserialize: bytes, responseSerialize: bytes, responseDeserialize: bytes } },
  { Get: (_call: unknown, done: grpc.sendUnaryData<Buffer>) => done(null, answer) },
);
const credentials = grpc.ServerCredentials.createSsl(null, [{ private_key: readFileSync(join(dir, 'apiserver.key')), cert_chain: readFileSync(join(dir, 'apiserver.crt')) }]);
server.bindAsync(`127.0.0.1:${port}`, credentials, (err) => {
  if (err) throw err;
  console.log('serving on bare grpc');
});
