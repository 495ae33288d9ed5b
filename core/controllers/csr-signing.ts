/**
 * The signing controller (upstream's csrsigning): an approved, not failed request for a built-in
 * signer that has a CA here is checked against that signer's rules and answered through the status
 * subresource: the issued certificate (PEM) in status.certificate, or a Failed condition
 * (SignerValidationFailure) saying which rule the request breaks. Its lifetime is the signer's
 * --cluster-signing-duration, shortened by spec.expirationSeconds. Requests for other signers are
 * left to whoever signs them.
 */
import type { ApiObject } from '../api/types.js';
import type { SignerConfig } from '../certificates/options.js';
import { builtinSigner, certificateDurationMs, signerProblem, validityWindow } from '../certificates/signers.js';
import { issueCertificate, parseCertificateRequestPem, toPem } from '../certificates/x509.js';
import type { Csr } from '../registry/certificates/certificatesigningrequests.js';
import type { TypedClient } from '../registry/client.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import { controllerIdentity } from './identity.js';
import { WorkQueue } from './queue.js';

/** The account upstream's three certificate controllers run as. */
export const certificateControllerIdentity = controllerIdentity('certificate-controller');

const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export const hasTrueCondition = (csr: Csr, type: string): boolean => (csr.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
/** upstream's IsCertificateRequestApproved: Approved and not Denied. */
export const isApproved = (csr: Csr): boolean => hasTrueCondition(csr, 'Approved') && !hasTrueCondition(csr, 'Denied');

export class CsrSigningController {
  private readonly queue: WorkQueue;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly client: TypedClient,
    private readonly csrs: Lister,
    private readonly csrType: ResourceType,
    private readonly signers: SignerConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.queue = new WorkQueue('csrsigning', (name) => this.sync(name));
  }

  start(): void {
    this.unsubscribe = this.csrs.onChange((ev) => {
      if (ev.type !== 'DELETED') this.queue.add(ev.object.metadata.name!);
    });
    for (const c of this.csrs.list()) this.queue.add(c.metadata.name!);
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  private async sync(name: string): Promise<void> {
    const live = this.csrs.get('', name) as Csr | undefined;
    if (!live || !isApproved(live) || hasTrueCondition(live, 'Failed') || live.status?.certificate) return;
    const signer = builtinSigner(live.spec?.signerName);
    const ca = signer && this.signers.cas[signer];
    if (!signer || !ca) return;
    const csr = structuredClone(live) as Csr;
    // the request was checked when it was created; a parse failure here is not the requester's to fix
    const req = parseCertificateRequestPem(Buffer.from(csr.spec?.request ?? '', 'base64'));
    const usages = csr.spec?.usages ?? [];
    const problem = signerProblem(signer, req, usages);
    csr.status ??= {};
    if (problem) {
      (csr.status.conditions ??= []).push({ type: 'Failed', status: 'True', reason: 'SignerValidationFailure', message: problem, lastUpdateTime: rfc3339(this.now()) });
    } else {
      const now = this.now();
      const window = validityWindow(now, certificateDurationMs(this.signers.durationMs, csr.spec?.expirationSeconds), Date.parse(ca.cert.validTo));
      const der = issueCertificate(ca, req, { usages, ...window });
      csr.status.certificate = Buffer.from(toPem('CERTIFICATE', der)).toString('base64');
    }
    await this.client.update(this.csrType, csr as ApiObject, { subresource: 'status' });
  }
}
