/**
 * One table of cases run over both transports against one real server: each case is sent over HTTPS
 * and over gRPC, and the answers must agree: the gRPC code is the HTTPS code through the issue's
 * table, the body (the object, the list, or the error's Status) is the same once the uids, revisions
 * and times two equal writes cannot share are taken out, and the warnings are the same. Reads of the
 * same object are compared byte for byte. Kinds: ConfigMap (core), Namespace (cluster-scoped), Lease
 * (coordination), Role (rbac) and a custom resource (Widget), with every write verb and patch type.
 */
import { status as Code } from '@grpc/grpc-js';
import t from 'tap';
import { protobufSerializer } from '../../core/codec/protobuf-serializer.js';
import type { Ref } from '../../core/grpc/client.js';
import { createCrd, crd } from '../helpers/crd.js';
import { normalized, type Op, overGrpc, overHttps, startGrpcServer } from '../helpers/grpc.js';

const CM: Ref = { version: 'v1', resource: 'configmaps', namespace: 'default' };
const LEASE: Ref = { group: 'coordination.svc.io', version: 'v1', resource: 'leases', namespace: 'default' };
const ROLE: Ref = { group: 'rbac.authorization.svc.io', version: 'v1', resource: 'roles', namespace: 'default' };
const WIDGET: Ref = { group: 'example.com', version: 'v1', resource: 'widgets', namespace: 'default' };
const NS: Ref = { version: 'v1', resource: 'namespaces' };
const FM = { fieldManager: 'parity' };
const JSON_ONLY = 'application/json';

const cm = (name: string, data: Record<string, string> = { k: 'v' }, labels?: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(labels ? { labels } : {}) }, data });
const lease = (name: string) => ({ apiVersion: 'coordination.svc.io/v1', kind: 'Lease', metadata: { name }, spec: { holderIdentity: 'me', leaseDurationSeconds: 15 } });
const role = (name: string) => ({ apiVersion: 'rbac.authorization.svc.io/v1', kind: 'Role', metadata: { name }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] });
const widget = (name: string, size = 3) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name }, spec: { size, color: 'red' } });
const named = (ref: Ref, name: string): Ref => ({ ...ref, name });
const create = (ref: Ref, body: unknown): Op => ({ verb: 'create', ref, body, options: FM });

interface Case {
  name: string;
  /** Written over HTTPS before the case runs, per transport (names carry the tag). */
  setup?: (tag: string) => Op[];
  op: (tag: string) => Op;
  /** Reads of shared objects: the bodies must be byte for byte the same. */
  sameBytes?: boolean;
  /** The gRPC code both must give (default OK). */
  code?: Code;
}

const reads: Case[] = [
  { name: 'get a ConfigMap (protobuf by default)', op: () => ({ verb: 'get', ref: named(CM, 'r1') }), sameBytes: true },
  { name: 'get a ConfigMap as JSON', op: () => ({ verb: 'get', ref: named(CM, 'r1'), accept: JSON_ONLY }), sameBytes: true },
  { name: 'get a ConfigMap as YAML', op: () => ({ verb: 'get', ref: named(CM, 'r1'), accept: 'application/yaml' }), sameBytes: true },
  { name: 'get a missing ConfigMap is NOT_FOUND', code: Code.NOT_FOUND, op: () => ({ verb: 'get', ref: named(CM, 'nope') }) },
  { name: 'list with a label selector', op: () => ({ verb: 'list', ref: CM, options: { labelSelector: 'app=a' } }) },
  { name: 'list with a field selector', op: () => ({ verb: 'list', ref: CM, options: { fieldSelector: 'metadata.name=r3' } }) },
  { name: 'list a page (limit)', op: () => ({ verb: 'list', ref: CM, options: { limit: '2', labelSelector: 'app' } }) },
  { name: 'list with a malformed label selector is INVALID_ARGUMENT', code: Code.INVALID_ARGUMENT, op: () => ({ verb: 'list', ref: CM, options: { labelSelector: 'app in (' } }) },
  { name: 'list with an unknown field selector is INVALID_ARGUMENT', code: Code.INVALID_ARGUMENT, op: () => ({ verb: 'list', ref: CM, options: { fieldSelector: 'spec.nope=1' } }) },
  { name: 'list with a bad resourceVersionMatch is INVALID_ARGUMENT', code: Code.INVALID_ARGUMENT, op: () => ({ verb: 'list', ref: CM, options: { resourceVersionMatch: 'Exact' } }) },
  { name: 'get a Lease', op: () => ({ verb: 'get', ref: named(LEASE, 'l1') }), sameBytes: true },
  { name: 'list Leases', op: () => ({ verb: 'list', ref: LEASE }) },
  { name: 'get a Role', op: () => ({ verb: 'get', ref: named(ROLE, 'ro1') }), sameBytes: true },
  { name: 'get a custom resource (JSON: it has no protobuf messages)', op: () => ({ verb: 'get', ref: named(WIDGET, 'w1') }), sameBytes: true },
  { name: 'list custom resources', op: () => ({ verb: 'list', ref: WIDGET }) },
  { name: 'a custom resource asked for as protobuf only is INVALID_ARGUMENT (406)', code: Code.INVALID_ARGUMENT, op: () => ({ verb: 'get', ref: named(WIDGET, 'w1'), accept: 'application/vnd.svc.protobuf' }) },
  { name: 'an unknown resource is NOT_FOUND', code: Code.NOT_FOUND, op: () => ({ verb: 'get', ref: { version: 'v1', resource: 'gadgets', namespace: 'default', name: 'x' } }) },
  { name: 'an unknown group version is NOT_FOUND', code: Code.NOT_FOUND, op: () => ({ verb: 'list', ref: { group: 'nope.example.com', version: 'v9', resource: 'things' } }) },
  { name: 'get a cluster-scoped Namespace', op: () => ({ verb: 'get', ref: named(NS, 'default') }), sameBytes: true },
];

