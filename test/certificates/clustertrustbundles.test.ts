/**
 * ClusterTrustBundle (certificates.svc.io/v1alpha1): off by default (alpha gate and runtime config,
 * as upstream serves alpha versions), upstream's validation as a table (names for and without a
 * signer, CERTIFICATE blocks of CA certificates only, no headers, no duplicates, at least one, the
 * size limit, the signer immutable), and ClusterTrustBundleAttest: a bundle for a signer needs
 * `attest` on it.
 */
import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { servedTypesFor } from '../../core/registry/enablement.js';
import { type ClusterTrustBundle, clusterTrustBundles as ctb, MAX_TRUST_BUNDLE_SIZE } from '../../core/registry/certificates/clustertrustbundles.js';
import { expectStatus } from '../helpers/fixtures.js';
import { makeCA } from '../helpers/pki.js';
import { clusterRole, clusterRoleBinding, RBAC, rule, startRbacServer, user } from '../helpers/rbac.js';

const caA = makeCA('anchor-a');
const caB = makeCA('anchor-b');
const leaf = caA.issue({ cn: 'leaf', client: true }).cert;

const bundle = (name: string, trustBundle: string, signerName?: string): ClusterTrustBundle =>
  ({ apiVersion: 'certificates.svc.io/v1alpha1', kind: 'ClusterTrustBundle', metadata: { name }, spec: { ...(signerName ? { signerName } : {}), trustBundle } }) as ClusterTrustBundle;

t.test('served only with the ClusterTrustBundle gate and its version turned on', async (t) => {
  const has = (gates: Record<string, boolean>, rc: Record<string, boolean> = {}): boolean => servedTypesFor(gates, rc).some((rt) => rt.plural === 'clustertrustbundles');
  t.notOk(has({}), 'off by default');
  t.notOk(has({ ClusterTrustBundle: true }), 'the gate alone does not serve an alpha version');
  t.notOk(has({}, { 'certificates.svc.io/v1alpha1': true }), 'nor the runtime config alone');
  t.ok(has({ ClusterTrustBundle: true }, { 'certificates.svc.io/v1alpha1': true }), 'both: served');
  t.ok(has({ ClusterTrustBundle: true }, { 'certificates.k8s.io/v1alpha1': true }), 'the upstream spelling names the same version');
});

