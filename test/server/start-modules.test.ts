/**
 * What a start loads: the server's modules bring in no etcd client, no gRPC stack and no certificate
 * library until a flag or a missing certificate asks for them (etcd3 with grpc-js and its proto files
 * took about half a second of every start on the embedded store; the ASN.1 libraries of the
 * certificates API about 140 ms, yaml 20-60 ms). Checked in a fresh process.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const serverModule = fileURLToPath(new URL('../../core/server/server.js', import.meta.url));

const script = `
import { createRequire } from 'node:module';
await import(${JSON.stringify(serverModule)});
const loaded = new Set();
for (const k of Object.keys(createRequire(import.meta.url).cache)) {
  const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(k);
  if (m) loaded.add(m[1]);
}
console.log(JSON.stringify([...loaded]));
`;

t.test('loading the server loads no etcd client, gRPC, certificate, ASN.1 or YAML library', async (t) => {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  const loaded = new Set(JSON.parse(r.stdout.trim().split('\n').pop()!) as string[]);
  t.ok(loaded.size > 0, 'the check sees the packages that are loaded');
  for (const pkg of ['etcd3', '@grpc/grpc-js', '@grpc/proto-loader', '@grpc/reflection', 'node-forge', '@peculiar/asn1-schema', '@peculiar/asn1-x509', '@peculiar/asn1-csr', 'asn1js', 'yaml']) t.notOk(loaded.has(pkg), `${pkg} is not loaded`);
});
