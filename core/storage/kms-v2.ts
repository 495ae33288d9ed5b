/**
 * The KMS v2 encryption provider (upstream's `kms` provider with `apiVersion: v2`): envelope
 * encryption with a key encryption key held by a plugin that answers proto/kms/v2/api.proto on a unix
 * socket. The server makes a random 32-byte seed, has the plugin Encrypt it once (at start and when
 * the plugin's Status reports a new key id), and encrypts every value with AES-256-GCM under a key
 * derived from the seed by HKDF-SHA256 and 32 random bytes per write (upstream's
 * HKDF_SHA256_XNONCE_AES_GCM_SEED), the storage key as authenticated data. Stored bytes are
 * `k8s:enc:kms:v2:<name>:` and an EncryptedObject (proto/kms/v2/encrypted-object.proto).
 *
 * Reads use a cache of decrypted seeds keyed by the encrypted seed (with its key id and
 * annotations); a seed not in it (written by another server or before a restart) needs the plugin's
 * Decrypt, which is asynchronous: the read throws PendingTransform, whose promise settles when the
 * seed is cached or the call failed (then reads of that seed fail for a moment, naming the error).
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { ChannelOptions, Client, ServiceError } from '@grpc/grpc-js';
import type * as GrpcModule from '@grpc/grpc-js';
import type * as ProtoLoaderModule from '@grpc/proto-loader';

/** gRPC loads when a KMS plugin is first dialled: a server without one does not spend its start loading it. */
const requireHere = createRequire(import.meta.url);
let grpcModules: { grpc: typeof GrpcModule; protoLoader: typeof ProtoLoaderModule } | undefined;
const grpcLib = () => (grpcModules ??= { grpc: requireHere('@grpc/grpc-js') as typeof GrpcModule, protoLoader: requireHere('@grpc/proto-loader') as typeof ProtoLoaderModule });
import protobuf from 'protobufjs';
import { findProtoDir } from '../codec/protobuf/proto-root.js';
import { PendingTransform, TransformError, type Transformer } from './value-transform.js';

export interface KmsV2Config {
  name: string;
  /** unix:///path/to/socket */
  endpoint: string;
  /** Deadline of one plugin call (and of a write's wait for the first seed), ms. */
  timeoutMs: number;
}

/** The upstream bounds of what a plugin answers and an EncryptedObject holds. */
const KEY_ID_MAX = 1024;
const ENCRYPTED_DEK_SOURCE_MAX = 1024;
const ANNOTATIONS_MAX = 32 * 1024;
const SEED_BYTES = 32;
const INFO_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** A write key is used this long after the last Status that confirmed it (upstream's 3 minutes). */
const WRITE_STATE_TTL_MS = 3 * 60_000;
/** A failed seed Decrypt is answered from memory this long, so readers that waited on it do not call again at once. */
const DECRYPT_FAILURE_TTL_MS = 2_000;
/** Decrypted seeds kept (least recently used dropped). */
const SEED_CACHE_ENTRIES = 4096;

const SOURCE_TYPE_AES_GCM_KEY = 0;
const SOURCE_TYPE_SEED = 1;

/**
 * Upstream's intervals: Status is polled every minute while healthy and every 10 s while not (a new key
 * id makes a new seed); a health check answers from the last Status for 20 s (ok) or 3 s (failing).
 * SVC_KMS_STATUS_INTERVAL_MS sets all four (tests that rotate a plugin's key id or bring it back).
 */
function statusIntervals(): { healthyMs: number; failingMs: number; checkOkMs: number; checkFailingMs: number } {
  const env = Number(process.env.SVC_KMS_STATUS_INTERVAL_MS);
  if (env > 0) return { healthyMs: env, failingMs: env, checkOkMs: env, checkFailingMs: env };
  return { healthyMs: 60_000, failingMs: 10_000, checkOkMs: 20_000, checkFailingMs: 3_000 };
}

interface StatusResponse {
  version: string;
  healthz: string;
  key_id: string;
}
interface EncryptResponse {
  ciphertext: Buffer;
  key_id: string;
  annotations: Record<string, Buffer>;
}

type Unary<Req, Res> = (req: Req, opts: { deadline: number }, cb: (err: ServiceError | null, res?: Res) => void) => void;
interface KmsServiceClient extends Client {
  Status: Unary<Record<string, never>, StatusResponse>;
  Encrypt: Unary<{ plaintext: Buffer; uid: string }, EncryptResponse>;
  Decrypt: Unary<{ ciphertext: Uint8Array; uid: string; key_id: string; annotations: Record<string, Uint8Array> }, { plaintext: Buffer }>;
}

interface EncryptedObject {
  encryptedData: Uint8Array;
  keyID: string;
  encryptedDEKSource: Uint8Array;
  annotations: Record<string, Uint8Array>;
  encryptedDEKSourceType: number;
}

/** The plugin service and the stored message, loaded from <repo>/proto/kms/v2 once a configuration names a kms provider. */
type KmsServiceConstructor = new (target: string, creds: ReturnType<typeof GrpcModule.credentials.createInsecure>, options: ChannelOptions) => KmsServiceClient;
let loaded: { service: KmsServiceConstructor; encryptedObject: protobuf.Type } | undefined;
const protos = () => (loaded ??= loadProtos());

function loadProtos(): NonNullable<typeof loaded> {
  const dir = join(findProtoDir(), 'kms', 'v2');
  const { grpc, protoLoader } = grpcLib();
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(join(dir, 'api.proto'), { keepCase: true, defaults: true, longs: Number })) as unknown as {
    v2: { KeyManagementService: KmsServiceConstructor };
  };
  const root = new protobuf.Root().loadSync(join(dir, 'encrypted-object.proto'));
  return { service: pkg.v2.KeyManagementService, encryptedObject: root.lookupType('v2.EncryptedObject') };
}

