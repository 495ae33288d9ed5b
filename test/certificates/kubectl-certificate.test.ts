/**
 * kubectl v1.32, unmodified: `kubectl get csr` (columns), `kubectl create -f` of an upstream manifest,
 * and `kubectl certificate approve|deny` with the group-qualified name
 * (certificatesigningrequests.certificates.k8s.io/<name>), which kubectl maps to the upstream spelling
 * of the group and so gets the certificates.k8s.io objects its typed client insists on (protobuf
 * approval update). The bare name resolves to the first group serving the resource, certificates.svc.io,
 * which kubectl refuses: the README says to use the qualified form.
 */
import { join } from 'node:path';
import t from 'tap';
import { CSRS, condition, getCsr, settled } from '../helpers/certificates.js';
import { b64, csrObject, rsaCsr } from '../helpers/csr.js';
import { startSeeded, tmp } from '../helpers/fixtures.js';
import { ALICE_TOKEN } from '../helpers/server.js';
import { kubectlAsToken, kubectlRunner } from '../helpers/kubectl.js';

t.test('kubectl certificate approve and deny', async (t) => {
  const s = await startSeeded();
  t.teardown(() => s.stop());
  const home = tmp('svc-kubectl-csr-');
  const kubectl = kubectlRunner(join(s.dataDir, 'admin.kubeconfig'), home);
  for (const n of ['to-approve', 'to-deny', 'bare']) {
    t.equal((await s.admin.post(CSRS, csrObject(n, rsaCsr({ cn: n }).pem, 'svc.io/kube-apiserver-client', ['client auth']))).status, 201);
  }
  const manifest = ['apiVersion: certificates.k8s.io/v1', 'kind: CertificateSigningRequest', 'metadata:', '  name: from-file', 'spec:', `  request: ${b64(rsaCsr({ cn: 'file' }).pem)}`, '  signerName: kubernetes.io/kube-apiserver-client', '  expirationSeconds: 86400', '  usages: ["client auth"]', ''].join('\n');
  const created = await kubectl(['create', '-f', '-'], manifest);
  t.equal(created.code, 0, created.stderr);
  t.match(created.stdout, 'certificatesigningrequest.certificates.k8s.io/from-file created');

  const listed = await kubectl(['get', 'csr']);
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /^NAME\s+AGE\s+SIGNERNAME\s+REQUESTOR\s+REQUESTEDDURATION\s+CONDITION\n/);
  t.match(listed.stdout, /from-file\s+\S+\s+kubernetes\.io\/kube-apiserver-client\s+svc-admin\s+24h\s+Pending/);

  const approved = await kubectl(['certificate', 'approve', 'certificatesigningrequests.certificates.k8s.io/to-approve']);
  t.equal(approved.code, 0, approved.stderr);
  t.equal(approved.stdout.trim(), 'certificatesigningrequest.certificates.k8s.io/to-approve approved');
  const csr = await settled(s.admin, 'to-approve');
  t.equal(condition(csr, 'Approved')?.reason, 'KubectlApprove');
  t.ok(csr?.status?.certificate, 'and the signer issued it');

  const denied = await kubectl(['certificate', 'deny', 'certificatesigningrequests.certificates.k8s.io/to-deny']);
  t.equal(denied.code, 0, denied.stderr);
  t.equal(denied.stdout.trim(), 'certificatesigningrequest.certificates.k8s.io/to-deny denied');
  t.equal(condition(await getCsr(s.admin, 'to-deny'), 'Denied')?.reason, 'KubectlDeny');
  const twice = await kubectl(['certificate', 'approve', 'certificatesigningrequests.certificates.k8s.io/to-deny']);
  t.not(twice.code, 0, 'a denied request cannot be approved');
  t.match(twice.stderr, 'certificate signing request "to-deny" is already Denied');

  const explained = await kubectl(['explain', 'csr.spec.expirationSeconds']);
  t.equal(explained.code, 0, explained.stderr);
  t.match(explained.stdout, /GROUP:\s+certificates.svc.io\nKIND:\s+CertificateSigningRequest\n[\s\S]*FIELD: expirationSeconds <integer>[\s\S]*The validity asked for, in seconds/, 'kubectl explain reads the OpenAPI document');

  const described = await kubectl(['describe', 'certificatesigningrequests.certificates.k8s.io', 'to-approve']);
  t.equal(described.code, 0, described.stderr);
  t.match(described.stdout, /Requesting User:\s+admin\nSigner:\s+svc\.io\/kube-apiserver-client\nStatus:\s+Approved,Issued\nSubject:\n\s+Common Name:\s+to-approve/, 'upstream\'s CSR describer');

  const bare = await kubectl(['certificate', 'approve', 'bare']);
  t.not(bare.code, 0, 'the bare name resolves to certificates.svc.io first');
  t.match(bare.stderr, 'can only handle CertificateSigningRequest.certificates.k8s.io objects, got CertificateSigningRequest.certificates.svc.io');

  const alice = kubectlAsToken(home, s, 'alice', ALICE_TOKEN);
  const refused = await alice(['certificate', 'approve', 'certificatesigningrequests.certificates.k8s.io/bare']);
  t.not(refused.code, 0, 'alice may not approve');
  t.match(refused.stderr, /forbidden/);
  t.notOk(condition(await getCsr(s.admin, 'bare'), 'Approved'));
});
