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
