/**
 * Secret (core/v1, namespaced). `stringData` is folded into `data` on every write (stringData wins) and
 * never stored; `type` defaults to Opaque and is immutable; data keys are config keys, 1 MiB in total;
 * `immutable` freezes data. Each built-in type has upstream's required keys (svc.io/service-account-token,
 * svc.io/dockercfg, svc.io/dockerconfigjson, svc.io/basic-auth, svc.io/ssh-auth, svc.io/tls), with
 * upstream's messages, including Go's JSON syntax errors and its TLS key-pair warning. Bootstrap token
 * Secrets are accepted as upstream does; the access-control spec's rules for them come back as warnings.
 */
import { X509Certificate, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn, validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { base64DecodedLength, goQuote, invalidEach, isConfigMapKey, jsonEqual, validateImmutableField } from '../../api/validation.js';
import { goJsonSyntaxError, isJsonSpace } from '../../codec/json-syntax.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';
import { IMMUTABLE_WHEN_SET, MAX_DATA_SIZE } from './configmaps.js';

export const SecretType = {
  opaque: 'Opaque',
  serviceAccountToken: 'svc.io/service-account-token',
  dockercfg: 'svc.io/dockercfg',
  dockerConfigJson: 'svc.io/dockerconfigjson',
  basicAuth: 'svc.io/basic-auth',
  sshAuth: 'svc.io/ssh-auth',
  tls: 'svc.io/tls',
  bootstrapToken: 'bootstrap.svc.io/token',
} as const;

export const SERVICE_ACCOUNT_NAME_ANNOTATION = 'svc.io/service-account.name';
export const DOCKER_CONFIG_KEY = '.dockercfg';
export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';
export const BASIC_AUTH_USERNAME_KEY = 'username';
export const BASIC_AUTH_PASSWORD_KEY = 'password';
export const SSH_AUTH_PRIVATE_KEY = 'ssh-privatekey';
export const TLS_CERT_KEY = 'tls.crt';
export const TLS_PRIVATE_KEY_KEY = 'tls.key';

interface Secret extends ApiObject {
  immutable?: boolean;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  type?: string;
}

export const secretSchema = objectSchema(
  'io.svc.api.core.v1.Secret',
  {
    immutable: s.boolean({ ptr: true, description: 'When true, data can no longer be changed and the flag cannot be unset; the object can only be deleted.' }),
    data: s.map(s.bytes(), {
      description: "Secret values by key (base64 in JSON). Keys are made of alphanumerics, '-', '_' and '.'; at most 1 MiB in total.",
    }),
    stringData: s.map(s.string(), {
      description: 'Write-only convenience: plain-text values folded into data on every write (they win over data); never stored or returned.',
    }),
    type: s.string({
      description:
        'What the data holds, checked against the keys the type requires (for example svc.io/tls needs tls.crt and tls.key). Defaults to Opaque; cannot be changed.',
    }),
  },
  [],
  'Sensitive data such as passwords, tokens or keys, kept apart from the objects that use it.',
);

const decoded = (b64: string | undefined): Buffer => Buffer.from(b64 ?? '', 'base64');

// ---------------------------------------------------------------------------------------------
// Validation

const REDACTED = '<secret contents redacted>';

/** The error json.Unmarshal(b, &map[string]interface{}{}) returns in Go, if any. */
export function goJsonObjectError(b: Uint8Array): string | undefined {
  const syntax = goJsonSyntaxError(b);
  if (syntax) return syntax;
  let i = 0;
  while (i < b.length && isJsonSpace(b[i]!)) i++;
  const c = b[i];
  if (c === 0x7b || c === 0x6e) return undefined;
  const type = c === 0x5b ? 'array' : c === 0x22 ? 'string' : c === 0x74 || c === 0x66 ? 'bool' : 'number';
  return `json: cannot unmarshal ${type} into Go value of type map[string]interface {}`;
}

function validateDockerConfig(data: Record<string, string>, key: string): FieldError[] {
  if (!Object.hasOwn(data, key)) return [fieldErrors.required(`data[${key}]`, '')];
  const err = goJsonObjectError(decoded(data[key]));
  return err ? [fieldErrors.invalid(`data[${key}]`, REDACTED, err)] : [];
}

function validateTypeRules(sec: Secret): FieldError[] {
  const data = sec.data ?? {};
  switch (sec.type) {
    case SecretType.serviceAccountToken:
      // Only the account name is required; uid and token are filled in by a controller.
      return sec.metadata.annotations?.[SERVICE_ACCOUNT_NAME_ANNOTATION]
        ? []
        : [fieldErrors.required(`metadata.annotations[${SERVICE_ACCOUNT_NAME_ANNOTATION}]`, '')];
    case SecretType.dockercfg:
      return validateDockerConfig(data, DOCKER_CONFIG_KEY);
    case SecretType.dockerConfigJson:
      return validateDockerConfig(data, DOCKER_CONFIG_JSON_KEY);
    case SecretType.basicAuth:
      // Either key may hold an empty value, but one of them must be present.
      return Object.hasOwn(data, BASIC_AUTH_USERNAME_KEY) || Object.hasOwn(data, BASIC_AUTH_PASSWORD_KEY)
        ? []
        : [fieldErrors.required(`data[${BASIC_AUTH_USERNAME_KEY}]`, ''), fieldErrors.required(`data[${BASIC_AUTH_PASSWORD_KEY}]`, '')];
    case SecretType.sshAuth:
      return base64DecodedLength(data[SSH_AUTH_PRIVATE_KEY] ?? '') === 0 ? [fieldErrors.required(`data[${SSH_AUTH_PRIVATE_KEY}]`, '')] : [];
    case SecretType.tls: {
      const errs: FieldError[] = [];
      if (!Object.hasOwn(data, TLS_CERT_KEY)) errs.push(fieldErrors.required(`data[${TLS_CERT_KEY}]`, ''));
      if (!Object.hasOwn(data, TLS_PRIVATE_KEY_KEY)) errs.push(fieldErrors.required(`data[${TLS_PRIVATE_KEY_KEY}]`, ''));
      return errs;
    }
    default:
      return [];
  }
}

function validateSecret(sec: Secret): FieldError[] {
  const errs: FieldError[] = [];
  const data = sec.data ?? {};
  let total = 0;
  for (const key of Object.keys(data)) {
    errs.push(...invalidEach(`data[${key}]`, key, isConfigMapKey(key)));
    total += base64DecodedLength(data[key] ?? '');
  }
  if (total > MAX_DATA_SIZE) errs.push(fieldErrors.tooLong('data', '', MAX_DATA_SIZE));
  errs.push(...validateTypeRules(sec));
  return errs;
}

function validateCreate(obj: ApiObject): FieldError[] {
  return [...validateBuiltinFinalizerNames(obj.metadata), ...validateSecret(obj as Secret)];
}

function validateUpdate(next: ApiObject, old: ApiObject): FieldError[] {
  const sec = next as Secret;
  const prev = old as Secret;
  const errs = validateBuiltinFinalizerNames(sec.metadata);
  errs.push(...validateImmutableField(sec.type ?? '', prev.type ?? '', 'type'));
  if (prev.immutable === true) {
    if (sec.immutable !== true) errs.push(fieldErrors.forbidden('immutable', IMMUTABLE_WHEN_SET));
    if (!jsonEqual(sec.data ?? {}, prev.data ?? {})) errs.push(fieldErrors.forbidden('data', IMMUTABLE_WHEN_SET));
  }
  errs.push(...validateSecret(sec));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Warnings

interface PemBlock {
  type: string;
  der: Buffer;
}

const pemBlockRe = /-----BEGIN ([^\r\n-]*)-----\r?\n([\s\S]*?)-----END \1-----/g;

function pemBlocks(text: string): PemBlock[] {
  const out: PemBlock[] = [];
  for (const m of text.matchAll(pemBlockRe)) {
    // Header lines ("Key: value") precede the base64 body; they carry no key material.
    const body = m[2]!.split(/\r?\n/).filter((l) => !l.includes(':')).join('');
    out.push({ type: m[1]!, der: Buffer.from(body, 'base64') });
  }
  return out;
}

function parsePrivateKey(der: Buffer): KeyObject | undefined {
  for (const type of ['pkcs1', 'pkcs8', 'sec1'] as const) {
    try {
      return createPrivateKey({ key: der, format: 'der', type });
    } catch {
      // try the next encoding, as Go's parsePrivateKey does
    }
  }
  return undefined;
}

/** Go's tls.X509KeyPair error for a certificate and key in PEM, if any. */
export function tlsKeyPairError(certPem: string, keyPem: string): string | undefined {
  const certBlocks = pemBlocks(certPem);
  const certs = certBlocks.filter((b) => b.type === 'CERTIFICATE');
  if (certs.length === 0) {
    const skipped = certBlocks.map((b) => b.type);
    if (skipped.length === 0) return 'tls: failed to find any PEM data in certificate input';
    if (skipped.length === 1 && skipped[0]!.endsWith('PRIVATE KEY')) {
      return 'tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched';
    }
    return `tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping PEM blocks of the following types: [${skipped.join(' ')}]`;
  }
  const skippedKeys: string[] = [];
  let keyBlock: PemBlock | undefined;
  for (const b of pemBlocks(keyPem)) {
    if (b.type === 'PRIVATE KEY' || b.type.endsWith(' PRIVATE KEY')) {
      keyBlock = b;
      break;
    }
    skippedKeys.push(b.type);
  }
  if (!keyBlock) {
    if (skippedKeys.length === 0) return 'tls: failed to find any PEM data in key input';
    if (skippedKeys.length === 1 && skippedKeys[0] === 'CERTIFICATE') return 'tls: found a certificate rather than a key in the PEM for the private key';
    return `tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input after skipping PEM blocks of the following types: [${skippedKeys.join(' ')}]`;
  }
  let certPublicKey: KeyObject;
  try {
    certPublicKey = new X509Certificate(certs[0]!.der).publicKey;
  } catch {
    return 'x509: malformed certificate';
  }
  const privateKey = parsePrivateKey(keyBlock.der);
  if (!privateKey) return 'tls: failed to parse private key';
  const kind = certPublicKey.asymmetricKeyType;
  if (kind !== 'rsa' && kind !== 'ec' && kind !== 'ed25519') return 'tls: unknown public key algorithm';
  if (privateKey.asymmetricKeyType !== kind) return 'tls: private key type does not match public key type';
  const spki = (k: KeyObject): Buffer => k.export({ type: 'spki', format: 'der' });
  return spki(createPublicKey(privateKey)).equals(spki(certPublicKey)) ? undefined : 'tls: private key does not match public key';
}

const tokenIdRe = /^[a-z0-9]{6}$/;
const tokenSecretRe = /^[a-z0-9]{16}$/;
const bootstrapGroupRe = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;
const rfc3339Re = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** The access-control spec's bootstrap token rules; upstream stores such Secrets unchecked. */
function bootstrapTokenWarnings(sec: Secret): string[] {
  const data = sec.data ?? {};
  const text = (k: string): string | undefined => (Object.hasOwn(data, k) ? decoded(data[k]).toString('utf8') : undefined);
  const warnings: string[] = [];
  const id = text('token-id');
  if (id === undefined) warnings.push('data[token-id]: Required value');
  else if (!tokenIdRe.test(id)) warnings.push(`data[token-id]: Invalid value: ${goQuote(id)}: must be 6 lowercase alphanumeric characters`);
  else if (sec.metadata.name !== `bootstrap-token-${id}`) {
    warnings.push(`metadata.name: Invalid value: ${goQuote(sec.metadata.name ?? '')}: must be ${goQuote(`bootstrap-token-${id}`)}`);
  }
  const secret = text('token-secret');
  if (secret === undefined) warnings.push('data[token-secret]: Required value');
  else if (!tokenSecretRe.test(secret)) warnings.push(`data[token-secret]: Invalid value: ${goQuote(REDACTED)}: must be 16 lowercase alphanumeric characters`);
  const expiration = text('expiration');
  if (expiration !== undefined && (!rfc3339Re.test(expiration) || Number.isNaN(Date.parse(expiration)))) {
    warnings.push(`data[expiration]: Invalid value: ${goQuote(expiration)}: must be an RFC 3339 timestamp`);
  }
  const groups = text('auth-extra-groups');
  for (const g of groups ? groups.split(',') : []) {
    if (!bootstrapGroupRe.test(g)) warnings.push(`data[auth-extra-groups]: Invalid value: ${goQuote(g)}: must start with "system:bootstrappers:"`);
  }
  return warnings;
}

function warnings(obj: ApiObject): string[] {
  const sec = obj as Secret;
  if (sec.type === SecretType.tls) {
    const data = sec.data ?? {};
    const err = tlsKeyPairError(decoded(data[TLS_CERT_KEY]).toString('latin1'), decoded(data[TLS_PRIVATE_KEY_KEY]).toString('latin1'));
    return err ? [err] : [];
  }
  if (sec.type === SecretType.bootstrapToken) return bootstrapTokenWarnings(sec);
  return [];
}

export const secrets: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'Secret',
  plural: 'secrets',
  singular: 'secret',
  namespaced: true,
  protobufPackage: 'svc.io.api.core.v1',
  schema: secretSchema,

  defaults(obj) {
    const sec = obj as Secret;
    // upstream does this in conversion: stringData overwrites data and is never stored.
    if (sec.stringData) {
      const keys = Object.keys(sec.stringData);
      if (keys.length) {
        const data = (sec.data ??= {});
        for (const k of keys) data[k] = Buffer.from(sec.stringData[k] ?? '', 'utf8').toString('base64');
      }
      delete sec.stringData;
    }
    if (!sec.type) sec.type = SecretType.opaque;
  },
  prepareForUpdate(next, old) {
    const sec = next as Secret;
    if (!sec.type) sec.type = (old as Secret).type;
  },
  validateCreate,
  validateUpdate,
  warnings,

  selectableFields: { type: (obj) => (obj as Secret).type ?? '' },
  tableColumns: [
    metadataNameColumn,
    { name: 'Type', type: 'string', description: 'Type of the secret data.', cell: (obj) => (obj as Secret).type ?? '' },
    { name: 'Data', type: 'string', description: 'Number of entries in data.', cell: (obj) => Object.keys((obj as Secret).data ?? {}).length },
    metadataAgeColumn,
  ],
};
