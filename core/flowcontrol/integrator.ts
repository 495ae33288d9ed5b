/**
 * upstream's fairqueuing Integrator: a value followed through time, giving its time-weighted average,
 * standard deviation and extremes since the last reset. A level's seat demand (seats in use plus
 * seats waiting) is integrated so that lending and borrowing follow the demand's average plus one
 * deviation rather than its peaks.
 */
export interface IntegratorResults {
  /** Seconds integrated. */
  duration: number;
  average: number;
  deviation: number;
  min: number;
  max: number;
}

export class Integrator {
  private x = 0;
  private last: number;
  private elapsed = 0;
  private integralX = 0;
  private integralXX = 0;
  private min = 0;
  private max = 0;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.last = now();
  }

  /** `t`: now, when the caller has read the clock already. */
  set(x: number, t?: number): void {
    this.update(t);
    this.x = x;
    if (x < this.min) this.min = x;
    if (x > this.max) this.max = x;
  }

  private update(t = this.now()): void {
    const dt = (t - this.last) / 1000;
    this.last = t;
    this.elapsed += dt;
    this.integralX += this.x * dt;
    this.integralXX += this.x * this.x * dt;
  }

  results(): IntegratorResults {
    this.update();
    let average = NaN;
    let deviation = NaN;
    if (this.elapsed > 0) {
      average = this.integralX / this.elapsed;
      const variance = this.integralXX / this.elapsed - average * average;
      // rounding can make a constant's variance a hair below zero
      deviation = variance >= 0 ? Math.sqrt(variance) : NaN;
    }
    return { duration: this.elapsed, average, deviation, min: this.min, max: this.max };
  }

  /** The results so far; integration starts again from the value held now. */
  reset(): IntegratorResults {
    const r = this.results();
    this.elapsed = 0;
    this.integralX = 0;
    this.integralXX = 0;
    this.min = this.x;
    this.max = this.x;
    return r;
  }
}
