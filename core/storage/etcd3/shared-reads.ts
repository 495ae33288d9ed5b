/**
 * Linearizable reads shared by concurrent callers, per key: a caller that finds a read of its key in
 * flight joins the next one, sent once that returns, because the one in flight may have been sent
 * before the caller's own writes were acknowledged. A read that starts after a caller arrived reflects
 * every write acknowledged before, so sharing keeps each caller's read linearizable, and a burst of
 * reads of one key costs etcd about one read per round trip.
 */
export class SharedReads {
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private readonly queued = new Map<string, Promise<unknown>>();

  run<T>(key: string, read: () => Promise<T>): Promise<T> {
    const current = this.inFlight.get(key) as Promise<T> | undefined;
    if (!current) return this.start(key, read);
    let next = this.queued.get(key) as Promise<T> | undefined;
    if (!next) {
      next = current
        .catch(() => undefined)
        .then(() => {
          this.queued.delete(key);
          return this.start(key, read);
        });
      this.queued.set(key, next);
    }
    return next;
  }

  private start<T>(key: string, read: () => Promise<T>): Promise<T> {
    const p = read();
    this.inFlight.set(key, p);
    const clear = () => {
      if (this.inFlight.get(key) === p) this.inFlight.delete(key);
    };
    p.then(clear, clear);
    return p;
  }
}
