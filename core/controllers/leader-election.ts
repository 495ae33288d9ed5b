/**
 * Leader election on a Lease (coordination.svc.io/v1), as client-go's leaderelection with a LeaseLock
 * does it: a candidate takes the lease when it is free or when its holder has not renewed it for
 * leaseDuration (measured on the candidate's own clock from when it last saw the record change), the
 * leader renews it every retryPeriod and gives up leadership when it could not renew for
 * renewDeadline; every write is a compare-and-swap on the lease's resourceVersion, so two candidates
 * never both win. A leader that stops releases the lease, so another takes over at its next try.
 */
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import type { MaybePromise } from '../api/maybe-async.js';
import type { ControllerIdentity, TypedClient } from '../registry/client.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type Lease = ApiObject & { spec?: LeaseSpec };

export interface LeaderElectionTiming {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** upstream's controller manager: 15s, 10s, 2s */
export const defaultLeaderElectionTiming: LeaderElectionTiming = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** The user upstream's controller manager writes its lease as, in our spelling. */
export const controllerManagerIdentity: ControllerIdentity = {
  user: { username: 'system:svc-controller-manager', groups: ['system:authenticated'] },
  userAgent: 'svc-apiserver/leader-election',
};

export interface LeaderElectorOptions extends LeaderElectionTiming {
  client: TypedClient;
  leases: Lister;
  leaseType: ResourceType;
  namespace: string;
  name: string;
  /** This candidate's identity (upstream: <hostname>_<uuid>). */
  identity: string;
  /** Resolves once the listers hold every acknowledged write (a consistent read of the lease). */
  syncConsistent(): MaybePromise<unknown>;
  onStartedLeading(): void;
  onStoppedLeading(): void;
}

const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export class LeaderElector {
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** The record as last seen, and when (local clock): a holder is live until it stays unchanged for leaseDuration. */
  private observed: { holder: string; renewTime: string } | undefined;
  private observedAt = 0;
  private lastRenew = 0;

  constructor(private readonly o: LeaderElectorOptions) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    void this.tick();
  }

  private schedule(): void {
    if (this.stopped) return;
    // jitter as client-go's (up to 1.2x the period) so candidates do not move in step
    this.timer = setTimeout(() => void this.tick(), this.o.retryPeriodMs * (1 + Math.random() * 0.2));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    let held = false;
    try {
      held = await this.tryAcquireOrRenew();
    } catch (err) {
      console.warn(`svc-apiserver: leader election ${this.o.namespace}/${this.o.name}: ${(err as Error).message}`);
    }
    if (this.stopped) return;
    const now = Date.now();
    if (held) {
      this.lastRenew = now;
      if (!this.leading) {
        this.leading = true;
        console.log(`svc-apiserver: ${this.o.identity} became leader of ${this.o.namespace}/${this.o.name}`);
        this.o.onStartedLeading();
      }
    } else if (this.leading && now - this.lastRenew > this.o.renewDeadlineMs) {
      this.leading = false;
      console.warn(`svc-apiserver: ${this.o.identity} lost leadership of ${this.o.namespace}/${this.o.name}`);
      this.o.onStoppedLeading();
    }
    this.schedule();
  }

  private async current(): Promise<Lease | undefined> {
    await this.o.syncConsistent();
    return this.o.leases.get(this.o.namespace, this.o.name) as Lease | undefined;
  }

  /** One attempt; true when this candidate holds the lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const desired: LeaseSpec = {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.max(1, Math.round(this.o.leaseDurationMs / 1000)),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    const lease = await this.current();
    if (!lease) {
      return this.write(() => this.o.client.create(this.o.leaseType, { apiVersion: 'coordination.svc.io/v1', kind: 'Lease', metadata: { name: this.o.name, namespace: this.o.namespace }, spec: desired }));
    }
    const spec = lease.spec ?? {};
    const record = { holder: spec.holderIdentity ?? '', renewTime: spec.renewTime ?? '' };
    if (!this.observed || this.observed.holder !== record.holder || this.observed.renewTime !== record.renewTime) {
      this.observed = record;
      this.observedAt = Date.now();
    }
    const mine = record.holder === this.o.identity;
    const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    if (record.holder && !mine && this.observedAt + durationMs > Date.now()) return false;
    if (mine) {
      desired.acquireTime = spec.acquireTime ?? desired.acquireTime;
      desired.leaseTransitions = spec.leaseTransitions ?? 0;
    } else desired.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
    const ok = await this.write(() => this.o.client.update(this.o.leaseType, { ...lease, spec: { ...spec, ...desired } }));
    if (ok) {
      this.observed = { holder: this.o.identity, renewTime: desired.renewTime! };
      this.observedAt = Date.now();
    }
    return ok;
  }

  /** A compare-and-swap write: false when another candidate wrote first (409). */
  private async write(fn: () => Promise<unknown>): Promise<boolean> {
    try {
      await fn();
      return true;
    } catch (err) {
      if (err instanceof StatusError && (err.status.code === 409 || err.status.code === 404)) return false;
      throw err;
    }
  }

  /** Stops campaigning; a leader releases the lease (holder cleared) so another candidate can take it at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (!this.leading) return;
    this.leading = false;
    this.o.onStoppedLeading();
    try {
      const lease = await this.current();
      if (!lease || lease.spec?.holderIdentity !== this.o.identity) return;
      const now = microTime(new Date());
      await this.o.client.update(this.o.leaseType, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now },
      });
    } catch (err) {
      console.warn(`svc-apiserver: releasing ${this.o.namespace}/${this.o.name}: ${(err as Error).message}`);
    }
  }
}
