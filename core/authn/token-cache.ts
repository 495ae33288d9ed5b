/**
 * A bounded cache of token decisions that expire: verified JWTs until their `exp`, webhook answers
 * for --authentication-token-webhook-cache-ttl. A hit costs one map lookup and one clock read, so
 * the common request does no signature check and no network call. When full, the oldest entry goes
 * (insertion order); expired entries are dropped when met.
 */

interface Entry<V> {
  value: V;
  /** Epoch milliseconds after which the entry is no longer used. */
  expiresAt: number;
}

export class TokenCache<V> {
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    private readonly maxEntries = 4096,
    private readonly now: () => number = Date.now,
  ) {}

  get(token: string): V | undefined {
    const e = this.entries.get(token);
    if (e === undefined) return undefined;
    if (this.now() >= e.expiresAt) {
      this.entries.delete(token);
      return undefined;
    }
    return e.value;
  }

  /** Keeps `value` until `expiresAt` (epoch ms); nothing is kept when that is not in the future. */
  set(token: string, value: V, expiresAt: number): void {
    if (!(expiresAt > this.now())) return;
    if (this.entries.has(token)) this.entries.delete(token);
    else if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { value, expiresAt });
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
