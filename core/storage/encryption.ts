/**
 * Encryption at rest: the EncryptionConfiguration (apiserver.config.svc.io/v1) and the value
 * transformers it names, applied to stored bytes under a store's keys. The first provider of a rule
 * writes; every provider of the rule can read, so keys rotate by reordering. Stored prefixes are
 * upstream's (k8s:enc:<provider>:v1:<key name>:, and k8s:enc:kms:v2:<name>: for the KMS v2 envelope
 * of kms-v2.ts) so a raw store never shows plaintext of an encrypted resource. Crypto is node:crypto's
 * (AES) and @noble/ciphers' (secretbox: XSalsa20-Poly1305, NaCl's construction, which node:crypto
 * lacks); nothing here implements a cipher.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { xsalsa20poly1305 } from '@noble/ciphers/salsa.js';
import { KmsV2Provider, parseGoDuration } from './kms-v2.js';
import { PendingTransform, TransformError, type Transformer } from './value-transform.js';
import { yamlLibrary } from '../codec/yaml-library.js';

export class EncryptionConfigError extends Error {}

const enc = new TextEncoder();
const identity: Transformer = { prefix: '', encrypt: (p) => p, decrypt: (s) => s };

function aescbc(name: string, secret: Buffer): Transformer {
  const prefix = `k8s:enc:aescbc:v1:${name}:`;
  const algo = `aes-${secret.length * 8}-cbc`;
  return {
    prefix,
    encrypt(plain) {
      const iv = randomBytes(16);
      const c = createCipheriv(algo, secret, iv);
      return Buffer.concat([enc.encode(prefix), iv, c.update(plain), c.final()]);
    },
    decrypt(stored) {
      const body = Buffer.from(stored).subarray(prefix.length);
      const d = createDecipheriv(algo, secret, body.subarray(0, 16));
      return Buffer.concat([d.update(body.subarray(16)), d.final()]);
    },
  };
}

/** AES-GCM binds the ciphertext to its storage key (authenticated data), so a value copied under another key does not read. */
function aesgcm(name: string, secret: Buffer): Transformer {
  const prefix = `k8s:enc:aesgcm:v1:${name}:`;
  const algo = `aes-${secret.length * 8}-gcm` as 'aes-256-gcm';
  return {
    prefix,
    encrypt(plain, key) {
      const nonce = randomBytes(12);
      const c = createCipheriv(algo, secret, nonce);
      c.setAAD(enc.encode(key));
      const body = Buffer.concat([c.update(plain), c.final()]);
      return Buffer.concat([enc.encode(prefix), nonce, body, c.getAuthTag()]);
    },
    decrypt(stored, key) {
      const body = Buffer.from(stored).subarray(prefix.length);
      const d = createDecipheriv(algo, secret, body.subarray(0, 12));
      d.setAAD(enc.encode(key));
      d.setAuthTag(body.subarray(body.length - 16));
      return Buffer.concat([d.update(body.subarray(12, body.length - 16)), d.final()]);
    },
  };
}

/** secretbox: a 24-byte random nonce, then NaCl's sealed box (Poly1305 tag, XSalsa20 ciphertext), as upstream stores it. */
function secretbox(name: string, secret: Buffer): Transformer {
  const prefix = `k8s:enc:secretbox:v1:${name}:`;
  return {
    prefix,
    encrypt(plain) {
      const nonce = randomBytes(24);
      return Buffer.concat([enc.encode(prefix), nonce, xsalsa20poly1305(secret, nonce).encrypt(plain)]);
    },
    decrypt(stored) {
      const body = Buffer.from(stored).subarray(prefix.length);
      if (body.length < 24 + 16) throw new Error('the stored value is too short');
      return Buffer.from(xsalsa20poly1305(secret, body.subarray(0, 24)).decrypt(body.subarray(24)));
    },
  };
}

const aesKeyLengths = new Set([16, 24, 32]);
const keyedProviders: Record<string, (name: string, secret: Buffer) => Transformer> = { aescbc, aesgcm, secretbox };
/** Key lengths each keyed provider accepts. */
const keyLengths: Record<string, { ok: ReadonlySet<number>; words: string }> = {
  aescbc: { ok: aesKeyLengths, words: '16, 24 or 32 byte' },
  aesgcm: { ok: aesKeyLengths, words: '16, 24 or 32 byte' },
  secretbox: { ok: new Set([32]), words: '32 byte' },
};

const DEFAULT_KMS_TIMEOUT_MS = 3000;

