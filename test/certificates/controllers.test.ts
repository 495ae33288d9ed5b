/**
 * The approving controller and the cleaner on a real server. Approving: kubelet client requests are
 * approved when the requester may create certificatesigningrequests/nodeclient (a bootstrap token
 * user) or /selfnodeclient (a node renewing its own certificate), asked of the authorizer; a
 * permission granted after the request still approves it; other signers and non-node subjects are
 * never auto-approved. Cleaner: upstream's schedule (approved and issued, denied, failed: one hour;
 * pending: a day; an expired certificate at once), each pass run by the test's clock.
 */
import t from 'tap';
import type { ControllerClock } from '../../core/controllers/csr-cleaner.js';
import { issueClientCert } from '../../core/server/certs.js';
import { CSRS, condition, decide, getCsr, settled } from '../helpers/certificates.js';
import { csrObject, ecCsr, rsaCsr } from '../helpers/csr.js';
import { clusterRoleBinding, group, RBAC, startRbacServer } from '../helpers/rbac.js';
import { waitFor } from '../helpers/wait.js';

const NODECLIENT = 'system:certificates.svc.io:certificatesigningrequests:nodeclient';
const SELFNODECLIENT = 'system:certificates.svc.io:certificatesigningrequests:selfnodeclient';
const KUBELET_CLIENT = 'kubernetes.io/kube-apiserver-client-kubelet';
const CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];

t.test('the approving controller', async (t) => {
  const s = await startRbacServer([{ name: 'system:bootstrap:abcdef', groups: ['system:bootstrappers'] }, { name: 'plain' }]);
  t.teardown(() => s.stop());
  const boot = s.as('system:bootstrap:abcdef');
  // what kubeadm binds: bootstrappers may create requests
  t.equal((await s.admin.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding('bootstrappers-create', 'system:node-bootstrapper', [group('system:bootstrappers')]))).status, 201);
  await s.admin.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding('plain-create', 'system:node-bootstrapper', [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'plain' }]));

  t.test('a node client request waits until its requester may create nodeclient, then is approved', async (t) => {
    t.equal((await boot.post(CSRS, csrObject('node-1', ecCsr({ cn: 'system:node:node-1', orgs: ['system:nodes'] }).pem, KUBELET_CLIENT, ['digital signature', 'client auth']))).status, 201);
    t.notOk(await waitFor(async () => !!condition(await getCsr(s.admin, 'node-1'), 'Approved'), 1500), 'pending without the permission');
    t.equal((await s.admin.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding('auto-approve', NODECLIENT, [group('system:bootstrappers')]))).status, 201);
    t.ok(await waitFor(async () => !!condition(await getCsr(s.admin, 'node-1'), 'Approved'), 15_000), 'approved once granted');
    const csr = await settled(s.admin, 'node-1');
    const approved = condition(csr, 'Approved');
    t.same([approved.status, approved.reason, approved.message], ['True', 'AutoApproved', 'Auto approving kubelet client certificate after SubjectAccessReview.']);
    t.ok(csr.status.certificate, 'and signed');
  });

  t.test('what is never auto-approved', async (t) => {
    const rows: [string, string, string, string[]][] = [
      ['another signer', rsaCsr({ cn: 'system:node:n2', orgs: ['system:nodes'] }).pem, 'kubernetes.io/kube-apiserver-client', CLIENT_USAGES],
      ['a subject that is no node', rsaCsr({ cn: 'someone', orgs: ['system:nodes'] }).pem, KUBELET_CLIENT, CLIENT_USAGES],
      ['a node with extra groups', rsaCsr({ cn: 'system:node:n3', orgs: ['system:nodes', 'system:masters'] }).pem, KUBELET_CLIENT, CLIENT_USAGES],
      ['serving usages', rsaCsr({ cn: 'system:node:n4', orgs: ['system:nodes'] }).pem, KUBELET_CLIENT, ['digital signature', 'server auth']],
    ];
    let i = 0;
    for (const [rule, pem, signer, usages] of rows) t.equal((await boot.post(CSRS, csrObject(`never-${i++}`, pem, signer, usages))).status, 201, `${rule}: created`);
    t.equal((await s.as('plain').post(CSRS, csrObject('never-plain', rsaCsr({ cn: 'system:node:n5', orgs: ['system:nodes'] }).pem, KUBELET_CLIENT, CLIENT_USAGES))).status, 201);
    await new Promise((r) => setTimeout(r, 1500));
    for (let j = 0; j < rows.length; j++) t.notOk(condition(await getCsr(s.admin, `never-${j}`), 'Approved'), `${rows[j]![0]}: pending`);
    t.notOk(condition(await getCsr(s.admin, 'never-plain'), 'Approved'), 'a requester without nodeclient: pending');
  });

  t.test('a node renewing its own certificate needs selfnodeclient', async (t) => {
    const node = issueClientCert(s.dataDir, 'system:node:node-7', ['system:nodes']);
    const nodeClient = s.anon.with({ cert: node.cert, key: node.key });
    t.teardown(() => nodeClient.close());
    t.equal((await nodeClient.post(CSRS, csrObject('renew-7', rsaCsr({ cn: 'system:node:node-7', orgs: ['system:nodes'] }).pem, KUBELET_CLIENT, CLIENT_USAGES))).status, 201, 'nodes may create requests (Node authorizer)');
    t.notOk(await waitFor(async () => !!condition(await getCsr(s.admin, 'renew-7'), 'Approved'), 1500), 'pending without selfnodeclient');
    await s.admin.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding('auto-renew', SELFNODECLIENT, [group('system:nodes')]));
    t.ok(await waitFor(async () => !!condition(await getCsr(s.admin, 'renew-7'), 'Approved'), 15_000), 'approved');
    t.equal(condition(await getCsr(s.admin, 'renew-7'), 'Approved').message, 'Auto approving self kubelet client certificate after SubjectAccessReview.');
    t.equal((await nodeClient.post(CSRS, csrObject('other-node', rsaCsr({ cn: 'system:node:node-8', orgs: ['system:nodes'] }).pem, KUBELET_CLIENT, CLIENT_USAGES))).status, 201);
    t.notOk(await waitFor(async () => !!condition(await getCsr(s.admin, 'other-node'), 'Approved'), 1500), 'a request for another node is no renewal');
  });
});