const writes: Case[] = [
  { name: 'create a ConfigMap from JSON', op: (tag) => create(CM, cm(`c-${tag}`)) },
  {
    name: 'create a ConfigMap from protobuf',
    op: (tag) => ({ verb: 'create', ref: CM, options: FM, contentType: 'application/vnd.svc.protobuf', body: Buffer.from(protobufSerializer.encodeValue(cm(`cp-${tag}`), { pretty: false })) }),
  },
  { name: 'create an existing ConfigMap is ALREADY_EXISTS', code: Code.ALREADY_EXISTS, setup: (tag) => [create(CM, cm(`dup-${tag}`))], op: (tag) => create(CM, cm(`dup-${tag}`)) },
  { name: 'create an invalid ConfigMap is INVALID_ARGUMENT (422)', code: Code.INVALID_ARGUMENT, op: (tag) => create(CM, cm(`Bad_${tag}`)) },
  { name: 'create with dryRun', op: (tag) => ({ ...create(CM, cm(`dry-${tag}`)), options: { ...FM, dryRun: 'All' } }) },
  { name: 'create a Lease', op: (tag) => create(LEASE, lease(`l-${tag}`)) },
  { name: 'create a Role', op: (tag) => create(ROLE, role(`ro-${tag}`)) },
  { name: 'create a custom resource', op: (tag) => create(WIDGET, widget(`w-${tag}`)) },
  { name: 'create an invalid custom resource is INVALID_ARGUMENT (422)', code: Code.INVALID_ARGUMENT, op: (tag) => create(WIDGET, widget(`wbad-${tag}`, 11)) },
  { name: 'create with unknown fields under fieldValidation=Warn warns', op: (tag) => ({ ...create(CM, { ...cm(`warn-${tag}`), bogus: 1 }), options: { ...FM, fieldValidation: 'Warn' } }) },
  { name: 'create with a bad fieldValidation value is INVALID_ARGUMENT', code: Code.INVALID_ARGUMENT, op: (tag) => ({ ...create(CM, cm(`fv-${tag}`)), options: { fieldValidation: 'Bogus' } }) },
  { name: 'create with a bad dryRun value is INVALID_ARGUMENT', code: Code.INVALID_ARGUMENT, op: (tag) => ({ ...create(CM, cm(`dr-${tag}`)), options: { dryRun: 'Sometimes' } }) },
  { name: 'create from a garbage body is INVALID_ARGUMENT', code: Code.INVALID_ARGUMENT, op: () => ({ verb: 'create', ref: CM, body: '{"metadata": nope', contentType: 'application/json' }) },
  { name: 'create from an unknown content type is INVALID_ARGUMENT (415)', code: Code.INVALID_ARGUMENT, op: (tag) => ({ ...create(CM, cm(`ct-${tag}`)), contentType: 'text/plain' }) },
  { name: 'create in a namespace that does not exist is NOT_FOUND', code: Code.NOT_FOUND, op: (tag) => create({ ...CM, namespace: 'no-such-ns' }, cm(`nsx-${tag}`)) },
  { name: 'update a ConfigMap', setup: (tag) => [create(CM, cm(`u-${tag}`))], op: (tag) => ({ verb: 'update', ref: named(CM, `u-${tag}`), body: cm(`u-${tag}`, { k: 'v2' }), options: FM }) },
  {
    name: 'update with a stale resourceVersion is ABORTED (409 Conflict)',
    code: Code.ABORTED,
    setup: (tag) => [create(CM, cm(`us-${tag}`))],
    op: (tag) => ({ verb: 'update', ref: named(CM, `us-${tag}`), body: { ...cm(`us-${tag}`), metadata: { name: `us-${tag}`, resourceVersion: '2' } }, options: FM }),
  },
  { name: 'update of a missing Role creates it (create on update)', op: (tag) => ({ verb: 'update', ref: named(ROLE, `missing-${tag}`), body: role(`missing-${tag}`), options: FM }) },
  {
    name: 'JSON patch',
    setup: (tag) => [create(CM, cm(`pj-${tag}`))],
    op: (tag) => ({ verb: 'patch', ref: named(CM, `pj-${tag}`), contentType: 'application/json-patch+json', body: [{ op: 'add', path: '/data/j', value: '1' }], options: FM }),
  },
  {
    name: 'a JSON patch whose test fails is INVALID_ARGUMENT (422)',
    code: Code.INVALID_ARGUMENT,
    setup: (tag) => [create(CM, cm(`pjt-${tag}`))],
    op: (tag) => ({ verb: 'patch', ref: named(CM, `pjt-${tag}`), contentType: 'application/json-patch+json', body: [{ op: 'test', path: '/data/k', value: 'other' }] }),
  },
  {
    name: 'merge patch',
    setup: (tag) => [create(CM, cm(`pm-${tag}`))],
    op: (tag) => ({ verb: 'patch', ref: named(CM, `pm-${tag}`), contentType: 'application/merge-patch+json', body: { data: { m: '1', k: null } }, options: FM }),
  },
  {
    name: 'strategic merge patch',
    setup: (tag) => [create(ROLE, role(`ps-${tag}`))],
    op: (tag) => ({ verb: 'patch', ref: named(ROLE, `ps-${tag}`), contentType: 'application/strategic-merge-patch+json', body: { metadata: { labels: { s: '1' } } }, options: FM }),
  },
  {
    name: 'server-side apply by a second manager that conflicts is ABORTED (409 Conflict)',
    code: Code.ABORTED,
    setup: (tag) => [{ verb: 'patch', ref: named(CM, `pa-${tag}`), contentType: 'application/apply-patch+yaml', body: cm(`pa-${tag}`, { a: '1' }), options: { fieldManager: 'first' } }],
    op: (tag) => ({ verb: 'patch', ref: named(CM, `pa-${tag}`), contentType: 'application/apply-patch+yaml', body: cm(`pa-${tag}`, { a: '2' }), options: { fieldManager: 'second' } }),
  },
  {
    name: 'server-side apply with force',
    setup: (tag) => [{ verb: 'patch', ref: named(CM, `paf-${tag}`), contentType: 'application/apply-patch+yaml', body: cm(`paf-${tag}`, { a: '1' }), options: { fieldManager: 'first' } }],
    op: (tag) => ({ verb: 'patch', ref: named(CM, `paf-${tag}`), contentType: 'application/apply-patch+yaml', body: cm(`paf-${tag}`, { a: '2' }), options: { fieldManager: 'second', force: 'true' } }),
  },
  { name: 'apply without a fieldManager is INVALID_ARGUMENT', code: Code.INVALID_ARGUMENT, op: (tag) => ({ verb: 'patch', ref: named(CM, `pan-${tag}`), contentType: 'application/apply-patch+yaml', body: cm(`pan-${tag}`) }) },
  {
    name: 'merge patch of a custom resource',
    setup: (tag) => [create(WIDGET, widget(`wp-${tag}`))],
    op: (tag) => ({ verb: 'patch', ref: named(WIDGET, `wp-${tag}`), contentType: 'application/merge-patch+json', body: { spec: { size: 5 } }, options: FM }),
  },
  {
    name: 'strategic merge patch of a custom resource is INVALID_ARGUMENT (415)',
    code: Code.INVALID_ARGUMENT,
    setup: (tag) => [create(WIDGET, widget(`wsp-${tag}`))],
    op: (tag) => ({ verb: 'patch', ref: named(WIDGET, `wsp-${tag}`), contentType: 'application/strategic-merge-patch+json', body: { spec: { size: 5 } } }),
  },
  { name: 'delete a ConfigMap', setup: (tag) => [create(CM, cm(`d-${tag}`))], op: (tag) => ({ verb: 'delete', ref: named(CM, `d-${tag}`) }) },
  { name: 'delete a custom resource', setup: (tag) => [create(WIDGET, widget(`wd-${tag}`))], op: (tag) => ({ verb: 'delete', ref: named(WIDGET, `wd-${tag}`) }) },
  { name: 'delete a missing object is NOT_FOUND', code: Code.NOT_FOUND, op: (tag) => ({ verb: 'delete', ref: named(CM, `gone-${tag}`) }) },
  {
    name: 'delete with a bad propagationPolicy is INVALID_ARGUMENT',
    code: Code.INVALID_ARGUMENT,
    setup: (tag) => [create(CM, cm(`dp-${tag}`))],
    op: (tag) => ({ verb: 'delete', ref: named(CM, `dp-${tag}`), options: { propagationPolicy: 'Sideways' } }),
  },
  {
    name: 'deletecollection with a label selector',
    setup: (tag) => [create(CM, cm(`dc1-${tag}`, {}, { batch: tag })), create(CM, cm(`dc2-${tag}`, {}, { batch: tag }))],
    op: (tag) => ({ verb: 'deletecollection', ref: CM, options: { labelSelector: `batch=${tag}` } }),
  },
  {
    name: 'deletecollection of custom resources',
    setup: (tag) => [create({ ...WIDGET, namespace: 'parity' }, widget(`wdc-${tag}`))],
    op: () => ({ verb: 'deletecollection', ref: { ...WIDGET, namespace: 'parity' } }),
  },
];

