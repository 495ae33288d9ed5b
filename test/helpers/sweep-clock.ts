/**
 * A clock for the stuck-watch sweep (core/server/endpoints/watch.ts, SweepClock) that a test runs by
 * hand: no look happens on its own. look() moves the clock to the time of the sweep's next look, runs
 * it, and resolves once the look has decided (the sweep has set its next one), whatever the time it
 * took: what a look finds depends on what the test did, not on how fast the machine is.
 */
import type { SweepClock } from '../../core/server/endpoints/watch.js';

interface Pending {
  at: number;
  fn: () => void;
}

export class SteppedSweepClock implements SweepClock {
  private t = 0;
  private pending: Pending | undefined;
  private onSet: (() => void) | undefined;
  /** Looks run so far. */
  looks = 0;

  now = (): number => this.t;

  after = (ms: number, fn: () => void): (() => void) => {
    const p: Pending = { at: this.t + ms, fn };
    this.pending = p;
    this.onSet?.();
    return () => {
      if (this.pending === p) this.pending = undefined;
    };
  };

  /** The sweep's next look, once it has set one (it does whenever a watch is open). */
  private next(): Promise<Pending> {
    if (this.pending) return Promise.resolve(this.pending);
    return new Promise((resolve) => {
      this.onSet = () => {
        this.onSet = undefined;
        resolve(this.pending!);
      };
    });
  }

  /** Runs the sweep's next look at its time on this clock; resolves once the look has decided. */
  async look(): Promise<void> {
    const p = await this.next();
    this.pending = undefined;
    this.t = p.at;
    this.looks++;
    p.fn();
    await this.next();
  }
}