/** A `kms` provider entry, checked as upstream's validation checks it (v2 only: KMS v1 is deprecated upstream and off by default). */
function kmsProvider(entry: Record<string, unknown> | null, field: string, kms: KmsV2Provider[]): KmsV2Provider {
  const f = `${field}.kms`;
  const c = entry ?? {};
  const apiVersion = c.apiVersion ?? 'v1';
  if (apiVersion === 'v1') throw new EncryptionConfigError(`${f}.apiVersion: Invalid value: "v1": KMSv1 is deprecated and not supported here; use apiVersion v2`);
  if (apiVersion !== 'v2') throw new EncryptionConfigError(`${f}.apiVersion: Invalid value: ${JSON.stringify(apiVersion)}: unsupported apiVersion ${String(apiVersion)} for KMS provider, only v1 and v2 are supported`);
  const name = c.name;
  if (typeof name !== 'string' || !name) throw new EncryptionConfigError(`${f}.name: Required value`);
  if (name.includes(':')) throw new EncryptionConfigError(`${f}.name: Invalid value: ${JSON.stringify(name)}: should not contain ':'`);
  if (kms.some((k) => k.config.name === name)) throw new EncryptionConfigError(`${f}.name: Duplicate value: ${JSON.stringify(name)}: KMS provider names must be unique`);
  if (c.cachesize !== undefined) throw new EncryptionConfigError(`${f}.cachesize: Invalid value: ${JSON.stringify(c.cachesize)}: cachesize is not supported in v2`);
  const endpoint = c.endpoint;
  if (typeof endpoint !== 'string' || !endpoint) throw new EncryptionConfigError(`${f}.endpoint: Required value`);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(endpoint)?.[1];
  if (scheme !== 'unix') throw new EncryptionConfigError(`${f}.endpoint: Invalid value: ${JSON.stringify(endpoint)}: unsupported scheme ${JSON.stringify(scheme ?? '')} for KMS provider, only unix is supported`);
  if (endpoint.length <= 'unix://'.length) throw new EncryptionConfigError(`${f}.endpoint: Invalid value: ${JSON.stringify(endpoint)}: a socket path is required`);
  let timeoutMs = DEFAULT_KMS_TIMEOUT_MS;
  if (c.timeout !== undefined) {
    const ms = typeof c.timeout === 'string' ? parseGoDuration(c.timeout) : undefined;
    if (ms === undefined || ms <= 0) throw new EncryptionConfigError(`${f}.timeout: Invalid value: ${JSON.stringify(c.timeout)}: timeout should be a positive value`);
    timeoutMs = ms;
  }
  const provider = new KmsV2Provider({ name, endpoint, timeoutMs });
  kms.push(provider);
  return provider;
}

function providerTransformers(p: Record<string, unknown>, field: string, kms: KmsV2Provider[]): Transformer[] {
  const kinds = Object.keys(p ?? {});
  if (kinds.length !== 1) throw new EncryptionConfigError(`${field}: exactly one provider type must be set`);
  const kind = kinds[0]!;
  if (kind === 'identity') return [identity];
  if (kind === 'kms') return [kmsProvider(p.kms as Record<string, unknown>, field, kms)];
  const make = keyedProviders[kind];
  if (!make) throw new EncryptionConfigError(`${field}.${kind}: unsupported provider (supported: identity, aescbc, aesgcm, secretbox, kms)`);
  const keys = (p[kind] as { keys?: { name?: string; secret?: string }[] })?.keys;
  if (!Array.isArray(keys) || keys.length === 0) throw new EncryptionConfigError(`${field}.${kind}.keys: at least one key is required`);
  return keys.map((k, i) => {
    const f = `${field}.${kind}.keys[${i}]`;
    if (!k?.name) throw new EncryptionConfigError(`${f}.name: Required value`);
    if (k.name.includes(':')) throw new EncryptionConfigError(`${f}.name: must not contain ':'`);
    const secret = Buffer.from(k.secret ?? '', 'base64');
    const lengths = keyLengths[kind]!;
    if (!lengths.ok.has(secret.length)) throw new EncryptionConfigError(`${f}.secret: must be a base64 encoded ${lengths.words} key (got ${secret.length} bytes)`);
    return make(k.name, secret);
  });
}

interface Rule {
  /** Patterns as written: "secrets", "deployments.apps", "*.apps", "*." (core group), "*.*". */
  patterns: string[];
  /** Writers first: transformers[0] encrypts. */
  transformers: Transformer[];
}

/** resource.group of a store key /registry/<group|core>/<plural>/...; undefined for keys outside it. */
function resourceOfKey(key: string): { group: string; resource: string } | undefined {
  const parts = key.split('/');
  if (parts.length < 4 || parts[1] !== 'registry') return undefined;
  return { group: parts[2] === 'core' ? '' : parts[2]!, resource: parts[3]! };
}

function matches(pattern: string, r: { group: string; resource: string }): boolean {
  if (pattern === '*.*') return true;
  const dot = pattern.indexOf('.');
  const res = dot < 0 ? pattern : pattern.slice(0, dot);
  const group = dot < 0 ? '' : pattern.slice(dot + 1);
  return group === r.group && (res === '*' || res === r.resource);
}

