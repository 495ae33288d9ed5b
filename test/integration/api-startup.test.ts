/**
 * Starting the binary: `npm start` runs bin/svc-apiserver; flags (--help, unknown flags, --bind-address,
 * --secure-port, --workers default, --tls-cert-file / --tls-private-key-file); first-start credentials
 * in --data-dir (CA, serving certificate for localhost and 127.0.0.1, admin.kubeconfig).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Client } from '../helpers/client.js';
import { ADMIN_TOKEN, binPath, freePort, spawnServer, writeTokenFile, childEnv } from '../helpers/server.js';
import { seededDir, tmp } from '../helpers/fixtures.js';

interface Proc {
  proc: ChildProcess;
  out: () => string;
  exit: Promise<number | null>;
}

function run(args: string[]): Proc {
  const proc = spawn(process.execPath, [binPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exit = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return { proc, out: () => out, exit };
}

async function untilServing(p: Proc, ms = 30000): Promise<void> {
  const end = Date.now() + ms;
  while (!p.out().includes('serving on')) {
    if (p.proc.exitCode !== null) throw new Error(`exited: ${p.out()}`);
    if (Date.now() > end) throw new Error(`no serving line: ${p.out()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function peerCert(port: number, servername: string, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername, ca, ALPNProtocols: ['http/1.1'] }, () => {
      const der = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(der));
    });
    s.on('error', reject);
  });
}

t.test('npm start runs the compiled bin/svc-apiserver with the allocator settings, jemalloc preloaded when the system has it', async (t) => {
  const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8'));
  const start: string = pkg.scripts.start;
  const command = ' node dist/bin/svc-apiserver.js';
  t.ok(start.endsWith(command), start);
  // the settings in front, as npm's shell reads them (README "What bounds memory and connections")
  const env = execFileSync('sh', ['-c', `${start.slice(0, -command.length)} env`], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  const vars = new Map(env.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const));
  t.equal(vars.get('MALLOC_ARENA_MAX'), '2');
  t.equal(vars.get('MALLOC_MMAP_THRESHOLD_'), '131072');
  t.equal(vars.get('MALLOC_CONF'), 'background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0');
  const jemalloc = readdirSync('/usr/lib').map((d) => `/usr/lib/${d}/libjemalloc.so.2`).find((f) => existsSync(f)) ?? '';
  t.equal(vars.get('LD_PRELOAD'), jemalloc, jemalloc ? 'the system jemalloc is preloaded' : 'nothing preloaded without a system jemalloc');
  t.equal(pkg.bin['svc-apiserver'], 'dist/bin/svc-apiserver.js');
  t.ok(existsSync(binPath), 'compiled binary exists');
});

t.test('--help prints the flags and exits 0', async (t) => {
  const p = run(['--help']);
  t.equal(await p.exit, 0);
  for (const f of ['--secure-port', '--bind-address', '--data-dir', '--tls-cert-file', '--tls-private-key-file', '--client-ca-file', '--token-auth-file', '--anonymous-auth', '--authorization-mode', '--workers']) {
    t.ok(p.out().includes(f), `${f} documented`);
  }
});

t.test('bad flags exit non-zero with a message', async (t) => {
  const cases: { args: string[]; message: RegExp }[] = [
    { args: ['--nope=1'], message: /unknown flag: --nope/ },
    { args: ['--secure-port=abc'], message: /--secure-port/ },
    { args: ['--authorization-mode=AlwaysAllow,Bogus'], message: /Bogus/ },
    { args: ['--workers=-1'], message: /--workers/ },
  ];
  const procs = cases.map((c) => run([`--data-dir=${tmp('svc-flags-')}`, ...c.args]));
  for (let i = 0; i < cases.length; i++) {
    const c = cases[i]!;
    const code = await procs[i]!.exit;
    t.not(code, 0, `${c.args.join(' ')} exits non-zero`);
    t.match(procs[i]!.out(), c.message, `${c.args.join(' ')} message`);
  }
});

t.test('first start: generated CA, serving certificate and admin.kubeconfig; by default one process with one worker', async (t) => {
  const dataDir = tmp('svc-start-');
  const port = await freePort();
  const srv = await spawnServer(dataDir, port, ['--bind-address=127.0.0.1']);
  t.teardown(() => srv.kill('SIGTERM'));
  const shape = '1 worker';
  t.match(srv.output(), new RegExp(`serving on https://127\\.0\\.0\\.1:${port} \\(data in .*, ${shape}\\)`), `serving line with the default shape (${shape})`);
  for (const f of ['ca.crt', 'ca.key', 'apiserver.crt', 'apiserver.key', 'admin.crt', 'admin.key', 'admin.kubeconfig']) t.ok(existsSync(join(dataDir, f)), `${f} written`);
  for (const f of ['ca.key', 'apiserver.key', 'admin.key', 'admin.kubeconfig']) t.equal(statSync(join(dataDir, f)).mode & 0o077, 0, `${f} is private (0600)`);
  const ca = readFileSync(join(dataDir, 'ca.crt'), 'utf8');
  for (const name of ['localhost', '127.0.0.1']) {
    const cert = await peerCert(port, name === 'localhost' ? 'localhost' : '', ca);
    t.ok(name === 'localhost' ? cert.checkHost('localhost') : cert.checkIP('127.0.0.1'), `serving certificate valid for ${name}`);
    t.ok(cert.verify(new X509Certificate(ca).publicKey), 'signed by the generated CA');
  }
  const kc = readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8');
  t.ok(kc.includes(`server: https://127.0.0.1:${port}`), 'kubeconfig server URL');
  t.equal((await srv.admin.get('/readyz')).status, 200);
});

t.test('--bind-address=0.0.0.0 writes a loopback address into admin.kubeconfig', async (t) => {
  const dataDir = seededDir('svc-bind-');
  const port = await freePort();
  const srv = await spawnServer(dataDir, port, ['--bind-address=0.0.0.0']);
  t.teardown(() => srv.kill('SIGTERM'));
  t.ok(readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8').includes(`server: https://127.0.0.1:${port}`));
  t.equal((await srv.admin.get('/livez')).status, 200, 'reachable on loopback');
});

t.test('--tls-cert-file / --tls-private-key-file serve the given certificate', async (t) => {
  const certDir = seededDir('svc-given-tls-');
  const dataDir = tmp('svc-given-data-');
  const port = await freePort();
  const p = run([
    `--data-dir=${dataDir}`,
    `--secure-port=${port}`,
    `--token-auth-file=${writeTokenFile(dataDir)}`,
    `--tls-cert-file=${join(certDir, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(certDir, 'apiserver.key')}`,
  ]);
  t.teardown(async () => {
    if (p.proc.exitCode === null) {
      p.proc.kill('SIGTERM');
      await p.exit;
    }
  });
  await untilServing(p);
  const ca = readFileSync(join(certDir, 'ca.crt'), 'utf8');
  const served = await peerCert(port, 'localhost', ca);
  t.equal(served.fingerprint256, new X509Certificate(readFileSync(join(certDir, 'apiserver.crt'))).fingerprint256, 'the given certificate is served');
  const c = new Client({ url: `https://127.0.0.1:${port}`, ca, token: ADMIN_TOKEN });
  t.teardown(() => c.close());
  t.equal((await c.get('/api/v1/namespaces/default')).status, 200, 'token auth works with the given certificate');
});

t.test('only one of --tls-cert-file / --tls-private-key-file is an error', async (t) => {
  const certDir = seededDir('svc-half-tls-');
  const p = run([`--data-dir=${tmp('svc-half-')}`, `--secure-port=${await freePort()}`, `--tls-cert-file=${join(certDir, 'apiserver.crt')}`]);
  t.not(await p.exit, 0, 'exits non-zero');
});
