/**
 * The CEL library is loaded on first use only: loading the server (which declares every CEL
 * environment) loads none of it, in either module system; compiling an expression loads its
 * CommonJS build alone. Checked in fresh processes, with a resolve hook that records what loads.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const serverModule = fileURLToPath(new URL('../../core/server/server.js', import.meta.url));
const claimsModule = fileURLToPath(new URL('../../core/authn/claims-cel.js', import.meta.url));

const hook = `export async function resolve(s, c, next) { const r = await next(s, c); if (r.url.includes('/@bufbuild/cel/')) process.stderr.write('ESM ' + r.url + '\\n'); return r; }`;
const script = (body: string): string => `
import { register, createRequire } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
${body}
const cjs = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/@bufbuild/cel/'));
console.log(JSON.stringify(cjs.length));
`;

const run = (body: string) => {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script(body)], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr, esm: r.stderr.split('\n').filter((l) => l.startsWith('ESM ')).length, cjs: Number(r.stdout.trim().split('\n').pop()) };
};

t.test('loading the server loads no CEL library', async (t) => {
  const r = run(`await import(${JSON.stringify(serverModule)});`);
  t.equal(r.status, 0, r.stderr);
  t.equal(r.esm, 0, 'no ES module of @bufbuild/cel');
  t.equal(r.cjs, 0, 'no CommonJS module of @bufbuild/cel');
});

t.test('compiling an expression loads the CommonJS build only', async (t) => {
  const r = run(`const m = await import(${JSON.stringify(claimsModule)}); m.compileExpression("claims.sub == 'a'", 'claims', 'bool');`);
  t.equal(r.status, 0, r.stderr);
  t.equal(r.esm, 0, 'no second copy as ES modules');
  t.ok(r.cjs > 0, 'the CommonJS build is loaded');
});
