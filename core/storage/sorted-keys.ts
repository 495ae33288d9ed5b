/**
 * SortedKeys: the key order of a WatchCache. Writes are O(1) (pending add / delete sets); the sorted
 * array is brought up to date by one merge on the next ordered read, so a burst of creates costs one
 * sort of the burst instead of an array splice per create.
 */
export class SortedKeys {
  private keys: string[] = [];
  private readonly adds = new Set<string>();
  private readonly deletes = new Set<string>();

  /** Records a key that is not in the set yet. */
  add(k: string): void {
    if (this.deletes.delete(k)) return; // re-created before the merge: the key never left `keys`
    this.adds.add(k);
  }

  /** Records the removal of a key that is in the set. */
  delete(k: string): void {
    if (this.adds.delete(k)) return;
    this.deletes.add(k);
  }

  reset(keys: string[]): void {
    this.keys = keys.sort();
    this.adds.clear();
    this.deletes.clear();
  }

  /** The sorted keys, merging pending changes first. */
  sorted(): readonly string[] {
    if (this.deletes.size) {
      const del = this.deletes;
      this.keys = this.keys.filter((k) => !del.has(k));
      del.clear();
    }
    if (this.adds.size) {
      const added = [...this.adds].sort();
      this.adds.clear();
      const a = this.keys;
      const out = new Array<string>(a.length + added.length);
      let i = 0;
      let j = 0;
      let n = 0;
      while (i < a.length && j < added.length) out[n++] = a[i]! < added[j]! ? a[i++]! : added[j++]!;
      while (i < a.length) out[n++] = a[i++]!;
      while (j < added.length) out[n++] = added[j++]!;
      this.keys = out;
    }
    return this.keys;
  }

  /** Index of the first key >= k. */
  lowerBound(k: string): number {
    const a = this.sorted();
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (a[mid]! < k) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
