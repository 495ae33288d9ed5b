/**
 * The approving controller (upstream's csrapproving): a pending request for the kubelet client
 * signer (`system:node:<name>` in `system:nodes`, client usages) is approved when its requester may
 * `create` `certificatesigningrequests/selfnodeclient` (a node renewing its own certificate: the
 * requester is the subject) or `certificatesigningrequests/nodeclient` (a bootstrap token asking for
 * a new node), asked of the server's authorizer as a SubjectAccessReview for the recorded requester
 * would be. Anything else is left for a person (or another approver); a recognized request whose
 * requester is not allowed is looked at again later, as upstream retries it.
 */
import { isPromise } from '../api/maybe-async.js';
import type { ApiObject } from '../api/types.js';
import type { Authorizer } from '../authz/authorizer.js';
import { builtinSigner, KUBE_APISERVER_CLIENT_KUBELET, kubeletClientProblem } from '../certificates/signers.js';
import { type CertificateRequest, parseCertificateRequestPem } from '../certificates/x509.js';
import { CERTIFICATES_GROUP, type Csr } from '../registry/certificates/certificatesigningrequests.js';
import type { TypedClient } from '../registry/client.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import { hasTrueCondition } from './csr-signing.js';
import { WorkQueue } from './queue.js';

interface Recognizer {
  subresource: 'selfnodeclient' | 'nodeclient';
  recognize(csr: Csr, req: CertificateRequest): boolean;
  message: string;
}

const isNodeClientCert = (csr: Csr, req: CertificateRequest): boolean =>
  builtinSigner(csr.spec?.signerName) === KUBE_APISERVER_CLIENT_KUBELET && kubeletClientProblem(req, new Set(csr.spec?.usages ?? [])) === undefined;

const RECOGNIZERS: readonly Recognizer[] = [
  {
    subresource: 'selfnodeclient',
    recognize: (csr, req) => csr.spec?.username === req.subject.commonName && isNodeClientCert(csr, req),
    message: 'Auto approving self kubelet client certificate after SubjectAccessReview.',
  },
  { subresource: 'nodeclient', recognize: isNodeClientCert, message: 'Auto approving kubelet client certificate after SubjectAccessReview.' },
];

const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 5 * 60_000;

export class CsrApprovingController {
  private readonly queue: WorkQueue;
  private readonly retries = new Map<string, number>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly client: TypedClient,
    private readonly csrs: Lister,
    private readonly csrType: ResourceType,
    private readonly authorizer: () => Authorizer | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.queue = new WorkQueue('csrapproving', (name) => this.sync(name));
  }

  start(): void {
    this.unsubscribe = this.csrs.onChange((ev) => {
      if (ev.type === 'DELETED') this.retries.delete(ev.object.metadata.name!);
      else this.queue.add(ev.object.metadata.name!);
    });
    for (const c of this.csrs.list()) this.queue.add(c.metadata.name!);
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  private async allowed(csr: Csr, subresource: string): Promise<boolean> {
    const authz = this.authorizer();
    if (!authz) return false;
    const spec = csr.spec ?? {};
    const user = { username: spec.username ?? '', groups: [...(spec.groups ?? [])], ...(spec.uid ? { uid: spec.uid } : {}), ...(spec.extra ? { extra: structuredClone(spec.extra) } : {}) };
    const d = authz.authorize({ user, verb: 'create', isResourceRequest: true, path: '', namespace: '', apiGroup: CERTIFICATES_GROUP, apiVersion: '*', resource: 'certificatesigningrequests', subresource, name: '' });
    return (isPromise(d) ? await d : d).decision === 'allow';
  }

  private async sync(name: string): Promise<void> {
    const live = this.csrs.get('', name) as Csr | undefined;
    if (!live || live.status?.certificate || hasTrueCondition(live, 'Approved') || hasTrueCondition(live, 'Denied')) return;
    let req: CertificateRequest;
    try {
      req = parseCertificateRequestPem(Buffer.from(live.spec?.request ?? '', 'base64'));
    } catch {
      return;
    }
    let tried = false;
    for (const r of RECOGNIZERS) {
      if (!r.recognize(live, req)) continue;
      tried = true;
      if (!(await this.allowed(live, r.subresource))) continue;
      const csr = structuredClone(live) as Csr;
      csr.status ??= {};
      (csr.status.conditions ??= []).push({ type: 'Approved', status: 'True', reason: 'AutoApproved', message: r.message, lastUpdateTime: new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z') });
      await this.client.update(this.csrType, csr as ApiObject, { subresource: 'approval' });
      this.retries.delete(name);
      return;
    }
    if (tried) {
      // the requester may be granted the permission later (a binding created after the request)
      const n = (this.retries.get(name) ?? 0) + 1;
      this.retries.set(name, n);
      this.queue.addAfter(name, Math.min(RETRY_BASE_MS * 2 ** (n - 1), RETRY_MAX_MS));
    }
  }
}