/** The KeyManagementService file path as proto/kms/v2 spells it, for plugins written against it (tests). */
export const kmsApiProtoPath = (): string => join(findProtoDir(), 'kms', 'v2', 'api.proto');

export function encodeEncryptedObject(o: EncryptedObject): Uint8Array {
  const type = protos().encryptedObject;
  return type.encode(type.fromObject(o)).finish();
}

export function decodeEncryptedObject(bytes: Uint8Array): EncryptedObject {
  const type = protos().encryptedObject;
  const m = type.toObject(type.decode(bytes), { defaults: true, enums: Number });
  return m as EncryptedObject;
}

/** Upstream's checks of an EncryptedObject, on writes and reads alike. */
function validateEncryptedObject(o: EncryptedObject): void {
  if (o.encryptedDEKSourceType !== SOURCE_TYPE_AES_GCM_KEY && o.encryptedDEKSourceType !== SOURCE_TYPE_SEED) throw new Error(`unknown encryptedDEKSourceType: ${o.encryptedDEKSourceType}`);
  if (!o.encryptedData.length) throw new Error('encrypted data is empty');
  if (!o.encryptedDEKSource.length) throw new Error('failed to validate encrypted DEK source: encrypted DEK source is empty');
  if (o.encryptedDEKSource.length > ENCRYPTED_DEK_SOURCE_MAX)
    throw new Error(`failed to validate encrypted DEK source: encrypted DEK source is ${o.encryptedDEKSource.length} bytes, which exceeds the max size of ${ENCRYPTED_DEK_SOURCE_MAX}`);
  const keyIdError = keyIdProblem(o.keyID);
  if (keyIdError) throw new Error(`failed to validate key id: ${keyIdError}`);
  const annotationsError = annotationsProblem(o.annotations);
  if (annotationsError) throw new Error(`failed to validate annotations: ${annotationsError}`);
}

function keyIdProblem(keyID: string): string | undefined {
  if (!keyID) return 'keyID is empty';
  if (keyID.length > KEY_ID_MAX) return `keyID is ${keyID.length} bytes, which exceeds the max size of ${KEY_ID_MAX}`;
  return undefined;
}

const FQDN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;

