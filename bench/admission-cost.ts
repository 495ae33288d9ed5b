/**
 * `node dist/bench/admission-cost.js none|webhook|policy [--creates=N]`: the process CPU that
 * admission costs one ConfigMap create, measured in process without HTTP, storage or the load
 * generator: a server (--workers=0) started here, configured as the admission bench configures it
 * (one validating webhook in the bench's webhook process, or a ValidatingAdmissionPolicy of three
 * rules), then the registry's admission calls of a create run N times, 32 at a time: the chain found
 * for the write, the early and late mutating phases, validation (the webhook's HTTPS call included),
 * and the object's stored form the create encodes beside them. On a machine whose speed drifts with
 * others' load this separates admission's own cost from the drift the whole server's CPU per request
 * shows; run builds alternately to compare them.
 */
import { readFileSync, rmSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeStored } from '../core/codec/object-bytes.js';
import { parseFlags } from '../core/server/options.js';
import { ApiServer } from '../core/server/server.js';
import type { Registry } from '../core/registry/registry.js';
import { admissionFor, admitObject, attributesFor, writeOptionsObject } from '../core/registry/admit.js';
import type { OpRequest } from '../core/registry/context.js';
import type { ApiObject } from '../core/api/types.js';
import { InlineExecutor } from '../workers/pool.js';
import { SetupClient, TOKEN } from './lib.js';
import { configureAdmission } from './scenarios/admission.js';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const mode = args.find((a) => !a.startsWith('--')) ?? 'policy';
  if (!['none', 'webhook', 'policy'].includes(mode)) throw new Error(`unknown mode ${mode}: none, webhook or policy`);
  const n = Number(args.find((a) => a.startsWith('--creates='))?.split('=')[1] ?? (mode === 'webhook' ? 8000 : 40000));
  const dir = mkdtempSync(join(tmpdir(), 'svc-admission-cost-'));
  writeFileSync(join(dir, 'tokens.csv'), `${TOKEN},admin,uid-admin,"system:masters"\n`);
  let registry: Registry | undefined;
  const server = new ApiServer(parseFlags([`--data-dir=${dir}`, '--secure-port=0', `--token-auth-file=${join(dir, 'tokens.csv')}`, '--workers=0', '-v=0']));
  await server.start((r) => {
    registry = r;
    return new InlineExecutor(r);
  });
  const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
  const c = new SetupClient(server.url, ca);
  const hook = mode === 'webhook' || mode === 'policy' ? await configureAdmission(c, mode, dir, ca) : undefined;
  c.close();
  // the listers hold the configuration once the cache has pulled the feed
  await new Promise((r) => setTimeout(r, 500));
  const ctx = registry!.ctx;
  const rt = ctx.types.get('/v1/configmaps')!;
  const user = { username: 'admin', groups: ['system:masters', 'system:authenticated'] };
  // a create's object as admission sees it: defaulted, with system fields and its field manager's entry
  const obj = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'cm-abcde',
      generateName: 'cm-',
      namespace: 'default',
      uid: '5f0c7a43-1111-2222-3333-444455556666',
      creationTimestamp: '2026-11-29T12:00:00Z',
      labels: { app: 'bench' },
      managedFields: [{ manager: 'autocannon', operation: 'Update', apiVersion: 'v1', time: '2026-11-29T12:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:key': {}, 'f:other': {} }, 'f:metadata': { 'f:generateName': {}, 'f:labels': { '.': {}, 'f:app': {} } } } }],
    },
    data: { key: 'value', other: 'x'.repeat(64) },
  } as unknown as ApiObject;
  const query = new URLSearchParams();
  const once = async (): Promise<void> => {
    const req = { rt, subresource: '', namespace: 'default', name: '', user, requestGroup: '', query } as unknown as OpRequest;
    const adm = admissionFor(ctx, req, 'CREATE');
    const json = encodeStored(obj);
    if (!adm) return;
    const a = attributesFor(req, 'CREATE', obj, undefined, false, writeOptionsObject('CreateOptions', query));
    await admitObject(adm, req, a, 'early');
    await admitObject(adm, req, a, 'late');
    a.name = obj.metadata.name ?? '';
    // as the create hands it over (builds without the field ignore it)
    (a as { objectJson?: unknown }).objectJson = { object: obj, json };
    await adm.validate(a);
  };
  const run = async (k: number): Promise<void> => {
    let i = 0;
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (i++ < k) await once();
    }));
  };
  await run(Math.min(n, 3000));
  const before = process.cpuUsage();
  const started = performance.now();
  await run(n);
  const used = process.cpuUsage(before);
  const ms = performance.now() - started;
  console.log(`${mode}: ${((used.user + used.system) / n).toFixed(1)} us of CPU per create's admission (stored-form encode included), ${Math.round((n / ms) * 1000)} a second`);
  await hook?.stop();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