/** A clock the test runs: now() is real time plus an offset; each cleaner pass runs when pass() says. */
class TestClock implements ControllerClock {
  offsetMs = 0;
  private pending: (() => void) | undefined;
  private armed: (() => void) | undefined;
  now = (): number => Date.now() + this.offsetMs;
  after = (_ms: number, fn: () => void): (() => void) => {
    this.pending = fn;
    this.armed?.();
    return () => {
      if (this.pending === fn) this.pending = undefined;
    };
  };
  /** Runs the cleaner's next pass and resolves once it finished (it set its next one). */
  async pass(): Promise<void> {
    await waitFor(() => this.pending !== undefined);
    const fn = this.pending!;
    this.pending = undefined;
    const next = new Promise<void>((r) => (this.armed = r));
    fn();
    await next;
  }
}

t.test('the cleaner, on upstream\'s schedule', async (t) => {
  const clock = new TestClock();
  const s = await startRbacServer([], ['--controllers=*,-csrapproving'], { certificatesClock: clock });
  t.teardown(() => s.stop());
  const make = async (name: string, o: { decide?: 'Approved' | 'Denied'; expirationSeconds?: number; signer?: string; usages?: string[] } = {}): Promise<void> => {
    const usages = o.usages ?? ['client auth'];
    t.equal((await s.admin.post(CSRS, csrObject(name, rsaCsr({ cn: name }).pem, o.signer ?? 'svc.io/kube-apiserver-client', usages, o.expirationSeconds ? { expirationSeconds: o.expirationSeconds } : {}))).status, 201);
    if (o.decide) t.equal((await decide(s.admin, name, o.decide)).status, 200);
  };
  await make('pending');
  await make('issued', { decide: 'Approved' });
  await make('short-lived', { decide: 'Approved', expirationSeconds: 600 });
  await make('denied', { decide: 'Denied' });
  await make('approved-unsigned', { decide: 'Approved', signer: 'example.com/elsewhere' });
  await make('failed', { decide: 'Approved', usages: ['client auth', 'server auth'] });
  t.ok(await settled(s.admin, 'issued'));
  t.ok(await settled(s.admin, 'short-lived'));
  t.ok(condition(await settled(s.admin, 'failed'), 'Failed'), 'the signer failed it');
  const exists = async (name: string): Promise<boolean> => (await s.admin.get(`${CSRS}/${name}`)).status === 200;
  const left = async (): Promise<string[]> => {
    const names: string[] = [];
    for (const n of ['pending', 'issued', 'short-lived', 'denied', 'failed', 'approved-unsigned']) if (await exists(n)) names.push(n);
    return names;
  };

  await clock.pass();
  t.same(await left(), ['pending', 'issued', 'short-lived', 'denied', 'failed', 'approved-unsigned'], 'a pass now deletes nothing');
  clock.offsetMs = 20 * 60_000;
  await clock.pass();
  t.ok(await waitFor(async () => !(await exists('short-lived'))), 'twenty minutes on: the request whose certificate expired is gone');
  t.same(await left(), ['pending', 'issued', 'denied', 'failed', 'approved-unsigned'], 'the others stay');
  clock.offsetMs = 61 * 60_000 + 30_000;
  await clock.pass();
  t.ok(await waitFor(async () => (await left()).join() === 'pending,approved-unsigned'), `an hour on: issued, denied and failed are gone (${(await left()).join()})`);
  clock.offsetMs = 23 * 3600_000;
  await clock.pass();
  t.same(await left(), ['pending', 'approved-unsigned'], 'pending for less than a day, approved without a certificate: kept');
  clock.offsetMs = 24 * 3600_000 + 60_000;
  await clock.pass();
  t.ok(await waitFor(async () => (await left()).join() === 'approved-unsigned'), 'a day on: the pending request is gone; an approved one waiting for its signer stays');
});