function annotationsProblem(annotations: Record<string, Uint8Array>): string | undefined {
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) {
    if (!FQDN.test(k)) return `annotations: Invalid value: ${JSON.stringify(k)}: should be a domain with at least two segments separated by dots`;
    size += k.length + v.length;
  }
  return size > ANNOTATIONS_MAX ? `annotations exceeds the max size of ${ANNOTATIONS_MAX}, got ${size}` : undefined;
}

/** The seed cache's key: everything the plugin needs to decrypt the seed, so equal keys mean the same seed. */
function seedCacheKey(o: Pick<EncryptedObject, 'encryptedDEKSourceType' | 'encryptedDEKSource' | 'keyID' | 'annotations'>): string {
  const h = createHash('sha256');
  const part = (b: Uint8Array | string) => {
    const bytes = typeof b === 'string' ? Buffer.from(b) : b;
    h.update(Buffer.from(Uint32Array.of(bytes.length).buffer)).update(bytes);
  };
  part(String(o.encryptedDEKSourceType));
  part(o.encryptedDEKSource);
  part(o.keyID);
  for (const k of Object.keys(o.annotations).sort()) {
    part(k);
    part(o.annotations[k]!);
  }
  return h.digest('base64');
}

/** HKDF-Expand (RFC 5869) with SHA-256 for one 32-byte block, the seed as the pseudorandom key, as upstream (no extract step). */
const deriveKey = (seed: Uint8Array, info: Uint8Array): Buffer => createHmac('sha256', seed).update(info).update(Uint8Array.of(1)).digest();

/** AES-GCM: nonce || ciphertext || tag, the storage key as authenticated data. */
function gcmSeal(key: Uint8Array, plain: Uint8Array, aad: string): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const c = createCipheriv(`aes-${key.length * 8}-gcm` as 'aes-256-gcm', key, nonce);
  c.setAAD(Buffer.from(aad));
  const body = Buffer.concat([c.update(plain), c.final()]);
  return Buffer.concat([nonce, body, c.getAuthTag()]);
}

function gcmOpen(key: Uint8Array, sealed: Uint8Array, aad: string): Buffer {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) throw new Error('the stored data was shorter than the required size');
  const d = createDecipheriv(`aes-${key.length * 8}-gcm` as 'aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([d.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)), d.final()]);
}

function openWithSeed(seed: Uint8Array, data: Uint8Array, aad: string): Buffer {
  if (data.length < INFO_BYTES) throw new Error('the stored data was shorter than the required size');
  const info = data.subarray(0, INFO_BYTES);
  return gcmOpen(deriveKey(seed, info), data.subarray(INFO_BYTES), aad);
}

/** A Map used as a least-recently-used cache of decrypted seeds. */
class SeedCache {
  private readonly seeds = new Map<string, Buffer>();
  get(key: string): Buffer | undefined {
    const seed = this.seeds.get(key);
    if (seed) {
      this.seeds.delete(key);
      this.seeds.set(key, seed);
    }
    return seed;
  }
  set(key: string, seed: Buffer): void {
    this.seeds.delete(key);
    this.seeds.set(key, seed);
    if (this.seeds.size > SEED_CACHE_ENTRIES) this.seeds.delete(this.seeds.keys().next().value!);
  }
}

/** What writes use: the seed, how the plugin encrypted it, and until when (without a newer Status). */
interface WriteState {
  seed: Buffer;
  keyID: string;
  encryptedDEKSource: Buffer;
  annotations: Record<string, Buffer>;
  expiresAt: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** One `kms` provider of an EncryptionConfiguration: its plugin connection, write seed and read cache. */
export class KmsV2Provider implements Transformer {
  readonly prefix: string;
  private client?: KmsServiceClient;
  private state?: WriteState;
  /** Why there is no usable write state, once a try to make one failed. */
  private stateError?: string;
  /** The Status (and, on a new key id, seed Encrypt) round in flight. */
  private refreshing?: Promise<void>;
  /** The last Status round: when, and its failure (undefined: healthy). */
  private lastStatus?: { at: number; error: string | undefined };
  private readonly seeds = new SeedCache();
  private readonly decrypting = new Map<string, Promise<void>>();
  private readonly decryptFailures = new Map<string, { message: string; until: number }>();
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(readonly config: KmsV2Config) {
    this.prefix = `k8s:enc:kms:v2:${config.name}:`;
  }

