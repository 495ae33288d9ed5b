/**
 * The whole join, end to end on a real server with its default authorization (Node,RBAC): a bootstrap
 * token Secret and the bindings kubeadm makes for it; a new node authenticating with the token
 * generates its own key (node-forge), asks the kubelet client signer for a certificate through the
 * upstream group spelling (as a kubelet does), is approved by the approving controller and signed by
 * the signing controller; then it reconnects with the signed certificate and is system:node:<name>
 * in system:nodes, and renews that certificate as itself (selfnodeclient).
 */
import t from 'tap';
import { condition, WHOAMI } from '../helpers/certificates.js';
import { csrObject, rsaCsr } from '../helpers/csr.js';
import { startSeeded } from '../helpers/fixtures.js';
import { clusterRoleBinding, group, RBAC } from '../helpers/rbac.js';
import { waitFor } from '../helpers/wait.js';

const UPSTREAM_CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
const TOKEN_GROUP = 'system:bootstrappers:svc:default-node-token';

t.test('a bootstrap token becomes a node client certificate', async (t) => {
  const s = await startSeeded(['--enable-bootstrap-token-auth']);
  t.teardown(() => s.stop());

  // the operator: a token, and kubeadm's three bindings
  const secret = {
    metadata: { name: 'bootstrap-token-abcdef', namespace: 'svc-system' },
    type: 'bootstrap.svc.io/token',
    stringData: { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'true', 'auth-extra-groups': TOKEN_GROUP },
  };
  t.equal((await s.admin.post('/api/v1/namespaces/svc-system/secrets', secret)).status, 201);
  for (const [name, role, subject] of [
    ['svc:kubelet-bootstrap', 'system:node-bootstrapper', TOKEN_GROUP],
    ['svc:node-autoapprove-bootstrap', 'system:certificates.svc.io:certificatesigningrequests:nodeclient', TOKEN_GROUP],
    ['svc:node-autoapprove-certificate-rotation', 'system:certificates.svc.io:certificatesigningrequests:selfnodeclient', 'system:nodes'],
  ] as const) {
    t.equal((await s.admin.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding(name, role, [group(subject)]))).status, 201, name);
  }

  // the joining node
  const boot = s.anon.with({ token: 'abcdef.0123456789abcdef' });
  t.teardown(() => boot.close());
  const who = await boot.post(WHOAMI, {});
  t.equal(who.json?.status?.userInfo?.username, 'system:bootstrap:abcdef', 'the token authenticates');
  const made = rsaCsr({ cn: 'system:node:worker-1', orgs: ['system:nodes'] });
  const created = await boot.post(UPSTREAM_CSRS, { ...csrObject('', made.pem, 'kubernetes.io/kube-apiserver-client-kubelet', ['digital signature', 'key encipherment', 'client auth'], {}, 'certificates.k8s.io/v1'), metadata: { generateName: 'node-csr-' } });
  t.equal(created.status, 201, created.text.slice(0, 300));
  t.equal(created.json.apiVersion, 'certificates.k8s.io/v1');
  const name = created.json.metadata.name as string;
  t.equal(created.json.spec.username, 'system:bootstrap:abcdef', 'the requester is recorded');
  t.same(created.json.spec.groups, ['system:bootstrappers', TOKEN_GROUP, 'system:authenticated']);

  let csr: { status?: { certificate?: string } } | undefined;
  t.ok(
    await waitFor(async () => {
      csr = (await boot.get(`${UPSTREAM_CSRS}/${name}`)).json;
      return !!csr?.status?.certificate;
    }, 20_000),
    'approved and issued, with nobody else acting',
  );
  t.equal(condition(csr, 'Approved')?.reason, 'AutoApproved');

  const certPem = Buffer.from(csr!.status!.certificate!, 'base64').toString();
  const node = s.anon.with({ cert: certPem, key: made.keyPem });
  t.teardown(() => node.close());
  const me = await node.post(WHOAMI, {});
  t.equal(me.status, 201);
  t.equal(me.json.status.userInfo.username, 'system:node:worker-1', 'the node is who its certificate says');
  t.same(me.json.status.userInfo.groups, ['system:nodes', 'system:authenticated']);
  t.equal((await node.get(UPSTREAM_CSRS)).status, 200, 'and may do what nodes do (Node authorizer: list requests)');

  // rotation: the node asks for a new certificate as itself
  const renewal = rsaCsr({ cn: 'system:node:worker-1', orgs: ['system:nodes'] });
  const again = await node.post(UPSTREAM_CSRS, csrObject('worker-1-renewal', renewal.pem, 'kubernetes.io/kube-apiserver-client-kubelet', ['digital signature', 'client auth'], {}, 'certificates.k8s.io/v1'));
  t.equal(again.status, 201);
  t.ok(
    await waitFor(async () => {
      csr = (await node.get(`${UPSTREAM_CSRS}/worker-1-renewal`)).json;
      return !!csr?.status?.certificate;
    }, 20_000),
    'renewal approved and issued',
  );
  t.equal((condition(csr, 'Approved') as { message: string }).message, 'Auto approving self kubelet client certificate after SubjectAccessReview.');
  const renewed = s.anon.with({ cert: Buffer.from(csr!.status!.certificate!, 'base64').toString(), key: renewal.keyPem });
  t.teardown(() => renewed.close());
  t.equal((await renewed.post(WHOAMI, {})).json.status.userInfo.username, 'system:node:worker-1', 'the renewed certificate works');

  // the token cannot approve anything itself
  const approve = await boot.request('PUT', `${UPSTREAM_CSRS}/${name}/approval`, { body: (await boot.get(`${UPSTREAM_CSRS}/${name}`)).json });
  t.equal(approve.status, 403, 'a bootstrap token may not use the approval subresource');
});
