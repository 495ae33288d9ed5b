/**
 * ClusterTrustBundle (certificates.svc.io/v1alpha1, cluster-scoped; alpha: served only with the
 * ClusterTrustBundle gate on and the version turned on by --runtime-config): a set of X.509 trust
 * anchors, optionally for a signer. Rules and messages follow upstream v1.32's validation: a bundle
 * for a signer is named `<signer with '/' as ':'>:<name>`, one without a signer has no ':' in its
 * name; the bundle is CERTIFICATE blocks only, without headers, each a CA certificate, no duplicates,
 * at most 1 MiB, at least one; the signer name is immutable and an unchanged bundle is not parsed
 * again. Writing a bundle for a signer needs `attest` on it (ClusterTrustBundleAttest admission).
 */
import { X509Certificate } from 'node:crypto';
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataNameColumn } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { invalidEach, nameIsDNSSubdomain, validateImmutableField } from '../../api/validation.js';
import { pemBlocks } from '../../certificates/x509.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';
import { CERTIFICATES_GROUP, validateSignerName } from './certificatesigningrequests.js';

export const CLUSTER_TRUST_BUNDLE_GATE = 'ClusterTrustBundle';
/** upstream's MaxTrustBundleSize. */
export const MAX_TRUST_BUNDLE_SIZE = 1024 * 1024;

export interface ClusterTrustBundle extends ApiObject {
  spec?: { signerName?: string; trustBundle?: string };
}

const API = 'io.svc.api.certificates.v1alpha1';

export const clusterTrustBundleSchema = objectSchema(
  `${API}.ClusterTrustBundle`,
  {
    spec: s.struct(
      `${API}.ClusterTrustBundleSpec`,
      {
        signerName: s.string({ description: 'The signer these anchors are for, if any; the name must then start with it (with \'/\' as \':\'). Writing it needs attest on the signer.' }),
        trustBundle: s.string({ always: true, description: 'PEM CERTIFICATE blocks of CA certificates, without headers or duplicates.' }),
      },
      { required: ['trustBundle'], description: 'The signer, if any, and the trust anchors.', typeDescription: 'A signer and its trust anchors.' },
    ),
  },
  ['spec'],
  'A cluster-scoped set of X.509 trust anchors (root certificates), optionally for one signer.',
);

/** upstream's ValidateClusterTrustBundleName: the name as the signer (or its absence) demands. */
export function clusterTrustBundleNameProblems(signerName: string, name: string, prefix: boolean): string[] {
  if (!signerName) {
    if (name.includes(':')) return ['ClusterTrustBundle without signer name must not have ":" in its name'];
    return nameIsDNSSubdomain(name, prefix);
  }
  const required = `${signerName.replaceAll('/', ':')}:`;
  if (!name.startsWith(required)) return [`ClusterTrustBundle for signerName ${signerName} must be named with prefix ${required}`];
  return nameIsDNSSubdomain(name.slice(required.length), prefix);
}

/** upstream's validateTrustBundle. */
export function validateTrustBundle(path: string, text: string): FieldError[] {
  if (text.length > MAX_TRUST_BUNDLE_SIZE) return [fieldErrors.tooLong(path, `<value omitted, len ${text.length}>`, MAX_TRUST_BUNDLE_SIZE)];
  const errs: FieldError[] = [];
  const seen = new Map<string, number[]>();
  pemBlocks(text).forEach((b, i) => {
    if (b.type !== 'CERTIFICATE') return errs.push(fieldErrors.invalid(path, '<value omitted>', `entry ${i} has bad block type: ${b.type}`));
    if (Object.keys(b.headers).length) return errs.push(fieldErrors.invalid(path, '<value omitted>', `entry ${i} has PEM block headers`));
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(b.bytes);
    } catch {
      return errs.push(fieldErrors.invalid(path, '<value omitted>', `entry ${i} does not parse as X.509`));
    }
    if (!cert.ca) return errs.push(fieldErrors.invalid(path, '<value omitted>', `entry ${i} does not have the CA bit set`));
    const key = b.bytes.toString('base64');
    seen.set(key, [...(seen.get(key) ?? []), i]);
    return undefined;
  });
  if (errs.length) return errs;
  if (!seen.size) errs.push(fieldErrors.invalid(path, '<value omitted>', 'at least one trust anchor must be provided'));
  for (const indices of seen.values()) if (indices.length > 1) errs.push(fieldErrors.invalid(path, '<value omitted>', `duplicate trust anchor (indices [${indices.join(' ')}])`));
  return errs;
}

function validateBundle(obj: ClusterTrustBundle, parse: boolean): FieldError[] {
  const signer = obj.spec?.signerName ?? '';
  const errs: FieldError[] = [];
  const meta = obj.metadata;
  if (meta.generateName) errs.push(...invalidEach('metadata.generateName', meta.generateName, clusterTrustBundleNameProblems(signer, meta.generateName, true)));
  if (meta.name) errs.push(...invalidEach('metadata.name', meta.name, clusterTrustBundleNameProblems(signer, meta.name, false)));
  if (signer) errs.push(...validateSignerName('spec.signerName', signer));
  if (parse) errs.push(...validateTrustBundle('spec.trustBundle', obj.spec?.trustBundle ?? ''));
  return errs;
}

export const clusterTrustBundles: ResourceType = {
  group: CERTIFICATES_GROUP,
  version: 'v1alpha1',
  kind: 'ClusterTrustBundle',
  plural: 'clustertrustbundles',
  singular: 'clustertrustbundle',
  namespaced: false,
  protobufPackage: 'svc.io.api.certificates.v1alpha1',
  schema: clusterTrustBundleSchema,
  // the name's rule depends on spec.signerName: checked with the object (validateBundle)
  nameRule: () => [],
  validateCreate: (obj) => validateBundle(obj as ClusterTrustBundle, true),
  validateUpdate(next, old) {
    const n = next as ClusterTrustBundle;
    const o = old as ClusterTrustBundle;
    // an unchanged bundle is not parsed again (parsers change between releases)
    return [...validateBundle(n, n.spec?.trustBundle !== o.spec?.trustBundle), ...validateImmutableField(n.spec?.signerName ?? '', o.spec?.signerName ?? '', 'spec.signerName')];
  },
  selectableFields: { 'spec.signerName': (obj) => (obj as ClusterTrustBundle).spec?.signerName ?? '' },
  tableColumns: [metadataNameColumn, { name: 'SignerName', type: 'string', description: 'The signer the anchors are for.', cell: (obj) => (obj as ClusterTrustBundle).spec?.signerName || '<none>' }],
};
