/**
 * `npm test`: runs every compiled test file under dist/test with tap (two files at a time on the
 * machine's two cores), after making sure what the tests need is present. Exits with tap's status.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tap = join(root, 'node_modules', '.bin', 'tap');

function requireTool(cmd: string, why: string): void {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
  if (r.status !== 0) console.warn(`note: ${cmd} not found; ${why}`);
}

if (!existsSync(tap)) {
  console.error('tap is not installed: run `npm ci` first');
  process.exit(1);
}
requireTool('kubectl', 'the kubectl end-to-end tests will fail');

let aptUpdated = false;
/** Installs a Debian package when `check` fails (the tests drive real programs; CI machines start bare). */
function ensureDebianPackage(pkg: string, check: string): void {
  if (spawnSync('sh', ['-c', check], { stdio: 'ignore' }).status === 0) return;
  if (process.getuid?.() !== 0) return console.warn(`note: ${pkg} is missing and only root can install it; tests that need it will fail`);
  console.log(`installing ${pkg} (Debian) for the tests`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) aptUpdated = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env }).status === 0;
  spawnSync('apt-get', ['install', '-y', '-qq', pkg], { stdio: 'inherit', env });
}

/** The upstream client libraries of test/clients (their own package, with the Node 22 they need). */
function ensureClientModules(): void {
  const dir = join(root, 'test', 'clients');
  if (existsSync(join(dir, 'node_modules', '@kubernetes', 'client-node')) && existsSync(join(dir, 'node_modules', '.bin', 'node'))) return;
  console.log('installing the upstream client libraries of test/clients');
  spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
}

ensureDebianPackage('python3-kubernetes', '/usr/bin/python3 -c "import kubernetes"');
// the Prometheus project's own text-format parser reads the /metrics scrapes
ensureDebianPackage('python3-prometheus-client', '/usr/bin/python3 -c "import prometheus_client"');
// the etcd3 storage tests start a real etcd (bookworm's etcd-server 3.4 installs /usr/bin/etcd)
ensureDebianPackage('etcd-server', 'command -v etcd');
// the certificates tests make ECDSA and Ed25519 requests and CAs with the openssl command, and check issued certificates with it
ensureDebianPackage('openssl', 'command -v openssl');
ensureClientModules();

const files = process.argv.slice(2);
const args = [
  '--disable-coverage',
  '--jobs=2',
  '--timeout=600',
  '--reporter=terse',
  ...(files.length ? files : ['dist/test/**/*.test.js']),
];
const r = spawnSync(tap, args, { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_OPTIONS: '' } });
process.exit(r.status ?? 1);