t.test('the same table of cases over HTTPS and gRPC gives the same answers', async (t) => {
  const s = await startGrpcServer();
  t.teardown(() => s.stop());
  await createCrd(s.admin, crd());
  await overHttps(s.admin, create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'parity' } }));
  for (const [name, labels] of [['r1', { app: 'a' }], ['r2', { app: 'a' }], ['r3', { app: 'b' }]] as const) await overHttps(s.admin, create(CM, cm(name, { k: name }, labels)));
  await overHttps(s.admin, create(LEASE, lease('l1')));
  await overHttps(s.admin, create(ROLE, role('ro1')));
  const w = await overHttps(s.admin, create(WIDGET, widget('w1')));
  t.equal(w.code, 0, 'the shared objects are written');

  const run = async (c: Case): Promise<void> => {
    await t.test(c.name, async (t) => {
      const results = [];
      for (const tag of ['https', 'grpc']) {
        for (const op of c.setup?.(tag) ?? []) t.equal((await overHttps(s.admin, op)).code, 0, `setup ${op.verb} over HTTPS`);
        const op = c.op(tag);
        results.push({ tag, out: tag === 'https' ? await overHttps(s.admin, op) : await overGrpc(s.g, op) });
      }
      const [h, g] = [results[0]!, results[1]!];
      t.equal(h.out.code, c.code ?? Code.OK, `HTTPS answers with the code's HTTP counterpart (${h.out.code})`);
      t.equal(g.out.code, h.out.code, `gRPC code ${g.out.code} follows the HTTPS answer`);
      t.same(normalized(g.out.value, g.tag), normalized(h.out.value, h.tag), 'same body');
      if (h.out.code === 0) {
        t.equal(g.out.contentType, h.out.contentType, 'same content type');
        t.same(g.out.warnings, h.out.warnings, 'same warnings');
      }
      if (c.sameBytes) t.ok(g.out.body.equals(h.out.body), 'byte for byte the same body');
    });
  };
  for (const c of reads) await run(c);
  for (const c of writes) await run(c);

  await t.test('list pages follow their continue tokens alike', async (t) => {
    const first = { verb: 'list' as const, ref: CM, options: { limit: '1', labelSelector: 'app' }, accept: JSON_ONLY };
    const names = async (over: (op: Op) => Promise<{ value: { items: { metadata: { name: string } }[]; metadata: { continue?: string } } }>) => {
      const seen: string[] = [];
      let op: Op = first;
      for (;;) {
        const page = (await over(op)).value;
        seen.push(...page.items.map((i) => i.metadata.name));
        if (!page.metadata.continue) return seen;
        op = { ...first, options: { ...first.options, continue: page.metadata.continue } };
      }
    };
    const viaHttps = await names((op) => overHttps(s.admin, op));
    const viaGrpc = await names((op) => overGrpc(s.g, op));
    t.same(viaGrpc, viaHttps);
    t.same(viaGrpc, ['r1', 'r2', 'r3']);
  });

  await t.test('nothing partial is stored by the refused writes', async (t) => {
    const list = await overGrpc(s.g, { verb: 'list', ref: CM, accept: JSON_ONLY });
    const names = list.value.items.map((i: { metadata: { name: string } }) => i.metadata.name);
    for (const n of ['dry-grpc', 'Bad_grpc', 'fv-grpc', 'dr-grpc', 'ct-grpc', 'd-grpc', 'dc1-grpc', 'dc2-grpc']) t.notOk(names.includes(n), `${n} is not stored`);
  });
});
