/**
 * A cache load's values copied into shared slabs: each value a view of one of a few large buffers
 * rather than a buffer of its own. A store hands back every value of a list in its own buffer; held
 * by the watch cache for 100,000 objects that is 100,000 backing stores, each with its own
 * ArrayBuffer, native bookkeeping and allocator overhead (about 200 bytes over the value's size here),
 * and 100,000 buffers for every garbage collection to track. A slab lives while any value in it does,
 * so what the cache holds never exceeds what the load brought; values written later keep their own
 * buffers.
 */
import type { KeyValue } from './interface.js';

/** Small enough that a few objects kept from an old load pin little; large enough to make buffers rare. */
export const SLAB_BYTES = 256 * 1024;
/** Values larger than this keep their own buffer. */
const LARGEST_PACKED = SLAB_BYTES / 16;

export function packedValues<T extends KeyValue>(items: readonly T[]): T[] {
  let slab: Buffer | undefined;
  let used = 0;
  return items.map((it) => {
    const v = it.value;
    const n = v.byteLength;
    if (n === 0 || n > LARGEST_PACKED) return it;
    if (!slab || used + n > slab.length) {
      slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      used = 0;
    }
    slab.set(v, used);
    const packed = slab.subarray(used, used + n);
    used += n;
    return { ...it, value: packed };
  });
}
