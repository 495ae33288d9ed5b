/**
 * A real KMS v2 plugin for tests: a grpc-js server of v2.KeyManagementService (proto/kms/v2/api.proto)
 * on a unix socket in a temp dir. It holds its own AES-256-GCM key per key id (the current one
 * encrypts; every one it ever had decrypts, so a rotation keeps old values readable), counts the calls
 * it answers, and can be told to report unhealthy, to fail Decrypt, to rotate its key id, or to stop
 * and start again on the same socket.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadPackageDefinition, Server, ServerCredentials, status as Code, type ServiceDefinition, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { kmsApiProtoPath } from '../../core/storage/kms-v2.js';
import { tempDir } from './server.js';

const sleep = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

const service = (
  loadPackageDefinition(loadSync(kmsApiProtoPath(), { keepCase: true, defaults: true })) as unknown as { v2: { KeyManagementService: { service: ServiceDefinition } } }
).v2.KeyManagementService.service;

/** The annotation every Encrypt answer carries (stored with the value, sent back on Decrypt). */
export const PLUGIN_ANNOTATION = 'version.kms-plugin.svc.io';

export class KmsPlugin {
  readonly socketPath: string;
  readonly endpoint: string;
  /** Calls received, by method. */
  readonly calls = { Status: 0, Encrypt: 0, Decrypt: 0 };
  /** Encrypt calls answered (the caller has the seed once it has read the answer). */
  encryptsAnswered = 0;
  /** What Status reports as healthz ("ok" when healthy). */
  healthz = 'ok';
  /** When set, Decrypt answers this error. */
  failDecrypt: string | undefined;
  /** How long each method waits before it answers (a slow plugin). */
  readonly delayMs = { Encrypt: 0, Decrypt: 0 };
  private readonly keys = new Map<string, Buffer>();
  private keyId = '';
  private server: Server | undefined;

  constructor(dir: string = tempDir('svc-kms-')) {
    this.socketPath = join(dir, 'kms.sock');
    this.endpoint = `unix://${this.socketPath}`;
    this.rotate();
  }

  /** The key id Encrypt uses now. */
  get currentKeyId(): string {
    return this.keyId;
  }

  /** A new key encryption key under a new key id (the old ones still decrypt). */
  rotate(): string {
    this.keyId = `key-${this.keys.size + 1}`;
    this.keys.set(this.keyId, randomBytes(32));
    return this.keyId;
  }

  async start(): Promise<this> {
    rmSync(this.socketPath, { force: true });
    const server = new Server();
    server.addService(service, {
      Status: (_call: ServerUnaryCall<object, unknown>, cb: sendUnaryData<unknown>) => {
        this.calls.Status++;
        cb(null, { version: 'v2', healthz: this.healthz, key_id: this.keyId });
      },
      Encrypt: async (call: ServerUnaryCall<{ plaintext: Buffer }, unknown>, cb: sendUnaryData<unknown>) => {
        this.calls.Encrypt++;
        await sleep(this.delayMs.Encrypt);
        const nonce = randomBytes(12);
        const c = createCipheriv('aes-256-gcm', this.keys.get(this.keyId)!, nonce);
        const body = Buffer.concat([c.update(call.request.plaintext), c.final()]);
        cb(null, { ciphertext: Buffer.concat([nonce, body, c.getAuthTag()]), key_id: this.keyId, annotations: { [PLUGIN_ANNOTATION]: Buffer.from('1') } });
        this.encryptsAnswered++;
      },
      Decrypt: async (call: ServerUnaryCall<{ ciphertext: Buffer; key_id: string; annotations: Record<string, Buffer> }, unknown>, cb: sendUnaryData<unknown>) => {
        this.calls.Decrypt++;
        await sleep(this.delayMs.Decrypt);
        const { ciphertext, key_id, annotations } = call.request;
        const key = this.keys.get(key_id);
        if (this.failDecrypt) return cb({ code: Code.INTERNAL, details: this.failDecrypt });
        if (!key) return cb({ code: Code.INVALID_ARGUMENT, details: `unknown key id ${key_id}` });
        if (annotations[PLUGIN_ANNOTATION]?.toString() !== '1') return cb({ code: Code.INVALID_ARGUMENT, details: 'the annotations sent back are not the ones Encrypt answered' });
        try {
          const d = createDecipheriv('aes-256-gcm', key, ciphertext.subarray(0, 12));
          d.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
          cb(null, { plaintext: Buffer.concat([d.update(ciphertext.subarray(12, ciphertext.length - 16)), d.final()]) });
        } catch (err) {
          cb({ code: Code.INVALID_ARGUMENT, details: `cannot decrypt: ${(err as Error).message}` });
        }
      },
    });
    await new Promise<void>((resolve, reject) => server.bindAsync(this.endpoint, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
    this.server = server;
    return this;
  }

  /** Stops answering (the socket goes away); start() brings it back with the same keys. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) server.forceShutdown();
    rmSync(this.socketPath, { force: true });
  }
}

/** An EncryptionConfiguration with Secrets under `providers` (YAML list items, indented as under `providers:`). */
export function secretsEncryptionConfig(providers: string[]): string {
  return `apiVersion: apiserver.config.svc.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
${providers.map((p) => `      - ${p}\n`).join('')}`;
}

/** One kms v2 provider entry (flow style) for secretsEncryptionConfig. */
export const kmsProviderEntry = (name: string, endpoint: string, timeout = '3s'): string => `kms: {apiVersion: v2, name: ${name}, endpoint: "${endpoint}", timeout: ${timeout}}`;
