/**
 * The cleaner (upstream's csrcleaner): every hour, deletes requests that are done with: approved and
 * issued for more than an hour, denied or failed for more than an hour, pending for more than a day,
 * or whose issued certificate has expired. The clock is injectable and `sweep()` runs one pass.
 */
import { X509Certificate } from 'node:crypto';
import { StatusError } from '../api/status.js';
import { pemBlocks } from '../certificates/x509.js';
import type { Csr } from '../registry/certificates/certificatesigningrequests.js';
import type { TypedClient } from '../registry/client.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';

export const CLEANER_POLL_MS = 3_600_000;
export const APPROVED_EXPIRATION_MS = 3_600_000;
export const DENIED_EXPIRATION_MS = 3_600_000;
export const PENDING_EXPIRATION_MS = 24 * 3_600_000;

/** Why the cleaner deletes this request now, or undefined. */
export function cleanupReason(csr: Csr, now: number): string | undefined {
  const olderThan = (ts: string | undefined, ms: number): boolean => !!ts && now - Date.parse(ts) > ms;
  const conditions = csr.status?.conditions ?? [];
  const issued = !!csr.status?.certificate;
  for (const c of conditions) {
    if (c.type === 'Approved' && issued && olderThan(c.lastUpdateTime, APPROVED_EXPIRATION_MS)) return 'approved and issued more than 1h ago';
    if (c.type === 'Denied' && olderThan(c.lastUpdateTime, DENIED_EXPIRATION_MS)) return 'denied more than 1h ago';
    if (c.type === 'Failed' && olderThan(c.lastUpdateTime, DENIED_EXPIRATION_MS)) return 'failed more than 1h ago';
  }
  if (!conditions.length && olderThan(csr.metadata.creationTimestamp ?? undefined, PENDING_EXPIRATION_MS)) return 'pending for more than 24h';
  if (issued && conditions.some((c) => c.type === 'Approved')) {
    const block = pemBlocks(Buffer.from(csr.status!.certificate!, 'base64').toString('latin1'))[0];
    try {
      if (block && now > Date.parse(new X509Certificate(block.bytes).validTo)) return 'its certificate has expired';
    } catch {
      // an unreadable certificate is not the cleaner's to judge (upstream logs it)
    }
  }
  return undefined;
}

/**
 * The certificate controllers' clock and timer: the real ones by default; a test's own runs each of
 * the cleaner's passes itself, at the time it says (ServerOptions.certificatesClock).
 */
export interface ControllerClock {
  /** Milliseconds since the epoch, as Date.now(). */
  now(): number;
  /** Runs `fn` once, `ms` from now, without keeping the process alive for it; returns what cancels it. */
  after(ms: number, fn: () => void): () => void;
}

export const REAL_CONTROLLER_CLOCK: ControllerClock = {
  now: () => Date.now(),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

export class CsrCleaner {
  private cancel: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly client: TypedClient,
    private readonly csrs: Lister,
    private readonly csrType: ResourceType,
    private readonly clock: ControllerClock = REAL_CONTROLLER_CLOCK,
    private readonly pollMs = CLEANER_POLL_MS,
  ) {}

  /** A pass now, then one every poll interval (upstream's wait.Until). */
  start(): void {
    const loop = (): void => {
      void this.sweep().finally(() => {
        if (!this.stopped) this.cancel = this.clock.after(this.pollMs, loop);
      });
    };
    loop();
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
  }

  /** One pass over every request; returns the names deleted. */
  async sweep(): Promise<string[]> {
    const deleted: string[] = [];
    for (const csr of this.csrs.list() as Csr[]) {
      if (!cleanupReason(csr, this.clock.now())) continue;
      try {
        await this.client.delete(this.csrType, '', csr.metadata.name!);
        deleted.push(csr.metadata.name!);
      } catch (e) {
        if (!(e instanceof StatusError) || e.code !== 404) console.warn(`svc-apiserver: csrcleaner: ${csr.metadata.name}: ${(e as Error).message}`);
      }
    }
    return deleted;
  }
}
