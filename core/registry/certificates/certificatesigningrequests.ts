/**
 * CertificateSigningRequest (certificates.svc.io/v1, cluster-scoped, short name `csr`): a PKCS#10
 * request for a certificate from a named signer, approved or denied through the `approval`
 * subresource and answered by the signer through `status` (status.certificate). Rules and messages
 * follow upstream v1.32's validation and strategy: the request must be a CERTIFICATE REQUEST whose
 * signature verifies, usages known and unique, a qualified signer name (legacy-unknown only for
 * objects already holding it), expirationSeconds at least 600, Approved/Denied/Failed conditions
 * only True, Approved and Denied exclusive and never removed, status.certificate CERTIFICATE blocks
 * only. The requester's identity is recorded on create; ordinary updates keep spec and status, the
 * status subresource keeps spec and the approval conditions, approval keeps all but the conditions.
 * Who may approve or sign is admission's business (core/admission/certificates.ts).
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { humanDuration, metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import type { ApiObject, UserInfo } from '../../api/types.js';
import { isDNS1123Label, jsonEqual } from '../../api/validation.js';
import { builtinSigner, isLegacyUnknown } from '../../certificates/signers.js';
import { checkRequestSignature, parseCertificateRequestPem, validateCertificateBundle } from '../../certificates/x509.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType, SubresourceType } from '../resource-type.js';

export const CERTIFICATES_GROUP = 'certificates.svc.io';

export interface CsrCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

export interface CsrSpec {
  request?: string;
  signerName?: string;
  expirationSeconds?: number;
  usages?: string[];
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface Csr extends ApiObject {
  spec?: CsrSpec;
  status?: { conditions?: CsrCondition[]; certificate?: string };
}

const API = 'io.svc.api.certificates.v1';

const conditionSchema = s.struct(
  `${API}.CertificateSigningRequestCondition`,
  {
    type: s.string({ always: true, description: 'Approved, Denied or Failed (each only with status True), or another type.' }),
    status: s.string({ always: true, description: 'True, False or Unknown.' }),
    reason: s.string({ description: 'A brief machine-readable reason for the condition.' }),
    message: s.string({ description: 'Details for people.' }),
    lastUpdateTime: s.time({ description: 'When the condition was last updated.' }),
    lastTransitionTime: s.time({ description: 'When the condition last changed status.' }),
  },
  { required: ['type', 'status'], typeDescription: 'One condition of a certificate signing request.' },
);

export const csrSchema = objectSchema(
  `${API}.CertificateSigningRequest`,
  {
    spec: s.struct(
      `${API}.CertificateSigningRequestSpec`,
      {
        request: s.bytes({ always: true, description: 'A PEM-encoded PKCS#10 CERTIFICATE REQUEST, signed by the key it names.' }),
        signerName: s.string({ always: true, description: 'The signer asked to sign: svc.io/kube-apiserver-client, svc.io/kube-apiserver-client-kubelet, svc.io/kubelet-serving, or a custom <domain>/<path>.' }),
        expirationSeconds: s.int32({ ptr: true, description: 'The validity asked for, in seconds (at least 600); signers may grant less.' }),
        usages: s.list(s.string(), { listType: 'atomic', description: 'Key usages asked for in the issued certificate (digital signature, key encipherment, client auth, server auth, ...).' }),
        username: s.string({ description: 'Who created the request (set by the server).' }),
        uid: s.string({ description: 'The UID of who created the request (set by the server).' }),
        groups: s.list(s.string(), { listType: 'atomic', description: 'The groups of who created the request (set by the server).' }),
        extra: s.map(s.list(s.string()), { description: 'Extra attributes of who created the request (set by the server).' }),
      },
      { required: ['request', 'signerName'], description: 'The request, its signer and usages, and who made it. Immutable.', typeDescription: 'What is asked and by whom.' },
    ),
    status: s.struct(
      `${API}.CertificateSigningRequestStatus`,
      {
        conditions: s.list(conditionSchema, { listType: 'map', listMapKeys: ['type'], description: 'Approved, Denied, Failed and other conditions.' }),
        certificate: s.bytes({ description: 'The issued certificate (PEM CERTIFICATE blocks), set by the signer through the status subresource.' }),
      },
      { description: 'Whether the request is approved and the certificate issued.', typeDescription: 'Approval conditions and the issued certificate.' },
    ),
  },
  ['spec'],
  'A request for a certificate from a signer, approved or denied by someone allowed to, and answered by the signer.',
);

export const KNOWN_USAGES: readonly string[] = [
  'signing',
  'digital signature',
  'content commitment',
  'key encipherment',
  'key agreement',
  'data encipherment',
  'cert sign',
  'crl sign',
  'encipher only',
  'decipher only',
  'any',
  'server auth',
  'client auth',
  'code signing',
  'email protection',
  's/mime',
  'ipsec end system',
  'ipsec tunnel',
  'ipsec user',
  'timestamping',
  'ocsp signing',
  'microsoft sgc',
  'netscape sgc',
];
const KNOWN_USAGE_SET: ReadonlySet<string> = new Set(KNOWN_USAGES);
const SORTED_USAGES = [...KNOWN_USAGES].sort();

const TRUE_ONLY = new Set(['Approved', 'Denied', 'Failed']);
const ALL_STATUSES = ['False', 'True', 'Unknown'];

/** upstream's ValidateSignerName: `<domain with a dot>/<path>`, labels DNS-1123, 253 characters in all. */
export function validateSignerName(path: string, name: string | undefined): FieldError[] {
  if (!name) return [fieldErrors.required(path)];
  const segments = name.split('/');
  if (segments.length !== 2) return [fieldErrors.invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")];
  const [domain, rest] = segments as [string, string];
  const errs: FieldError[] = [];
  if (domain.length > 253) errs.push(fieldErrors.tooLong(path, domain, 253));
  const labels = domain.split('.');
  for (const l of labels) {
    const msgs = isDNS1123Label(l);
    if (msgs.length) {
      for (const m of msgs) errs.push(fieldErrors.invalid(path, domain, `validating label ${JSON.stringify(l)}: ${m}`));
      break;
    }
  }
  if (labels.length < 2) errs.push(fieldErrors.invalid(path, domain, 'should be a domain with at least two segments separated by dots'));
  for (const l of rest.split('.')) {
    const msgs = isDNS1123Label(l);
    if (msgs.length) {
      for (const m of msgs) errs.push(fieldErrors.invalid(path, rest, `validating label ${JSON.stringify(l)}: ${m}`));
      break;
    }
  }
  const maxPath = 253 - domain.length - 1;
  if (rest.length > maxPath) errs.push(fieldErrors.tooLong(path, rest, maxPath));
  return errs;
}

const decode = (b64: string | undefined): Buffer => Buffer.from(b64 ?? '', 'base64');

/** Why the request is not a CERTIFICATE REQUEST signed by its own key (upstream's validateCSR), or undefined. */
export function requestProblem(b64: string | undefined): string | undefined {
  try {
    checkRequestSignature(parseCertificateRequestPem(decode(b64)));
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

interface Options {
  allowSettingApprovalConditions: boolean;
  allowSettingCertificate: boolean;
  allowBothApprovedAndDenied: boolean;
  allowLegacySignerName: boolean;
  allowDuplicateConditionTypes: boolean;
  allowEmptyConditionType: boolean;
  allowArbitraryCertificate: boolean;
  allowUnknownUsages: boolean;
  allowDuplicateUsages: boolean;
}

const conditionsOf = (csr: Csr): CsrCondition[] => csr.status?.conditions ?? [];
const hasDuplicates = (xs: readonly string[]): boolean => new Set(xs).size !== xs.length;

/** upstream's getValidationOptions: what an existing object already has is tolerated on its updates. */
function optionsFor(next: Csr, old: Csr | undefined): Options {
  const oldTypes = old ? conditionsOf(old).map((c) => c.type) : [];
  const oldUsages = old?.spec?.usages ?? [];
  return {
    allowSettingApprovalConditions: false,
    allowSettingCertificate: false,
    allowBothApprovedAndDenied: oldTypes.includes('Approved') && oldTypes.includes('Denied'),
    allowLegacySignerName: !!old && isLegacyUnknown(old.spec?.signerName),
    allowDuplicateConditionTypes: !!old && hasDuplicates(oldTypes),
    allowEmptyConditionType: !!old && oldTypes.some((t) => !t),
    allowArbitraryCertificate: !!old && ((next.status?.certificate ?? '') === (old.status?.certificate ?? '') || !!(old.status?.certificate && validateCertificateBundle(decode(old.status.certificate).toString('latin1')))),
    allowUnknownUsages: !!old && oldUsages.some((u) => !KNOWN_USAGE_SET.has(u)),
    allowDuplicateUsages: !!old && hasDuplicates(oldUsages),
  };
}

function validateConditions(csr: Csr, o: Options): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  let approved = false;
  let denied = false;
  conditionsOf(csr).forEach((c, i) => {
    const p = `status.conditions[${i}]`;
    if (!o.allowEmptyConditionType && !c.type) errs.push(fieldErrors.required(`${p}.type`));
    const allowed = TRUE_ONLY.has(c.type) ? ['True'] : ALL_STATUSES;
    if (!c.status) errs.push(fieldErrors.required(`${p}.status`));
    else if (!allowed.includes(c.status)) errs.push(fieldErrors.notSupported(`${p}.status`, c.status, allowed));
    if (!o.allowBothApprovedAndDenied) {
      if (c.type === 'Approved') {
        approved = true;
        if (denied) errs.push(fieldErrors.invalid(`${p}.type`, c.type, 'Approved and Denied conditions are mutually exclusive'));
      } else if (c.type === 'Denied') {
        denied = true;
        if (approved) errs.push(fieldErrors.invalid(`${p}.type`, c.type, 'Approved and Denied conditions are mutually exclusive'));
      }
    }
    if (!o.allowDuplicateConditionTypes) {
      if (seen.has(c.type)) errs.push(fieldErrors.duplicate(`${p}.type`, c.type));
      seen.add(c.type);
    }
  });
  return errs;
}

function validateCsr(csr: Csr, o: Options): FieldError[] {
  const spec = csr.spec ?? {};
  const errs: FieldError[] = [];
  const problem = requestProblem(spec.request);
  if (problem) errs.push(fieldErrors.invalid('spec.request', spec.request ?? '', problem));
  const usages = spec.usages ?? [];
  if (!usages.length) errs.push(fieldErrors.required('spec.usages'));
  if (!o.allowUnknownUsages) usages.forEach((u, i) => KNOWN_USAGE_SET.has(u) || errs.push(fieldErrors.notSupported(`spec.usages[${i}]`, u, SORTED_USAGES)));
  if (!o.allowDuplicateUsages) {
    const seen = new Set<string>();
    usages.forEach((u, i) => {
      if (seen.has(u)) errs.push(fieldErrors.duplicate(`spec.usages[${i}]`, u));
      seen.add(u);
    });
  }
  if (!o.allowLegacySignerName && isLegacyUnknown(spec.signerName)) errs.push(fieldErrors.invalid('spec.signerName', spec.signerName, 'the legacy signerName is not allowed via this API version'));
  else errs.push(...validateSignerName('spec.signerName', spec.signerName));
  if (spec.expirationSeconds != null && spec.expirationSeconds < 600) errs.push(fieldErrors.invalid('spec.expirationSeconds', spec.expirationSeconds, 'may not specify a duration less than 600 seconds (10 minutes)'));
  errs.push(...validateConditions(csr, o));
  if (!o.allowArbitraryCertificate && csr.status?.certificate) {
    const msg = validateCertificateBundle(decode(csr.status.certificate).toString('latin1'));
    if (msg) errs.push(fieldErrors.invalid('status.certificate', '<certificate data>', msg));
  }
  return errs;
}

const ofType = (csr: Csr, type: string): CsrCondition[] => conditionsOf(csr).filter((c) => c.type === type);

function validateUpdateWith(next: Csr, old: Csr, o: Options): FieldError[] {
  const errs = validateCsr(next, o);
  for (const t of ['Approved', 'Denied', 'Failed']) {
    if (ofType(next, t).length < ofType(old, t).length) errs.push(fieldErrors.forbidden('status.conditions', `updates may not remove a condition of type ${JSON.stringify(t)}`));
  }
  if (!o.allowSettingApprovalConditions) {
    for (const t of ['Approved', 'Denied']) {
      const before = ofType(old, t);
      const after = ofType(next, t);
      if (after.length > before.length) errs.push(fieldErrors.forbidden('status.conditions', `updates may not add a condition of type ${JSON.stringify(t)}`));
      else if (after.length === before.length && !jsonEqual(before, after)) errs.push(fieldErrors.forbidden('status.conditions', `updates may not modify a condition of type ${JSON.stringify(t)}`));
    }
  }
  if ((next.status?.certificate ?? '') !== (old.status?.certificate ?? '')) {
    if (!o.allowSettingCertificate) errs.push(fieldErrors.forbidden('status.certificate', 'updates may not set certificate content'));
    else if (old.status?.certificate) errs.push(fieldErrors.forbidden('status.certificate', 'updates may not modify existing certificate content'));
  }
  return errs;
}

/** upstream's populateConditionTimestamps: unset times become now, or the transition time of an unchanged condition. */
function populateConditionTimestamps(next: Csr, old: Csr): void {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  for (const c of conditionsOf(next)) {
    if (!c.lastUpdateTime) c.lastUpdateTime = now;
    if (!c.lastTransitionTime) c.lastTransitionTime = conditionsOf(old).find((o) => o.type === c.type && o.status === c.status && o.lastTransitionTime)?.lastTransitionTime ?? now;
  }
}

/** Each instance of `type` in `next` is replaced by the stored one, when their counts agree (upstream's preserveConditionInstances). */
function preserveConditionInstances(next: Csr, old: Csr, type: string): void {
  const oldIdx = conditionsOf(old).flatMap((c, i) => (c.type === type ? [i] : []));
  const newIdx = conditionsOf(next).flatMap((c, i) => (c.type === type ? [i] : []));
  if (oldIdx.length !== newIdx.length) return;
  newIdx.forEach((n, i) => (next.status!.conditions![n] = structuredClone(old.status!.conditions![oldIdx[i]!]!)));
}

const statusSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    const n = next as Csr;
    const o = old as Csr;
    n.spec = o.spec;
    preserveConditionInstances(n, o, 'Approved');
    preserveConditionInstances(n, o, 'Denied');
    populateConditionTimestamps(n, o);
  },
  validateUpdate: (next, old) => validateUpdateWith(next as Csr, old as Csr, { ...optionsFor(next as Csr, old as Csr), allowSettingCertificate: true }),
};

const approvalSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    const n = next as Csr;
    const o = old as Csr;
    populateConditionTimestamps(n, o);
    const conditions = n.status?.conditions;
    n.spec = o.spec;
    n.status = { ...(o.status ?? {}) };
    if (conditions) n.status.conditions = conditions;
    else delete n.status.conditions;
  },
  validateUpdate: (next, old) => validateUpdateWith(next as Csr, old as Csr, { ...optionsFor(next as Csr, old as Csr), allowSettingApprovalConditions: true }),
};

/** kubectl's CONDITION column: Approved / Denied / Pending, then Failed and Issued. */
export function csrCondition(csr: Csr): string {
  const types = new Set(conditionsOf(csr).map((c) => c.type));
  let out = types.has('Denied') ? 'Denied' : types.has('Approved') ? 'Approved' : 'Pending';
  if (types.has('Failed')) out += ',Failed';
  if (csr.status?.certificate) out += ',Issued';
  return out;
}

export const certificateSigningRequests: ResourceType = {
  group: CERTIFICATES_GROUP,
  version: 'v1',
  kind: 'CertificateSigningRequest',
  plural: 'certificatesigningrequests',
  singular: 'certificatesigningrequest',
  namespaced: false,
  shortNames: ['csr'],
  protobufPackage: 'svc.io.api.certificates.v1',
  schema: csrSchema,
  // upstream does not care what requests are called
  nameRule: 'path-segment',

  prepareForCreate(obj, user?: UserInfo) {
    const csr = obj as Csr;
    const spec = (csr.spec ??= {});
    delete spec.username;
    delete spec.uid;
    delete spec.groups;
    delete spec.extra;
    if (user) {
      if (user.username) spec.username = user.username;
      if (user.uid) spec.uid = user.uid;
      if (user.groups?.length) spec.groups = [...user.groups];
      if (user.extra && Object.keys(user.extra).length) spec.extra = structuredClone(user.extra);
    }
    // requests cannot be created approved
    csr.status = {};
  },
  prepareForUpdate(next, old) {
    (next as Csr).spec = (old as Csr).spec;
    (next as Csr).status = (old as Csr).status;
  },
  validateCreate: (obj) => validateCsr(obj as Csr, optionsFor(obj as Csr, undefined)),
  validateUpdate: (next, old) => validateUpdateWith(next as Csr, old as Csr, optionsFor(next as Csr, old as Csr)),
  selectableFields: { 'spec.signerName': (obj) => (obj as Csr).spec?.signerName ?? '' },

  tableColumns: [
    metadataNameColumn,
    metadataAgeColumn,
    { name: 'SignerName', type: 'string', description: 'The signer asked to sign the request.', cell: (obj) => (obj as Csr).spec?.signerName || '<none>' },
    { name: 'Requestor', type: 'string', description: 'Name of the requestor', cell: (obj) => (obj as Csr).spec?.username ?? '' },
    {
      name: 'RequestedDuration',
      type: 'string',
      description: 'Requested duration of the certificate',
      cell: (obj) => {
        const secs = (obj as Csr).spec?.expirationSeconds;
        return secs == null ? '<none>' : humanDuration(secs * 1000);
      },
    },
    { name: 'Condition', type: 'string', description: 'State of the signing request', cell: (obj) => csrCondition(obj as Csr) },
  ],
  subresources: { status: statusSubresource, approval: approvalSubresource },
  resetFields: { '': ['spec', 'status'], status: ['spec', 'status.conditions'], approval: ['spec', 'status.certificate'] },
};

/** Whether the request names a built-in signer, in either spelling. */
export const namesBuiltinSigner = (csr: Csr): boolean => builtinSigner(csr.spec?.signerName) !== undefined;
