/**
 * The certificates admission plugins (upstream's plugin/pkg/admission/certificates):
 *
 * - CertificateApproval: an update through `certificatesigningrequests/approval` needs the `approve`
 *   verb on `signers` in the certificates group, for the request's signer name or its domain's
 *   wildcard (`<domain>/*`);
 * - CertificateSigning: an update through `certificatesigningrequests/status` that changes
 *   status.certificate needs `sign` on the signer the same way;
 * - CertificateSubjectRestriction: a request for the kube-apiserver-client signer may not ask for
 *   the system:masters group;
 * - ClusterTrustBundleAttest: writing a ClusterTrustBundle for a signer needs `attest` on it (an
 *   update that changes neither the signer nor the bundle needs nothing).
 *
 * A built-in signer is checked under both its spellings (`svc.io/...` and upstream's
 * `kubernetes.io/...`), so roles written for upstream grant the same as roles written for this server.
 */
import { errors } from '../api/status.js';
import type { UserInfo } from '../api/types.js';
import type { Authorizer } from '../authz/authorizer.js';
import { isPromise } from '../api/maybe-async.js';
import { builtinSigner, KUBE_APISERVER_CLIENT } from '../certificates/signers.js';
import { parseCertificateRequestPem } from '../certificates/x509.js';
import { certificateSigningRequests, CERTIFICATES_GROUP, type Csr } from '../registry/certificates/certificatesigningrequests.js';
import type { ClusterTrustBundle } from '../registry/certificates/clustertrustbundles.js';
import { groupResourceOf, type ResourceType } from '../registry/resource-type.js';
import type { AdmissionAttributes, AdmissionPlugin } from './attributes.js';
import type { PluginMaker } from './factory.js';

const isCsr = (rt: ResourceType): boolean => rt.group === CERTIFICATES_GROUP && rt.plural === certificateSigningRequests.plural;
const isTrustBundle = (rt: ResourceType): boolean => rt.group === CERTIFICATES_GROUP && rt.plural === 'clustertrustbundles';

/** The names a signer answers to: itself, and a built-in signer's other spelling. */
function signerNames(name: string): string[] {
  const builtin = builtinSigner(name);
  if (!builtin) return [name];
  return [...new Set([name, builtin, builtin.replace(/^svc\.io\//, 'kubernetes.io/')])];
}

async function allowed(authz: Authorizer, user: UserInfo, verb: string, name: string): Promise<boolean> {
  const ask = async (resourceName: string): Promise<boolean> => {
    const d = authz.authorize({ user, verb, isResourceRequest: true, path: '', namespace: '', apiGroup: CERTIFICATES_GROUP, apiVersion: '*', resource: 'signers', subresource: '', name: resourceName });
    return (isPromise(d) ? await d : d).decision === 'allow';
  };
  for (const n of signerNames(name)) {
    if (await ask(n)) return true;
    // the domain's wildcard, `example.com/*`
    if (await ask(`${n.split('/')[0]}/*`)) return true;
  }
  return false;
}

/** upstream's IsAuthorizedForSignerName, refusing with its message when the user is not. */
async function requireSignerVerb(a: AdmissionAttributes, authorizer: Authorizer | undefined, verb: 'approve' | 'sign' | 'attest'): Promise<void> {
  const signer = (a.object as Csr | undefined)?.spec?.signerName ?? '';
  if (authorizer && (await allowed(authorizer, a.user, verb, signer))) return;
  // upstream's wording: `approve requests`, `sign requests`, but `attest for`
  const what = verb === 'attest' ? 'attest for' : `${verb} requests with`;
  throw errors.forbidden(groupResourceOf(a.rt), a.name, `user not permitted to ${what} signerName ${JSON.stringify(signer)}`);
}

export const certificateApproval: PluginMaker = (d) => ({
  name: 'CertificateApproval',
  handles: (op, rt, sub) => op === 'UPDATE' && sub === 'approval' && isCsr(rt),
  // checked against the new object, in case the write tries to change the signer too
  validate: (a) => requireSignerVerb(a, d.authorizer(), 'approve'),
});

export const certificateSigning: PluginMaker = (d) => ({
  name: 'CertificateSigning',
  handles: (op, rt, sub) => op === 'UPDATE' && sub === 'status' && isCsr(rt),
  async validate(a) {
    const before = (a.oldObject as Csr | undefined)?.status?.certificate ?? '';
    const after = (a.object as Csr | undefined)?.status?.certificate ?? '';
    if (before === after) return;
    await requireSignerVerb(a, d.authorizer(), 'sign');
  },
});

export const certificateSubjectRestriction: PluginMaker = (): AdmissionPlugin => ({
  name: 'CertificateSubjectRestriction',
  handles: (op, rt, sub) => op === 'CREATE' && sub === '' && isCsr(rt),
  validate(a) {
    const csr = a.object as Csr | undefined;
    if (builtinSigner(csr?.spec?.signerName) !== KUBE_APISERVER_CLIENT) return;
    let orgs: string[];
    try {
      orgs = parseCertificateRequestPem(Buffer.from(csr?.spec?.request ?? '', 'base64')).subject.organizations;
    } catch (e) {
      throw errors.forbidden(groupResourceOf(a.rt), a.name, (e as Error).message);
    }
    if (orgs.includes('system:masters')) throw errors.forbidden(groupResourceOf(a.rt), a.name, `use of ${csr!.spec!.signerName} signer with system:masters group is not allowed`);
  },
});

export const clusterTrustBundleAttest: PluginMaker = (d) => ({
  name: 'ClusterTrustBundleAttest',
  // with the gate off the kind is not served, and the plugin does nothing (upstream)
  handles: (op, rt, sub) => (op === 'CREATE' || op === 'UPDATE') && sub === '' && isTrustBundle(rt) && d.featureGates.ClusterTrustBundle === true,
  async validate(a) {
    const next = a.object as ClusterTrustBundle | undefined;
    const signer = next?.spec?.signerName ?? '';
    if (!signer) return;
    const old = a.oldObject as ClusterTrustBundle | undefined;
    // storage migration and garbage collection rewrite a bundle without changing what it says
    if (a.operation === 'UPDATE' && old && old.spec?.signerName === signer && old.spec?.trustBundle === next?.spec?.trustBundle) return;
    await requireSignerVerb(a, d.authorizer(), 'attest');
  },
});