  /** Connects and makes the first write seed; later Status rounds follow on a timer. */
  start(): void {
    // reconnect within seconds once a plugin that was down is back (grpc's default backoff grows to two minutes)
    this.client = new (protos().service)(this.config.endpoint, grpcLib().grpc.credentials.createInsecure(), { 'grpc.max_reconnect_backoff_ms': 5000 });
    void this.refresh();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.client?.close();
  }

  private deadline = (): number => Date.now() + this.config.timeoutMs;

  private call<Req, Res>(method: 'Status' | 'Encrypt' | 'Decrypt', req: Req): Promise<Res> {
    const client = this.client;
    if (!client) return Promise.reject(new Error('the provider is not started'));
    return new Promise((resolve, reject) => {
      (client[method] as unknown as Unary<Req, Res>).call(client, req, { deadline: this.deadline() }, (err, res) => (err ? reject(new Error(err.details || err.message)) : resolve(res!)));
    });
  }

  /** One Status round (shared by concurrent callers); a new key id makes a new write seed. */
  private refresh(): Promise<void> {
    this.refreshing ??= this.statusRound().finally(() => {
      this.refreshing = undefined;
      this.schedule();
    });
    return this.refreshing;
  }

  private schedule(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    const { healthyMs, failingMs } = statusIntervals();
    this.timer = setTimeout(() => void this.refresh(), this.lastStatus?.error ? failingMs : healthyMs).unref();
  }

  private async statusRound(): Promise<void> {
    let error: string | undefined;
    try {
      const s = await this.call<Record<string, never>, StatusResponse>('Status', {});
      if (s.healthz !== 'ok') throw new Error(`got unexpected healthz status: ${s.healthz}`);
      if (s.version !== 'v2' && s.version !== 'v2beta1') throw new Error(`expected KMSv2 API version v2, got ${s.version}`);
      const keyIdError = keyIdProblem(s.key_id);
      if (keyIdError) throw new Error(keyIdError);
      if (this.state && this.state.keyID === s.key_id) this.state.expiresAt = Date.now() + WRITE_STATE_TTL_MS;
      else await this.newWriteSeed(s.key_id);
      this.stateError = undefined;
    } catch (err) {
      error = (err as Error).message;
      if (!this.state || Date.now() > this.state.expiresAt) this.stateError = error;
    }
    this.lastStatus = { at: Date.now(), error };
  }

  /** A fresh seed, encrypted once by the plugin; it is also cached for reading back what it writes. */
  private async newWriteSeed(statusKeyId: string): Promise<void> {
    const seed = randomBytes(SEED_BYTES);
    const r = await this.call<{ plaintext: Buffer; uid: string }, EncryptResponse>('Encrypt', { plaintext: seed, uid: randomUUID() });
    // as upstream: a seed the plugin encrypted under another key than Status named is not used (the current one coasts)
    if (r.key_id !== statusKeyId) throw new Error(`failed to rotate DEK: Encrypt answered key id ${JSON.stringify(r.key_id)}, Status ${JSON.stringify(statusKeyId)}`);
    const annotations = r.annotations ?? {};
    const probe: EncryptedObject = { encryptedData: Uint8Array.of(0), keyID: r.key_id, encryptedDEKSource: r.ciphertext, annotations, encryptedDEKSourceType: SOURCE_TYPE_SEED };
    try {
      validateEncryptedObject(probe);
    } catch (err) {
      throw new Error(`failed to encrypt DEK, error: ${(err as Error).message}`);
    }
    this.seeds.set(seedCacheKey(probe), seed);
    this.state = { seed, keyID: r.key_id, encryptedDEKSource: r.ciphertext, annotations, expiresAt: Date.now() + WRITE_STATE_TTL_MS };
  }

  /** The health check: Status again when the last answer is older than the polling interval. */
  async health(): Promise<string | undefined> {
    const { checkOkMs, checkFailingMs } = statusIntervals();
    const last = this.lastStatus;
    if (!last || Date.now() - last.at >= (last.error ? checkFailingMs : checkOkMs)) await this.refresh();
    const error = this.lastStatus?.error;
    return error && `failed to perform status section of the healthz check for KMS Provider ${this.config.name}, error: ${error}`;
  }

