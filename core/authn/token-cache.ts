/**
 * A bounded cache of token verdicts, each expiring at its own time (a verified JWT at its `exp`).
 * When full, the oldest entry goes first. The common request path is one Map lookup and one clock
 * read; nothing is verified twice while an entry lives.
 */
export class TokenCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();

  constructor(
    private readonly capacity: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(token: string): V | undefined {
    const e = this.entries.get(token);
    if (e === undefined) return undefined;
    if (e.expiresAt <= this.now()) {
      this.entries.delete(token);
      return undefined;
    }
    return e.value;
  }

  /** Keeps `value` until `expiresAt` (ms since epoch). */
  set(token: string, value: V, expiresAt: number): void {
    if (expiresAt <= this.now()) return;
    this.entries.delete(token);
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { value, expiresAt });
  }
}
