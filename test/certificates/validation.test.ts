/**
 * CertificateSigningRequest validation and strategy as upstream v1.32 has them, table-driven over the
 * kind's own hooks: the request PEM and its signature (RSA by node-forge, ECDSA by openssl), usages,
 * signer names, expirationSeconds, conditions, status.certificate, the requester recorded on create,
 * and what each endpoint (main resource, status, approval) may change.
 */
import t from 'tap';
import type { FieldError } from '../../core/api/field-errors.js';
import type { ApiObject } from '../../core/api/types.js';
import { certificateSigningRequests as csrs, type Csr, csrCondition, validateSignerName } from '../../core/registry/certificates/certificatesigningrequests.js';
import { issueCertificate, parseCertificateRequestPem, toPem } from '../../core/certificates/x509.js';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { b64, ecCsr, rsaCsr, tamperedSignature } from '../helpers/csr.js';
import { makeCA } from '../helpers/pki.js';

const rsa = rsaCsr({ cn: 'alice', orgs: ['dev'] });
const ec = ecCsr({ cn: 'system:node:n1', orgs: ['system:nodes'] });
const other = rsaCsr({ cn: 'mallory' });

const base = (spec: Record<string, unknown> = {}): Csr =>
  ({ apiVersion: 'certificates.svc.io/v1', kind: 'CertificateSigningRequest', metadata: { name: 'x' }, spec: { request: b64(rsa.pem), signerName: 'svc.io/kube-apiserver-client', usages: ['client auth'], ...spec } }) as Csr;

const render = (errs: FieldError[]): string[] => errs.map((e) => `${e.field}: ${e.type}${e.detail ? `: ${e.detail}` : ''}`);

/** The second request's signature spliced onto the first's body: each half is well formed, the whole does not verify. */
function mismatched(): string {
  const a = parseCertificateRequestPem(rsa.pem);
  const b = parseCertificateRequestPem(other.pem);
  const der = Buffer.from(a.raw);
  const sigAt = der.length - a.signature.length;
  b.signature.copy(der, sigAt);
  return toPem('CERTIFICATE REQUEST', der);
}

