/**
 * `kubectl explain` (v1.32, reading /openapi/v3) shows a description for every field of every served
 * kind: each kind is explained, and so is every field that has fields of its own (found with
 * `--recursive`), which lists the descriptions of all of its fields. No `<no description>` and no
 * `<empty>` may appear anywhere.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { freePort, spawnServer, type SpawnedServer } from '../helpers/server.js';
import { tmp } from '../helpers/fixtures.js';
import { type Kubectl, kubectlRunner } from '../helpers/kubectl.js';

let srv: SpawnedServer;
let kubectl: Kubectl;

t.before(async () => {
  const dataDir = tmp('svc-e2e-explain-');
  const home = tmp('svc-e2e-explain-home-');
  mkdirSync(join(home, 'cache'), { recursive: true });
  srv = await spawnServer(dataDir, await freePort());
  kubectl = kubectlRunner(join(dataDir, 'admin.kubeconfig'), home);
});
t.teardown(async () => {
  if (srv && srv.proc.exitCode !== null) console.error(`server exited early (${srv.proc.exitCode}):\n${srv.output()}`);
  await srv?.kill('SIGTERM');
});

/** Paths of the fields that have fields of their own, from `kubectl explain <kind> --recursive`. */
function containerPaths(recursive: string): string[] {
  const lines = recursive.split('\n');
  const start = lines.indexOf('FIELDS:');
  const stack: string[] = [];
  const out: string[] = [];
  let prev: { depth: number; path: string } | undefined;
  for (const line of lines.slice(start + 1)) {
    const m = /^( +)([A-Za-z0-9]+)\t/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 2 - 1;
    stack.length = depth;
    stack.push(m[2]!);
    if (prev && depth > prev.depth) out.push(prev.path);
    prev = { depth, path: stack.join('.') };
  }
  return [...new Set(out)];
}

const kinds = ['namespaces', 'configmaps', 'secrets', 'serviceaccounts', 'events', 'csidrivers.storage.svc.io', 'leases.coordination.svc.io'];

for (const kind of kinds) {
  t.test(`kubectl explain ${kind}: every field described`, async (t) => {
    const rec = await kubectl(['explain', kind, '--recursive']);
    t.equal(rec.code, 0, rec.stderr);
    const paths = containerPaths(rec.stdout);
    t.ok(paths.includes('metadata'), 'metadata has fields of its own');
    for (const path of ['', ...paths]) {
      const target = path ? `${kind}.${path}` : kind;
      const r = await kubectl(['explain', target]);
      t.equal(r.code, 0, `${target}: ${r.stderr}`);
      t.notMatch(r.stdout, /<no description>/, `${target}: every field listed has a description`);
      t.notMatch(r.stdout, /DESCRIPTION:\n\s*<empty>/, `${target}: described itself`);
    }
  });
}

t.test('kubectl explain shows our texts for a leaf field and the CSIDriver spec', async (t) => {
  const name = await kubectl(['explain', 'configmaps.metadata.name']);
  t.equal(name.code, 0, name.stderr);
  t.match(name.stdout, /FIELD: name <string>/);
  // kubectl wraps descriptions at 80 columns
  t.match(name.stdout.replace(/\s+/g, ' '), /Name of the object, unique per kind within its namespace/);
  const attach = await kubectl(['explain', 'csidrivers.spec.attachRequired']);
  t.equal(attach.code, 0, attach.stderr);
  t.match(attach.stdout.replace(/\s+/g, ' '), /attach\/detach controller waits for it before the volume is mounted/);
});

t.test('the parser of --recursive finds nested containers (the walk can fail)', async (t) => {
  const sample = 'KIND: X\nFIELDS:\n  a\t<string>\n  b\t<B>\n    c\t<C>\n      d\t<string>\n    e\t<string>\n  f\t<string>\n';
  t.same(containerPaths(sample), ['b', 'b.c']);
});