  encrypt(plain: Uint8Array, key: string): Uint8Array {
    const s = this.state;
    if (!s || Date.now() > s.expiresAt) throw this.noWriteState();
    const info = randomBytes(INFO_BYTES);
    const encryptedData = Buffer.concat([info, gcmSeal(deriveKey(s.seed, info), plain, key)]);
    const body = encodeEncryptedObject({ encryptedData, keyID: s.keyID, encryptedDEKSource: s.encryptedDEKSource, annotations: s.annotations, encryptedDEKSourceType: SOURCE_TYPE_SEED });
    return Buffer.concat([Buffer.from(this.prefix), body]);
  }

  /** While the first round is under way a write waits for it (at most the timeout); after that it fails at once, naming why. */
  private noWriteState(): Error {
    const failure = new Error(`KMS provider ${this.config.name} cannot encrypt: ${this.stateError ?? (this.state ? 'its data encryption key expired and the plugin has not confirmed it since' : 'no data encryption key from the plugin yet')}`);
    if (this.refreshing && !this.stateError) return new PendingTransform(Promise.race([this.refreshing, sleep(this.config.timeoutMs)]), failure);
    return failure;
  }

  decrypt(stored: Uint8Array, key: string): Uint8Array {
    const o = decodeEncryptedObject(stored.subarray(this.prefix.length));
    validateEncryptedObject(o);
    const cacheKey = seedCacheKey(o);
    const seed = this.seeds.get(cacheKey);
    if (!seed) throw this.seedMissing(cacheKey, o, key);
    return o.encryptedDEKSourceType === SOURCE_TYPE_SEED ? openWithSeed(seed, o.encryptedData, key) : gcmOpen(seed, o.encryptedData, key);
  }

  /** A recent Decrypt failure of the seed, or the marker of the Decrypt call that will bring it. */
  private seedMissing(cacheKey: string, o: EncryptedObject, key: string): Error {
    const failed = this.decryptFailures.get(cacheKey);
    if (failed && failed.until > Date.now()) return new Error(failed.message);
    this.decryptFailures.delete(cacheKey);
    let call = this.decrypting.get(cacheKey);
    if (!call) {
      call = this.decryptSeed(cacheKey, o).finally(() => this.decrypting.delete(cacheKey));
      this.decrypting.set(cacheKey, call);
    }
    return new PendingTransform(call, new TransformError(key, `failed to decrypt ${key} with ${this.prefix.slice(0, -1)}: the KMS plugin did not answer`));
  }

  private async decryptSeed(cacheKey: string, o: EncryptedObject): Promise<void> {
    try {
      const r = await this.call<object, { plaintext: Buffer }>('Decrypt', { ciphertext: o.encryptedDEKSource, uid: randomUUID(), key_id: o.keyID, annotations: o.annotations });
      const n = r.plaintext.length;
      const ok = o.encryptedDEKSourceType === SOURCE_TYPE_SEED ? n >= SEED_BYTES : n === 16 || n === 24 || n === 32;
      if (!ok) throw new Error(`the plugin answered a ${n} byte key`);
      this.seeds.set(cacheKey, Buffer.from(r.plaintext));
    } catch (err) {
      this.decryptFailures.set(cacheKey, { message: `failed to decrypt DEK, error: ${(err as Error).message}`, until: Date.now() + DECRYPT_FAILURE_TTL_MS });
    }
  }
}

/** Go's duration syntax as upstream's config takes it ("3s", "500ms", "1m30s"), in ms; undefined when it is not one. */
export function parseGoDuration(text: string): number | undefined {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const m = /^([-+]?)((?:\d+(?:\.\d*)?(?:ns|us|µs|ms|s|m|h))+|0)$/.exec(text);
  if (!m) return undefined;
  let ms = 0;
  for (const part of m[2]!.matchAll(/(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(part[1]) * units[part[2]!]!;
  return m[1] === '-' ? -ms : ms;
}
