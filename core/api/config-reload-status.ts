/**
 * The outcome of automatic reloads of a configuration file (--authentication-config,
 * --authorization-config): the figures behind upstream's
 * apiserver_{authentication,authorization}_config_controller_* metrics.
 */
import { createHash } from 'node:crypto';

export type ReloadOutcome = 'success' | 'failure';

export class ConfigReloadStatus {
  /** Seconds since the epoch of the last reload with each outcome. */
  readonly lastTimestampSeconds: Partial<Record<ReloadOutcome, number>> = {};
  readonly reloadsTotal: Record<ReloadOutcome, number> = { success: 0, failure: 0 };
  /** sha256 of the configuration in force (upstream's last_config_info hash label). */
  configHash = '';
  lastError = '';

  constructor(private readonly now: () => number = Date.now) {}

  loaded(data: string): void {
    this.configHash = `sha256:${createHash('sha256').update(data).digest('hex')}`;
  }

  record(outcome: ReloadOutcome, data?: string, error?: string): void {
    this.lastTimestampSeconds[outcome] = this.now() / 1000;
    this.reloadsTotal[outcome]++;
    if (outcome === 'success' && data !== undefined) this.loaded(data);
    this.lastError = error ?? '';
  }
}