t.test('create validation, one rule a row', async (t) => {
  const rows: [string, Csr, string[]][] = [
    ['an RSA request signed by its key is valid', base(), []],
    ['an ECDSA P-256 request (as kubelets send) is valid', base({ request: b64(ec.pem) }), []],
    ['upstream signer names are accepted', base({ signerName: 'kubernetes.io/kube-apiserver-client' }), []],
    ['a custom signer is accepted', base({ signerName: 'example.com/my-signer' }), []],
    ['garbage is no PEM', base({ request: b64('not a pem at all') }), ['spec.request: FieldValueInvalid: PEM block type must be CERTIFICATE REQUEST']],
    ['a PEM of another type', base({ request: b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n') }), ['spec.request: FieldValueInvalid: PEM block type must be CERTIFICATE REQUEST']],
    ['a CERTIFICATE REQUEST block that is no DER', base({ request: b64('-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n') }), ['spec.request: FieldValueInvalid: x509: malformed certificate request']],
    ['a request whose signature does not verify (one byte changed)', base({ request: b64(tamperedSignature(rsa.pem)) }), ['spec.request: FieldValueInvalid: crypto/rsa: verification error']],
    ['a request carrying another key\'s signature', base({ request: b64(mismatched()) }), ['spec.request: FieldValueInvalid: crypto/rsa: verification error']],
    ['an ECDSA request whose signature does not verify', base({ request: b64(tamperedSignature(ec.pem)) }), ['spec.request: FieldValueInvalid: x509: ECDSA verification failure']],
    ['usages are required', base({ usages: [] }), ['spec.usages: FieldValueRequired']],
    ['an unknown usage', base({ usages: ['client auth', 'flying'] }), ['spec.usages[1]: FieldValueNotSupported']],
    ['a duplicate usage', base({ usages: ['client auth', 'client auth'] }), ['spec.usages[1]: FieldValueDuplicate']],
    ['signerName is required', base({ signerName: '' }), ['spec.signerName: FieldValueRequired']],
    ['a signerName without a path', base({ signerName: 'example.com' }), ["spec.signerName: FieldValueInvalid: must be a fully qualified domain and path of the form 'example.com/signer-name'"]],
    ['a signerName whose domain has one label', base({ signerName: 'example/signer' }), ['spec.signerName: FieldValueInvalid: should be a domain with at least two segments separated by dots']],
    ['a signerName with an invalid label', base({ signerName: 'Example.com/signer' }), ['spec.signerName: FieldValueInvalid: validating label "Example"']],
    ['legacy-unknown cannot be created through v1', base({ signerName: 'svc.io/legacy-unknown' }), ['spec.signerName: FieldValueInvalid: the legacy signerName is not allowed via this API version']],
    ['nor in upstream spelling', base({ signerName: 'kubernetes.io/legacy-unknown' }), ['spec.signerName: FieldValueInvalid: the legacy signerName is not allowed via this API version']],
    ['expirationSeconds of 599 is too short', base({ expirationSeconds: 599 }), ['spec.expirationSeconds: FieldValueInvalid: may not specify a duration less than 600 seconds (10 minutes)']],
    ['expirationSeconds of 600 is enough', base({ expirationSeconds: 600 }), []],
  ];
  for (const [rule, obj, want] of rows) {
    csrs.prepareForCreate!(obj as ApiObject, { username: 'alice', groups: ['dev'] });
    const got = render(csrs.validateCreate!(obj as ApiObject));
    t.equal(got.length, want.length, `${rule}: ${got.join(' | ') || 'valid'}`);
    want.forEach((w, i) => t.ok(got[i]?.startsWith(w), `${rule}: ${got[i]} starts with ${w}`));
  }
});

t.test('create records the requester and starts with an empty status, whatever was sent', async (t) => {
  const obj = base({ username: 'admin', uid: 'forged', groups: ['system:masters'], extra: { a: ['b'] } });
  (obj as Csr).status = { conditions: [{ type: 'Approved', status: 'True' }], certificate: b64('x') };
  csrs.prepareForCreate!(obj as ApiObject, { username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers', 'system:authenticated'], extra: { scopes: ['x'] } });
  t.same(obj.spec, { request: b64(rsa.pem), signerName: 'svc.io/kube-apiserver-client', usages: ['client auth'], username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers', 'system:authenticated'], extra: { scopes: ['x'] } });
  t.same(obj.status, {});
});

t.test('signer name rules (upstream ValidateSignerName)', async (t) => {
  t.same(validateSignerName('p', 'a.b/c.d'), []);
  t.same(
    validateSignerName('p', `${'a'.repeat(63)}.com/${Array(4).fill('b'.repeat(60)).join('.')}`).map((e) => `${e.type} ${e.detail}`),
    ['FieldValueTooLong may not be more than 185 bytes'],
    'domain and path together fit a subdomain',
  );
  t.equal(validateSignerName('p', 'a.b/c/d')[0]?.detail, "must be a fully qualified domain and path of the form 'example.com/signer-name'");
});

function stored(conditions: Csr['status'] extends infer S ? (S extends { conditions?: infer C } ? C : never) : never = [], certificate?: string): Csr {
  const o = base();
  csrs.prepareForCreate!(o as ApiObject, { username: 'alice', groups: [] });
  o.status = { ...(conditions?.length ? { conditions } : {}), ...(certificate ? { certificate } : {}) };
  return o;
}

const update = (hooks: { prepareForUpdate?(n: ApiObject, o: ApiObject): void; validateUpdate?(n: ApiObject, o: ApiObject): FieldError[] }, next: Csr, old: Csr): string[] => {
  hooks.prepareForUpdate?.(next as ApiObject, old as ApiObject);
  return render(hooks.validateUpdate!(next as ApiObject, old as ApiObject));
};

const approved = { type: 'Approved', status: 'True', reason: 'r', lastUpdateTime: '2024-01-01T00:00:00Z', lastTransitionTime: '2024-01-01T00:00:00Z' };
const denied = { type: 'Denied', status: 'True', reason: 'r', lastUpdateTime: '2024-01-01T00:00:00Z', lastTransitionTime: '2024-01-01T00:00:00Z' };
const failed = { type: 'Failed', status: 'True', reason: 'r', lastUpdateTime: '2024-01-01T00:00:00Z', lastTransitionTime: '2024-01-01T00:00:00Z' };

t.test('the approval subresource: conditions only, Approved and Denied exclusive, never removed', async (t) => {
  const approval = csrs.subresources!.approval!;
  const rows: [string, Csr, Csr, string[]][] = [
    ['adding Approved', stored(), stored([approved]), []],
    ['adding Denied', stored(), stored([denied]), []],
    ['Approved with False', stored(), stored([{ ...approved, status: 'False' }]), ['status.conditions[0].status: FieldValueNotSupported: supported values: "True"']],
    ['a condition without a status', stored(), stored([{ ...approved, status: '' }]), ['status.conditions[0].status: FieldValueRequired']],
    ['a condition without a type', stored(), stored([{ ...approved, type: '' }]), ['status.conditions[0].type: FieldValueRequired']],
    ['Approved and Denied together', stored(), stored([approved, denied]), ['status.conditions[1].type: FieldValueInvalid: Approved and Denied conditions are mutually exclusive']],
    ['two Approved conditions', stored(), stored([approved, approved]), ['status.conditions[1].type: FieldValueDuplicate']],
    ['removing Approved', stored([approved]), stored([]), ['status.conditions: FieldValueForbidden: updates may not remove a condition of type "Approved"']],
    ['Denied after Approved', stored([approved]), stored([approved, denied]), ['status.conditions[1].type: FieldValueInvalid: Approved and Denied conditions are mutually exclusive']],
    ['a custom condition with status Unknown', stored(), stored([{ ...approved, type: 'Custom', status: 'Unknown' }]), []],
  ];
  for (const [rule, old, next, want] of rows) t.same(update(approval, next, old), want, rule);

  const certified = stored([], b64('ignored'));
  const next = stored([approved]);
  next.spec!.signerName = 'example.com/changed';
  approval.prepareForUpdate!(next as ApiObject, certified as ApiObject);
  t.equal(next.spec?.signerName, 'svc.io/kube-apiserver-client', 'the spec is kept');
  t.equal(next.status?.certificate, b64('ignored'), 'the certificate is kept');
  const fresh = stored();
  const cond = stored([{ type: 'Approved', status: 'True' }]);
  approval.prepareForUpdate!(cond as ApiObject, fresh as ApiObject);
  t.ok(cond.status!.conditions![0]!.lastUpdateTime && cond.status!.conditions![0]!.lastTransitionTime, 'condition times are filled in');
});

t.test('the status subresource: the certificate once, Failed never removed, approvals untouched', async (t) => {
  const status = csrs.subresources!.status!;
  const ca = makeCA('signer-ca');
  const req = parseCertificateRequestPem(rsa.pem);
  const der = issueCertificate({ cert: new X509Certificate(ca.cert), key: createPrivateKey(ca.key) }, req, { usages: ['client auth'], notBefore: new Date(), notAfter: new Date(Date.now() + 3600_000) });
  const cert = b64(toPem('CERTIFICATE', der));
  const rows: [string, Csr, Csr, string[]][] = [
    ['setting the certificate', stored([approved]), stored([approved], cert), []],
    ['a certificate and intermediates', stored([approved]), stored([approved], b64(toPem('CERTIFICATE', der) + toPem('CERTIFICATE', der))), []],
    ['a certificate that is no PEM', stored([approved]), stored([approved], b64('garbage')), ['status.certificate: FieldValueInvalid: must contain at least one CERTIFICATE PEM block']],
    ['a key instead of a certificate', stored([approved]), stored([approved], b64('-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n')), ['status.certificate: FieldValueInvalid: only CERTIFICATE PEM blocks are allowed, found "RSA PRIVATE KEY"']],
    ['a CERTIFICATE block that is no certificate', stored([approved]), stored([approved], b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')), ['status.certificate: FieldValueInvalid: x509: malformed certificate']],
    ['changing an issued certificate', stored([approved], cert), stored([approved], b64(toPem('CERTIFICATE', der).replace('\n', '\n\n'))), ['status.certificate: FieldValueForbidden: updates may not modify existing certificate content']],
    ['adding Failed', stored([approved]), stored([approved, failed]), []],
    ['removing Failed', stored([approved, failed]), stored([approved]), ['status.conditions: FieldValueForbidden: updates may not remove a condition of type "Failed"']],
    ['adding Approved through status', stored(), stored([approved]), ['status.conditions: FieldValueForbidden: updates may not add a condition of type "Approved"']],
  ];
  for (const [rule, old, next, want] of rows) t.same(update(status, next, old), want, rule);
  const old = stored([approved]);
  const next = stored([{ ...approved, reason: 'rewritten' }]);
  t.same(update(status, next, old), [], 'a changed Approved condition is put back as stored');
  t.equal(next.status?.conditions?.[0]?.reason, 'r');
});

t.test('the main resource keeps spec and status', async (t) => {
  const old = stored([approved]);
  const next = stored();
  next.spec!.usages = ['server auth'];
  next.metadata.labels = { a: 'b' };
  t.same(update(csrs, next, old), []);
  t.same(next.spec?.usages, ['client auth']);
  t.same(next.status, old.status);
});

t.test('the CONDITION column, as kubectl prints it', async (t) => {
  t.equal(csrCondition(stored()), 'Pending');
  t.equal(csrCondition(stored([approved])), 'Approved');
  t.equal(csrCondition(stored([approved], b64('c'))), 'Approved,Issued');
  t.equal(csrCondition(stored([approved, failed])), 'Approved,Failed');
  t.equal(csrCondition(stored([denied])), 'Denied');
});
