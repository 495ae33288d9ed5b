/**
 * CertificateSigningRequests on a real server with RBAC: bad input answered with upstream's Status
 * and nothing signed; approval needing `approve` on the signer and signing needing `sign`
 * (CertificateApproval, CertificateSigning), system:masters refused to the kube-apiserver-client
 * signer (CertificateSubjectRestriction); the signing controller's certificates (subject, usages,
 * lifetime from expirationSeconds and --cluster-signing-duration, each signer's rules as a Failed
 * condition), one of which authenticates at once against --client-ca-file; both group spellings.
 */
import { X509Certificate } from 'node:crypto';
import t from 'tap';
import { expectStatus } from '../helpers/fixtures.js';
import { CSRS, condition, decide, getCsr, issuedCert, issuedPem, settled, WHOAMI } from '../helpers/certificates.js';
import { b64, csrObject, ecCsr, rsaCsr, tamperedSignature } from '../helpers/csr.js';
import { clusterRole, clusterRoleBinding, RBAC, rule, startRbacServer, user } from '../helpers/rbac.js';
import { waitFor } from '../helpers/wait.js';

const CERTS = ['certificates.svc.io'];

t.test('CertificateSigningRequests with RBAC, admission and the signer', async (t) => {
  const s = await startRbacServer([{ name: 'alice' }, { name: 'approver' }, { name: 'wildcard-approver' }, { name: 'signer-sam' }]);
  t.teardown(() => s.stop());
  const grant = async (name: string, rules: unknown[], subject: string): Promise<void> => {
    t.equal((await s.admin.post(`${RBAC}/clusterroles`, clusterRole(name, rules))).status, 201);
    t.equal((await s.admin.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding(name, name, [user(subject)]))).status, 201);
  };
  const csrRules = [rule(['create', 'get', 'list', 'watch'], CERTS, ['certificatesigningrequests'])];
  await grant('alice-csr', csrRules, 'alice');
  await grant('approver', [...csrRules, rule(['update'], CERTS, ['certificatesigningrequests/approval']), rule(['approve'], CERTS, ['signers'], ['example.com/my-signer'])], 'approver');
  await grant('wildcard-approver', [...csrRules, rule(['update'], CERTS, ['certificatesigningrequests/approval']), rule(['approve'], CERTS, ['signers'], ['example.com/*'])], 'wildcard-approver');
  await grant('signer-sam', [...csrRules, rule(['update'], CERTS, ['certificatesigningrequests/status', 'certificatesigningrequests/approval'])], 'signer-sam');
  const alice = s.as('alice');

  t.test('bad input: a 4xx Status as upstream, nothing stored', async (t) => {
    const good = rsaCsr({ cn: 'alice' });
    const rows: [string, unknown, number, string, RegExp][] = [
      ['garbage instead of PEM', csrObject('bad-1', 'garbage', 'example.com/my-signer', ['client auth']), 422, 'Invalid', /spec\.request: Invalid value: .*: PEM block type must be CERTIFICATE REQUEST/],
      ['a signature that does not verify', csrObject('bad-2', tamperedSignature(good.pem), 'example.com/my-signer', ['client auth']), 422, 'Invalid', /crypto\/rsa: verification error/],
      ['request that is not base64', { ...csrObject('bad-3', good.pem, 'example.com/my-signer', ['client auth']), spec: { request: '!!!', signerName: 'example.com/my-signer', usages: ['client auth'] } }, 422, 'Invalid', /spec\.request: Invalid value: "!!!": .*illegal base64 data/],
      ['a signer name that is not qualified', csrObject('bad-4', good.pem, 'my-signer', ['client auth']), 422, 'Invalid', /spec\.signerName: Invalid value: "my-signer": must be a fully qualified domain and path/],
      ['no signer name', csrObject('bad-5', good.pem, '', ['client auth']), 422, 'Invalid', /spec\.signerName: Required value/],
      ['an unknown usage', csrObject('bad-6', good.pem, 'example.com/my-signer', ['mind control']), 422, 'Invalid', /spec\.usages\[0\]: Unsupported value: "mind control"/],
      ['a duplicate usage', csrObject('bad-7', good.pem, 'example.com/my-signer', ['client auth', 'client auth']), 422, 'Invalid', /spec\.usages\[1\]: Duplicate value: "client auth"/],
      ['legacy-unknown through v1', csrObject('bad-8', good.pem, 'kubernetes.io/legacy-unknown', ['client auth']), 422, 'Invalid', /the legacy signerName is not allowed via this API version/],
      ['expirationSeconds below 600', csrObject('bad-9', good.pem, 'example.com/my-signer', ['client auth'], { expirationSeconds: 60 }), 422, 'Invalid', /may not specify a duration less than 600 seconds/],
      ['system:masters from the kube-apiserver-client signer', csrObject('bad-10', rsaCsr({ cn: 'root', orgs: ['system:masters'] }).pem, 'kubernetes.io/kube-apiserver-client', ['client auth']), 403, 'Forbidden', /use of kubernetes\.io\/kube-apiserver-client signer with system:masters group is not allowed/],
    ];
    for (const [rule, body, code, reason, message] of rows) {
      t.test(rule, async (t) => {
        const r = await alice.post(CSRS, body);
        expectStatus(t, r, code, reason, message);
        const name = (body as { metadata: { name: string } }).metadata.name;
        t.equal((await s.admin.get(`${CSRS}/${name}`)).status, 404, 'nothing stored');
      });
    }
    t.equal((await alice.post(CSRS, csrObject('after-bad', good.pem, 'example.com/my-signer', ['client auth']))).status, 201, 'the server keeps serving');
  });

  t.test('create records the requester; spec cannot be changed afterwards', async (t) => {
    const r = await alice.post(CSRS, { ...csrObject('rec', rsaCsr({ cn: 'alice' }).pem, 'example.com/my-signer', ['client auth']), spec: { request: b64(rsaCsr({ cn: 'alice' }).pem), signerName: 'example.com/my-signer', usages: ['client auth'], username: 'admin', groups: ['system:masters'] }, status: { conditions: [{ type: 'Approved', status: 'True' }] } });
    t.equal(r.status, 201);
    t.equal(r.json.spec.username, 'alice');
    t.equal(r.json.spec.uid, 'uid-alice');
    t.same(r.json.spec.groups, ['system:authenticated']);
    t.same(r.json.status, {}, 'not created approved');
    const upd = await s.admin.patch(`${CSRS}/rec`, { spec: { signerName: 'example.com/other' }, metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json');
    t.equal(upd.status, 200);
    t.equal(upd.json.spec.signerName, 'example.com/my-signer', 'the spec is kept');
    t.equal(upd.json.metadata.labels.a, 'b', 'metadata changes');
    const sel = await s.admin.get(`${CSRS}?fieldSelector=spec.signerName=example.com/my-signer`);
    t.ok(sel.json.items.some((i: { metadata: { name: string } }) => i.metadata.name === 'rec'), 'spec.signerName is a field selector');
  });

  t.test('approval needs approve on the signer (CertificateApproval)', async (t) => {
    await alice.post(CSRS, csrObject('ap-1', rsaCsr({ cn: 'alice' }).pem, 'example.com/my-signer', ['client auth']));
    expectStatus(t, await decide(alice, 'ap-1'), 403, 'Forbidden', /cannot update resource "certificatesigningrequests\/approval"/);
    expectStatus(t, await decide(s.as('signer-sam'), 'ap-1'), 403, 'Forbidden', 'certificatesigningrequests.certificates.svc.io "ap-1" is forbidden: user not permitted to approve requests with signerName "example.com/my-signer"');
    t.notOk(condition(await getCsr(s.admin, 'ap-1'), 'Approved'), 'not approved');
    const ok = await decide(s.as('approver'), 'ap-1');
    t.equal(ok.status, 200, 'approve on the signer name');
    t.equal(condition(ok.json, 'Approved')?.reason, 'Test');
    t.ok(condition(ok.json, 'Approved')?.lastUpdateTime, 'times filled in');
    await alice.post(CSRS, csrObject('ap-2', rsaCsr({ cn: 'alice' }).pem, 'example.com/my-signer', ['client auth']));
    t.equal((await decide(s.as('wildcard-approver'), 'ap-2', 'Denied')).status, 200, 'approve on example.com/* covers the domain');
    await alice.post(CSRS, csrObject('ap-3', rsaCsr({ cn: 'alice' }).pem, 'other.example/signer', ['client auth']));
    expectStatus(t, await decide(s.as('wildcard-approver'), 'ap-3'), 403, 'Forbidden', /user not permitted to approve requests with signerName "other\.example\/signer"/);
    expectStatus(t, await decide(s.as('approver'), 'ap-1', 'Denied'), 422, 'Invalid', /Approved and Denied conditions are mutually exclusive/);
    // upstream's spelling of the group, path and body
    const viaAlias = await s.as('approver').get(`/apis/certificates.k8s.io/v1/certificatesigningrequests/ap-1`);
    t.equal(viaAlias.json.apiVersion, 'certificates.k8s.io/v1', 'answered in the spelling asked');
  });

  t.test('setting the certificate needs sign on the signer (CertificateSigning)', async (t) => {
    const made = rsaCsr({ cn: 'alice' });
    await alice.post(CSRS, csrObject('sg-1', made.pem, 'example.com/my-signer', ['client auth']));
    await decide(s.as('approver'), 'sg-1');
    const csr = await getCsr(s.admin, 'sg-1');
    csr.status.certificate = b64(s.ca);
    expectStatus(t, await s.as('signer-sam').request('PUT', `${CSRS}/sg-1/status`, { body: csr }), 403, 'Forbidden', 'certificatesigningrequests.certificates.svc.io "sg-1" is forbidden: user not permitted to sign requests with signerName "example.com/my-signer"');
    const failed = await getCsr(s.admin, 'sg-1');
    failed.status.conditions.push({ type: 'Failed', status: 'True', reason: 'NoCapacity' });
    t.equal((await s.as('signer-sam').request('PUT', `${CSRS}/sg-1/status`, { body: failed })).status, 200, 'conditions without a certificate need no sign');
    await s.admin.post(`${RBAC}/clusterroles`, clusterRole('sam-signs', [rule(['sign'], CERTS, ['signers'], ['example.com/my-signer'])]));
    await s.admin.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding('sam-signs', 'sam-signs', [user('signer-sam')]));
    const again = await getCsr(s.admin, 'sg-1');
    again.status.certificate = b64('not a certificate');
    expectStatus(t, await s.as('signer-sam').request('PUT', `${CSRS}/sg-1/status`, { body: again }), 422, 'Invalid', /status\.certificate: Invalid value: "<certificate data>": must contain at least one CERTIFICATE PEM block/);
    again.status.certificate = b64(s.ca);
    t.equal((await s.as('signer-sam').request('PUT', `${CSRS}/sg-1/status`, { body: again })).status, 200, 'with sign the certificate is set');
  });

  t.test('a custom signer\'s request is never signed here', async (t) => {
    await alice.post(CSRS, csrObject('custom', rsaCsr({ cn: 'alice' }).pem, 'example.com/my-signer', ['client auth']));
    await decide(s.as('approver'), 'custom');
    await new Promise((r) => setTimeout(r, 500));
    t.notOk((await getCsr(s.admin, 'custom')).status.certificate);
  });

  t.test('the kube-apiserver-client signer issues a certificate that authenticates at once', async (t) => {
    const made = rsaCsr({ cn: 'carol', orgs: ['team-a', 'team-b'] });
    t.equal((await s.admin.post(CSRS, csrObject('carol', made.pem, 'svc.io/kube-apiserver-client', ['digital signature', 'key encipherment', 'client auth'], { expirationSeconds: 3600 }))).status, 201);
    t.equal((await decide(s.admin, 'carol')).status, 200);
    const csr = await settled(s.admin, 'carol');
    t.ok(csr?.status?.certificate, 'issued');
    const cert = issuedCert(csr);
    t.equal(cert.subject, 'CN=carol\nO=team-a\nO=team-b', 'the request\'s subject');
    t.ok(cert.checkIssued(new X509Certificate(s.ca)), 'issued by the cluster CA');
    t.same(cert.keyUsage, ['1.3.6.1.5.5.7.3.2'], 'client auth');
    t.notOk(cert.ca, 'not a CA');
    const lifetime = Date.parse(cert.validTo) - Date.now();
    t.ok(lifetime > 3500_000 && lifetime <= 3600_000, `lives expirationSeconds (${lifetime} ms left)`);
    t.ok(Date.now() - Date.parse(cert.validFrom) >= 299_000, 'backdated five minutes');
    const carol = s.anon.with({ cert: issuedPem(csr), key: made.keyPem });
    const who = await carol.post(WHOAMI, {});
    t.equal(who.status, 201);
    t.equal(who.json.status.userInfo.username, 'carol');
    t.same(who.json.status.userInfo.groups, ['team-a', 'team-b', 'system:authenticated']);
    carol.close();
    const table = await s.admin.get(CSRS, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
    t.same(table.json.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Age', 'SignerName', 'Requestor', 'RequestedDuration', 'Condition']);
    t.same(table.json.rows.find((r: { cells: string[] }) => r.cells[0] === 'carol').cells.slice(2), ['svc.io/kube-apiserver-client', 'admin', '60m', 'Approved,Issued']);
  });

  t.test('each built-in signer\'s rules: a Failed condition, nothing signed', async (t) => {
    const node = { cn: 'system:node:n1', orgs: ['system:nodes'] };
    const KC = 'svc.io/kube-apiserver-client-kubelet';
    const KS = 'kubernetes.io/kubelet-serving';
    const rows: [string, ReturnType<typeof rsaCsr>, string, string[], string | undefined][] = [
      ['kubelet client: a valid request is issued', rsaCsr(node), KC, ['digital signature', 'key encipherment', 'client auth'], undefined],
      ['kubelet client: ECDSA keys need no key encipherment', ecCsr(node), KC, ['digital signature', 'client auth'], undefined],
      ['kubelet client: organization must be system:nodes', rsaCsr({ cn: 'system:node:n1', orgs: ['other'] }), KC, ['digital signature', 'client auth'], 'subject organization is not system:nodes'],
      ['kubelet client: common name must be system:node:<name>', rsaCsr({ cn: 'n1', orgs: ['system:nodes'] }), KC, ['digital signature', 'client auth'], 'subject common name does not begin with system:node:'],
      ['kubelet client: no DNS names', rsaCsr({ ...node, dns: ['n1.example'] }), KC, ['digital signature', 'client auth'], 'DNS subjectAltNames are not allowed'],
      ['kubelet client: no IP addresses', rsaCsr({ ...node, ips: ['10.0.0.1'] }), KC, ['digital signature', 'client auth'], 'IP subjectAltNames are not allowed'],
      ['kubelet client: client usages only', rsaCsr(node), KC, ['digital signature', 'server auth'], 'usages did not match [client auth digital signature key encipherment]'],
      ['kubelet serving: a valid request is issued', rsaCsr({ ...node, dns: ['n1.example'], ips: ['10.0.0.1'] }), KS, ['digital signature', 'key encipherment', 'server auth'], undefined],
      ['kubelet serving: a DNS or IP name is required', rsaCsr(node), KS, ['digital signature', 'server auth'], 'DNS or IP subjectAltName is required'],
      ['kubelet serving: no email addresses', rsaCsr({ ...node, dns: ['n1'], emails: ['a@b.c'] }), KS, ['digital signature', 'server auth'], 'Email subjectAltNames are not allowed'],
      ['kubelet serving: serving usages only', rsaCsr({ ...node, dns: ['n1'] }), KS, ['digital signature', 'client auth'], 'usages did not match [digital signature key encipherment server auth]'],
      ['kube-apiserver-client: server auth is forbidden', rsaCsr({ cn: 'dave' }), 'svc.io/kube-apiserver-client', ['client auth', 'server auth'], 'invalid usage for client certificate: server auth'],
      ['kube-apiserver-client: client auth is required', rsaCsr({ cn: 'dave' }), 'svc.io/kube-apiserver-client', ['digital signature'], 'missing required usage for client certificate: client auth'],
    ];
    let i = 0;
    for (const [rule, made, signer, usages, failure] of rows) {
      const name = `sc-${i++}`;
      t.equal((await s.admin.post(CSRS, csrObject(name, made.pem, signer, usages))).status, 201, `${rule}: created`);
      // an admin approves by hand (the approving controller may have approved the kubelet client ones already)
      if (!condition(await getCsr(s.admin, name), 'Approved')) await decide(s.admin, name);
      const csr = await settled(s.admin, name);
      if (failure) {
        t.equal(condition(csr, 'Failed')?.reason, 'SignerValidationFailure', `${rule}: failed`);
        t.equal(condition(csr, 'Failed')?.message, failure, `${rule}: ${failure}`);
        t.notOk(csr?.status?.certificate, `${rule}: nothing signed`);
      } else {
        t.ok(csr?.status?.certificate, `${rule}: issued`);
        t.notOk(condition(csr, 'Failed'), `${rule}: not failed`);
      }
    }
    const serving = issuedCert(await getCsr(s.admin, 'sc-7'));
    t.equal(serving.subjectAltName, 'DNS:n1.example, IP Address:10.0.0.1', 'serving names copied from the request');
    t.same(serving.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'server auth');
  });

  t.test('a denied request is never signed', async (t) => {
    await s.admin.post(CSRS, csrObject('denied', rsaCsr({ cn: 'eve' }).pem, 'svc.io/kube-apiserver-client', ['client auth']));
    t.equal((await decide(s.admin, 'denied', 'Denied')).status, 200);
    await new Promise((r) => setTimeout(r, 500));
    t.notOk((await getCsr(s.admin, 'denied')).status.certificate);
  });
});

t.test('--cluster-signing-duration caps what a request asks for', async (t) => {
  const s = await startRbacServer([], ['--cluster-signing-duration=2h']);
  t.teardown(() => s.stop());
  const rows: [string, number | undefined, number][] = [
    ['no expirationSeconds: the signer\'s duration', undefined, 2 * 3600],
    ['more than the duration: the duration', 86400, 2 * 3600],
    ['less: what was asked', 1800, 1800],
  ];
  let i = 0;
  for (const [rule, asked, lives] of rows) {
    const name = `d-${i++}`;
    await s.admin.post(CSRS, csrObject(name, rsaCsr({ cn: 'x' }).pem, 'svc.io/kube-apiserver-client', ['client auth'], asked ? { expirationSeconds: asked } : {}));
    await decide(s.admin, name);
    const cert = issuedCert(await settled(s.admin, name));
    const left = (Date.parse(cert.validTo) - Date.now()) / 1000;
    t.ok(left > lives - 120 && left <= lives, `${rule}: ${Math.round(left)}s left, ${lives}s asked`);
  }
});

t.test('per-signer CA files: each signer signs with its own, the others not at all', async (t) => {
  const { makeCA } = await import('../helpers/pki.js');
  const { writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmp } = await import('../helpers/fixtures.js');
  const dir = tmp('signer-ca-');
  const ca = makeCA('client-signer');
  writeFileSync(join(dir, 'ca.crt'), ca.cert);
  writeFileSync(join(dir, 'ca.key'), ca.key);
  const s = await startRbacServer([], [`--cluster-signing-kube-apiserver-client-cert-file=${join(dir, 'ca.crt')}`, `--cluster-signing-kube-apiserver-client-key-file=${join(dir, 'ca.key')}`]);
  t.teardown(() => s.stop());
  await s.admin.post(CSRS, csrObject('own-ca', rsaCsr({ cn: 'x' }).pem, 'svc.io/kube-apiserver-client', ['client auth']));
  await decide(s.admin, 'own-ca');
  const cert = issuedCert(await settled(s.admin, 'own-ca'));
  t.ok(cert.checkIssued(new X509Certificate(ca.cert)), 'issued by the signer\'s own CA');
  t.notOk(cert.checkIssued(new X509Certificate(s.ca)), 'not by the cluster CA');
  await s.admin.post(CSRS, csrObject('no-ca', rsaCsr({ cn: 'system:node:n', orgs: ['system:nodes'], dns: ['n'] }).pem, 'svc.io/kubelet-serving', ['digital signature', 'server auth']));
  await decide(s.admin, 'no-ca');
  t.notOk(await waitFor(async () => !!(await getCsr(s.admin, 'no-ca')).status.certificate, 800), 'a signer without files does not sign');

  const { startServer } = await import('../helpers/server.js');
  await t.rejects(startServer([`--cluster-signing-cert-file=${join(dir, 'missing.crt')}`, `--cluster-signing-key-file=${join(dir, 'ca.key')}`]), { message: new RegExp(`error reading CA cert file "${join(dir, 'missing.crt')}"`) }, 'an unreadable CA file stops the start, named');
  writeFileSync(join(dir, 'other.key'), makeCA('other').key);
  await t.rejects(startServer([`--cluster-signing-cert-file=${join(dir, 'ca.crt')}`, `--cluster-signing-key-file=${join(dir, 'other.key')}`]), { message: /error reading CA key file ".*other\.key": the private key does not match the certificate/ }, 'a key of another certificate stops the start');
  const { parseFlags, FlagError } = await import('../../core/server/options.js');
  t.throws(() => parseFlags(['--cluster-signing-cert-file=a', '--cluster-signing-kubelet-serving-cert-file=b']), new FlagError('cannot specify default and per controller certs at the same time'));
});
