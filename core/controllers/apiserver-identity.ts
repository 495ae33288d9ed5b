/**
 * API server identity (upstream's APIServerIdentity, beta, on): each server publishes a Lease in
 * svc-system named after a hash of where it runs, labelled `apiserver.svc.io/identity: svc-apiserver`,
 * held by `<lease name>_<uuid>` for an hour and renewed every 10 seconds; and every server removes
 * identity leases nobody renewed for their duration (servers that went away). Servers sharing a store
 * so see one another.
 */
import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import type { ControllerIdentity, RegistryClient, TypedClient } from '../registry/client.js';
import type { Lister, Listers } from '../registry/lister.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { LeaseSpec } from './leader-election.js';

export const IDENTITY_LABEL = 'apiserver.svc.io/identity';
export const IDENTITY_VALUE = 'svc-apiserver';
const NAMESPACE = 'svc-system';
const LEASE_SECONDS = 3600;
const RENEW_MS = 10_000;

type Lease = ApiObject & { spec?: LeaseSpec };

const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** `apiserver-<base32 of a sha256>` of the host and the address served (so two servers on one host differ). */
export function identityLeaseName(host: string, address: string): string {
  const digest = createHash('sha256').update(`${host}:${address}`).digest().subarray(0, 16);
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return `apiserver-${out}`;
}

export class IdentityLeases {
  private timers: NodeJS.Timeout[] = [];
  readonly name: string;
  readonly holder: string;

  constructor(
    private readonly client: TypedClient,
    private readonly leases: Lister,
    private readonly leaseType: ResourceType,
    address: string,
  ) {
    this.name = identityLeaseName(hostname(), address);
    this.holder = `${this.name}_${randomUUID()}`;
  }

  /** Publishes this server's lease and removes expired ones; then keeps doing both. */
  async start(): Promise<void> {
    await this.renew();
    await this.collectExpired();
    this.every(RENEW_MS, () => this.renew());
    this.every(LEASE_SECONDS * 1000, () => this.collectExpired());
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  private every(ms: number, fn: () => Promise<void>): void {
    const t = setInterval(() => void fn().catch((err: Error) => console.warn(`svc-apiserver: identity lease ${this.name}: ${err.message}`)), ms);
    t.unref();
    this.timers.push(t);
  }

  private async renew(): Promise<void> {
    const now = microTime(new Date());
    const current = this.leases.get(NAMESPACE, this.name) as Lease | undefined;
    const spec: LeaseSpec = { holderIdentity: this.holder, leaseDurationSeconds: LEASE_SECONDS, renewTime: now };
    try {
      if (!current) {
        await this.client.create(this.leaseType, {
          apiVersion: 'coordination.svc.io/v1',
          kind: 'Lease',
          metadata: { name: this.name, namespace: NAMESPACE, labels: { [IDENTITY_LABEL]: IDENTITY_VALUE, 'svc.io/hostname': hostname() } },
          spec,
        });
      } else {
        await this.client.update(this.leaseType, { ...current, spec: { ...current.spec, ...spec } } as ApiObject);
      }
    } catch (err) {
      // another writer got there first (our own earlier write not yet in the lister): the next renewal wins
      if (!(err instanceof StatusError && (err.status.code === 409 || err.status.code === 404))) throw err;
    }
  }

  /** Deletes identity leases not renewed for their duration (upstream's identity lease garbage collector). */
  private async collectExpired(): Promise<void> {
    const now = Date.now();
    for (const lease of this.leases.list(NAMESPACE) as Lease[]) {
      if (lease.metadata.labels?.[IDENTITY_LABEL] !== IDENTITY_VALUE || lease.metadata.name === this.name) continue;
      const renewed = Date.parse(lease.spec?.renewTime ?? '');
      const duration = (lease.spec?.leaseDurationSeconds ?? LEASE_SECONDS) * 1000;
      if (Number.isFinite(renewed) && renewed + duration > now) continue;
      try {
        await this.client.delete(this.leaseType, NAMESPACE, lease.metadata.name!, {}, { preconditions: { resourceVersion: lease.metadata.resourceVersion } });
      } catch (err) {
        if (!(err instanceof StatusError && (err.status.code === 409 || err.status.code === 404))) throw err;
      }
    }
  }
}

/** The loopback identity the server writes its own lease as (upstream: system:apiserver). */
const apiserverIdentity: ControllerIdentity = { user: { username: 'system:apiserver', groups: ['system:authenticated'] }, userAgent: 'svc-apiserver/identity-lease' };

/** Starts publishing this server's identity lease, with upstream's two post-start hooks; undefined without the Lease API. */
export function startIdentityLeases(
  ctx: { client: RegistryClient; listers: Listers; types: TypeRegistry },
  address: string,
  addHook: (name: string, done: Promise<unknown>) => void,
): IdentityLeases | undefined {
  const leaseType = ctx.types.all().find((t) => t.group === 'coordination.svc.io' && t.plural === 'leases');
  if (!leaseType) return undefined;
  const leases = new IdentityLeases(ctx.client.as(apiserverIdentity), ctx.listers.for(leaseType), leaseType, address);
  const started = leases.start();
  addHook('start-apiserver-identity-lease-controller', started);
  addHook('start-apiserver-identity-lease-garbage-collector', started);
  started.catch((err: Error) => console.warn(`svc-apiserver: identity lease: ${err.message}`));
  return leases;
}
