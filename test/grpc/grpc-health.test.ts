/**
 * grpc.health.v1.Health beside the resource API: SERVING exactly when /readyz answers 200 (Check and
 * Watch, for "" and svc.api.v1.Resources; other names are unknown), NOT_SERVING pushed to watchers
 * once shutdown makes /readyz fail; and server reflection lists the services and describes them.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { credentials, loadPackageDefinition, status as Code, type Client, type ClientReadableStream, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import t from 'tap';
import { packageDefinition } from '../../core/grpc/proto.js';
import { startSeeded } from '../helpers/fixtures.js';
import { startGrpcServer } from '../helpers/grpc.js';
import { waitFor } from '../helpers/wait.js';

type HealthClient = Client & {
  Check(req: { service: string }, cb: (err: { code: number } | null, res?: { status: string }) => void): void;
  Watch(req: { service: string }): ClientReadableStream<{ status: string }>;
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const pkg = (def: unknown, path: string): ServiceClientConstructor => path.split('.').reduce((o: any, k) => o[k], loadPackageDefinition(def as never));

t.test('health and reflection over gRPC', async (t) => {
  const s = await startGrpcServer(['--shutdown-delay-duration=2s']);
  let stopped = false;
  t.teardown(() => (stopped ? undefined : s.stop()));
  const creds = credentials.createSsl(Buffer.from(s.ca));
  const Health = pkg(packageDefinition, 'grpc.health.v1.Health');
  const health = new Health(`127.0.0.1:${s.grpcPort}`, creds) as unknown as HealthClient;
  t.teardown(() => health.close());
  const check = (service: string) => new Promise<{ code: number; status?: string }>((r) => health.Check({ service }, (err, res) => r({ code: err?.code ?? Code.OK, status: res?.status })));

  await t.test('Check is SERVING while /readyz is 200, for the server and for svc.api.v1.Resources', async (t) => {
    t.equal((await s.admin.get('/readyz')).status, 200);
    t.same(await check(''), { code: Code.OK, status: 'SERVING' });
    t.same(await check('svc.api.v1.Resources'), { code: Code.OK, status: 'SERVING' });
  });

  await t.test('Check of an unknown service is NOT_FOUND', async (t) => {
    t.equal((await check('no.such.Service')).code, Code.NOT_FOUND);
  });

  await t.test('server reflection lists the services and gives the file that defines Resources', async (t) => {
    const req = createRequire(import.meta.url);
    const reflectionProto = join(dirname(req.resolve('@grpc/reflection/package.json')), 'build/proto/grpc/reflection/v1/reflection.proto');
    const Reflection = pkg(loadSync(reflectionProto, { keepCase: true }), 'grpc.reflection.v1.ServerReflection');
    const client = new Reflection(`127.0.0.1:${s.grpcPort}`, creds) as unknown as Client & { ServerReflectionInfo(): NodeJS.ReadWriteStream };
    t.teardown(() => client.close());
    const ask = (q: Record<string, string>) =>
      new Promise<Record<string, any>>((resolve, reject) => { // eslint-disable-line @typescript-eslint/no-explicit-any
        const call = client.ServerReflectionInfo();
        call.once('data', (d) => {
          resolve(d);
          call.end();
        });
        call.once('error', reject);
        call.write(q as never);
      });
    const list = await ask({ list_services: '' });
    const names = list.list_services_response.service.map((x: { name: string }) => x.name);
    t.ok(names.includes('svc.api.v1.Resources'), 'svc.api.v1.Resources is listed');
    t.ok(names.includes('grpc.health.v1.Health'), 'grpc.health.v1.Health is listed');
    const file = await ask({ file_containing_symbol: 'svc.api.v1.Resources' });
    const protos: Buffer[] = file.file_descriptor_response.file_descriptor_proto;
    t.ok(protos.some((b) => b.toString('latin1').includes('svc.api.v1') && b.toString('latin1').includes('WatchEvent')), 'its file descriptor holds the service and its messages');
  });

  await t.test('Watch sends SERVING, then NOT_SERVING once shutdown makes /readyz fail', async (t) => {
    const seen: string[] = [];
    const w = health.Watch({ service: '' });
    w.on('data', (m) => seen.push(m.status));
    w.on('error', () => undefined);
    t.ok(await waitFor(() => seen.length === 1, 3000));
    t.same(seen, ['SERVING']);
    stopped = true;
    const stopping = s.stop();
    t.ok(await waitFor(() => seen.length === 2, 3000), 'a second status comes');
    t.same(seen, ['SERVING', 'NOT_SERVING']);
    w.cancel();
    await stopping;
  });
});

t.test('without --grpc-port no gRPC listener is opened (the default is off)', async (t) => {
  const s = await startSeeded();
  t.teardown(() => s.stop());
  t.equal(s.server.grpcPort, undefined);
  t.equal(s.server.opts.grpcPort, 0);
});
