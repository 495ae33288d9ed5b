import t from 'tap';
import type { KeyValue } from '../../core/storage/interface.js';
import { packedValues, SLAB_BYTES } from '../../core/storage/packed-values.js';

t.test("a load's values are copied into a few shared slabs, byte for byte; empty and large values keep their own", async (t) => {
  const small = Array.from({ length: 2000 }, (_, i) => ({ key: `/k/${i}`, value: Buffer.from(`{"metadata":{"name":"o${i}"},"data":"${'x'.repeat(i % 700)}"}`), modRevision: i + 1 }));
  const large = { key: '/k/large', value: Buffer.alloc(SLAB_BYTES, 7), modRevision: 5000 };
  const empty = { key: '/k/empty', value: new Uint8Array(0), modRevision: 5001, unreadable: 'why' };
  const items: KeyValue[] = [...small.slice(0, 1000), large, empty, ...small.slice(1000)];
  const out = packedValues(items);
  t.equal(out.length, items.length, 'one item for each');
  t.ok(
    out.every((o, i) => o.key === items[i]!.key && o.modRevision === items[i]!.modRevision && Buffer.compare(Buffer.from(o.value), Buffer.from(items[i]!.value)) === 0),
    'keys, revisions and bytes unchanged, in order',
  );
  t.equal(out[1001]!.unreadable, 'why', 'other fields kept');
  const buffers = new Set(out.map((o) => o.value.buffer));
  const bytes = small.reduce((n, s) => n + s.value.byteLength, 0);
  t.ok(buffers.size <= Math.ceil(bytes / (SLAB_BYTES * 0.9)) + 2, `${buffers.size} buffers for ${items.length} values`);
  t.equal(out[1000]!.value, large.value, 'a large value is its own buffer');
  t.equal(out[1001]!.value, empty.value, 'so is an empty one');
  t.not(out[0]!.value.buffer, small[0]!.value.buffer, 'a small value is a copy, not the buffer the store gave');
  small[0]!.value.fill(0);
  t.equal(Buffer.from(out[0]!.value).toString().slice(0, 12), '{"metadata":', 'and does not change with it');
});