t.test('validation, one rule a row', async (t) => {
  const rows: [string, ClusterTrustBundle, string[]][] = [
    ['one CA certificate, no signer', bundle('roots', caA.cert), []],
    ['two CA certificates for a signer, named after it', bundle('example.com:signer:roots', caA.cert + caB.cert, 'example.com/signer'), []],
    ['a name with a colon but no signer', bundle('a:b', caA.cert), ['metadata.name: ClusterTrustBundle without signer name must not have ":" in its name']],
    ['a signer bundle not named after the signer', bundle('roots', caA.cert, 'example.com/signer'), ['metadata.name: ClusterTrustBundle for signerName example.com/signer must be named with prefix example.com:signer:']],
    ['an invalid signer name', bundle('bad:roots', caA.cert, 'bad'), ["spec.signerName: must be a fully qualified domain and path of the form 'example.com/signer-name'"]],
    ['no anchors', bundle('roots', ''), ['spec.trustBundle: at least one trust anchor must be provided']],
    ['a leaf certificate', bundle('roots', leaf), ['spec.trustBundle: entry 0 does not have the CA bit set']],
    ['a key block', bundle('roots', `${caA.cert}${caA.key}`), [`spec.trustBundle: entry 1 has bad block type: ${caA.key.match(/BEGIN ([A-Z ]+)-----/)![1]}`]],
    ['block headers', bundle('roots', caA.cert.replace(/-----\r?\n/, '-----\nProc-Type: 4,ENCRYPTED\n\n')), ['spec.trustBundle: entry 0 has PEM block headers']],
    ['a block that is no certificate', bundle('roots', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'), ['spec.trustBundle: entry 0 does not parse as X.509']],
    ['the same anchor twice', bundle('roots', caA.cert + caB.cert + caA.cert), ['spec.trustBundle: duplicate trust anchor (indices [0 2])']],
    ['more than 1 MiB', bundle('roots', caA.cert + ' '.repeat(MAX_TRUST_BUNDLE_SIZE)), ['spec.trustBundle: may not be more than 1048576 bytes']],
  ];
  for (const [rule, obj, want] of rows) {
    const got = ctb.validateCreate!(obj as ApiObject).map((e) => `${e.field}: ${e.detail}`);
    t.same(got, want, rule);
  }
  const old = bundle('example.com:signer:roots', caA.cert, 'example.com/signer');
  const renamed = bundle('example.com:signer:roots', caA.cert, 'example.com/other');
  t.match(ctb.validateUpdate!(renamed as ApiObject, old as ApiObject).map((e) => `${e.field}: ${e.detail}`), ['metadata.name: ClusterTrustBundle for signerName example.com/other must be named with prefix example.com:other:', 'spec.signerName: field is immutable']);
  const legacy = bundle('roots', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
  const relabelled = { ...legacy, metadata: { ...legacy.metadata, labels: { a: 'b' } } };
  t.same(ctb.validateUpdate!(relabelled as ApiObject, legacy as ApiObject), [], 'an unchanged bundle is not parsed again');
});

t.test('ClusterTrustBundleAttest on a real server', async (t) => {
  const s = await startRbacServer([{ name: 'alice' }, { name: 'attester' }], ['--feature-gates=ClusterTrustBundle=true', '--runtime-config=certificates.svc.io/v1alpha1=true']);
  t.teardown(() => s.stop());
  const P = '/apis/certificates.svc.io/v1alpha1/clustertrustbundles';
  const write = rule(['create', 'update', 'patch', 'get', 'list'], ['certificates.svc.io'], ['clustertrustbundles']);
  for (const [name, rules] of [
    ['alice', [write]],
    ['attester', [write, rule(['attest'], ['certificates.svc.io'], ['signers'], ['example.com/*'])]],
  ] as const) {
    await s.admin.post(`${RBAC}/clusterroles`, clusterRole(`ctb-${name}`, [...rules]));
    await s.admin.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding(`ctb-${name}`, `ctb-${name}`, [user(name)]));
  }
  t.equal((await s.as('alice').post(P, bundle('plain-roots', caA.cert))).status, 201, 'a bundle without a signer needs no attest');
  expectStatus(t, await s.as('alice').post(P, bundle('example.com:signer:roots', caA.cert, 'example.com/signer')), 403, 'Forbidden', 'clustertrustbundles.certificates.svc.io "example.com:signer:roots" is forbidden: user not permitted to attest for signerName "example.com/signer"');
  const made = await s.as('attester').post(P, bundle('example.com:signer:roots', caA.cert, 'example.com/signer'));
  t.equal(made.status, 201, 'attest on example.com/* covers the signer');
  const relabel = await s.as('alice').patch(`${P}/example.com:signer:roots`, { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json');
  t.equal(relabel.status, 200, 'an update that changes neither signer nor bundle needs no attest');
  const rewrite = await s.as('alice').patch(`${P}/example.com:signer:roots`, { spec: { trustBundle: caA.cert + caB.cert } }, 'application/merge-patch+json');
  expectStatus(t, rewrite, 403, 'Forbidden', /user not permitted to attest for signerName "example\.com\/signer"/);
  const bad = await s.as('alice').post(P, bundle('dup', caA.cert + caA.cert));
  expectStatus(t, bad, 422, 'Invalid', /spec\.trustBundle: Invalid value: "<value omitted>": duplicate trust anchor \(indices \[0 1\]\)/);
  const sel = await s.admin.get(`${P}?fieldSelector=spec.signerName=example.com/signer`);
  t.same(sel.json.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['example.com:signer:roots'], 'spec.signerName is a field selector');
});

t.test('without the gate the version is not served', async (t) => {
  const s = await startRbacServer([], ['--runtime-config=certificates.svc.io/v1alpha1=true']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.get('/apis/certificates.svc.io/v1alpha1/clustertrustbundles')).status, 404);
});