/** Transforms stored values by key according to an EncryptionConfiguration. */
export class ValueTransformer {
  /** `kms`: the KMS providers of the rules, connected here (a configuration is parsed before it is built). */
  constructor(
    private readonly rules: Rule[],
    private readonly kms: readonly KmsV2Provider[] = [],
  ) {
    for (const k of kms) k.start();
  }

  get hasKms(): boolean {
    return this.kms.length > 0;
  }

  /** Upstream's kms-providers health check: every KMS plugin answers Status ok (undefined), or why not, naming the provider. */
  async kmsHealth(): Promise<string | undefined> {
    const results = await Promise.all(this.kms.map((k) => k.health()));
    // each named as upstream names the probe it aggregates (kms-provider-<index>)
    const errors = results.flatMap((e, i) => (e ? [`kms-provider-${i}: ${e}`] : []));
    return errors.length ? errors.join(', ') : undefined;
  }

  /** Closes the KMS plugin connections (a closed store). */
  close(): void {
    for (const k of this.kms) k.close();
  }

  /** Closes them once calls still under way had time to finish (a configuration replaced by a reload): upstream's grace period, twice the timeouts' sum. */
  closeAfterGrace(): void {
    if (!this.kms.length) return;
    const graceMs = 2 * this.kms.reduce((sum, k) => sum + k.config.timeoutMs, 0);
    setTimeout(() => this.close(), graceMs).unref();
  }

  /** As a TransformingStore layer: encrypts on the way in, decrypts on the way out. */
  toStored(key: string, plain: Uint8Array): Uint8Array {
    return this.encrypt(key, plain);
  }
  fromStored(key: string, stored: Uint8Array): Uint8Array {
    return this.decrypt(key, stored);
  }

  private rule(key: string): Rule | undefined {
    const r = resourceOfKey(key);
    return r && this.rules.find((rule) => rule.patterns.some((p) => matches(p, r)));
  }

  encrypt(key: string, plain: Uint8Array): Uint8Array {
    const rule = this.rule(key);
    return rule ? rule.transformers[0]!.encrypt(plain, key) : plain;
  }

  /** Reads with whichever provider's prefix the value carries; identity reads unprefixed values only when listed. */
  decrypt(key: string, stored: Uint8Array): Uint8Array {
    const rule = this.rule(key);
    const head = Buffer.from(stored.subarray(0, 128)).toString('latin1');
    const isEncrypted = head.startsWith('k8s:enc:');
    const transformers = rule?.transformers ?? [identity];
    for (const t of transformers) {
      if (t.prefix === '' ? isEncrypted : !head.startsWith(t.prefix)) continue;
      try {
        return t.decrypt(stored, key);
      } catch (err) {
        // a read that waits for a KMS plugin is not a failure (yet), nor is a failure the provider already named
        if (err instanceof PendingTransform || err instanceof TransformError) throw err;
        throw new TransformError(key, `failed to decrypt ${key} with ${t.prefix.slice(0, -1)}: ${(err as Error).message}`);
      }
    }
    throw new TransformError(key, isEncrypted ? `no configured key can read ${key} (${head.split(':').slice(0, 5).join(':')})` : `${key} is stored unencrypted and identity is not a listed provider`);
  }
}

/** Parses an EncryptionConfiguration document (YAML or JSON); errors name the offending field. */
export function parseEncryptionConfig(text: string): ValueTransformer {
  let doc: { apiVersion?: string; kind?: string; resources?: unknown };
  try {
    doc = yamlLibrary().parse(text) ?? {};
  } catch (err) {
    throw new EncryptionConfigError(`encryption provider config is not valid YAML: ${(err as Error).message}`);
  }
  if (doc.kind !== 'EncryptionConfiguration') throw new EncryptionConfigError(`kind: must be EncryptionConfiguration (got ${JSON.stringify(doc.kind)})`);
  if (doc.apiVersion !== 'apiserver.config.svc.io/v1') throw new EncryptionConfigError(`apiVersion: must be apiserver.config.svc.io/v1 (got ${JSON.stringify(doc.apiVersion)})`);
  if (!Array.isArray(doc.resources) || doc.resources.length === 0) throw new EncryptionConfigError('resources: at least one rule is required');
  const kms: KmsV2Provider[] = [];
  const rules = doc.resources.map((r: { resources?: unknown; providers?: unknown }, i: number): Rule => {
    if (!Array.isArray(r?.resources) || r.resources.length === 0 || !r.resources.every((x) => typeof x === 'string' && x))
      throw new EncryptionConfigError(`resources[${i}].resources: a list of resource names is required`);
    if (!Array.isArray(r.providers) || r.providers.length === 0) throw new EncryptionConfigError(`resources[${i}].providers: at least one provider is required`);
    const transformers = r.providers.flatMap((p, j) => providerTransformers(p as Record<string, unknown>, `resources[${i}].providers[${j}]`, kms));
    return { patterns: r.resources as string[], transformers };
  });
  return new ValueTransformer(rules, kms);
}
