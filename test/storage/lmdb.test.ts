import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../core/storage/lmdb/store.js';
import type { Store } from '../../core/storage/interface.js';
import { runStorageConformance } from './conformance.js';

const paths = new Map<Store, string>();
t.teardown(() => {
  for (const p of paths.values()) rmSync(p, { recursive: true, force: true });
});

runStorageConformance(t, {
  async make() {
    const path = mkdtempSync(join(tmpdir(), 'svc-lmdb-'));
    const s = new LmdbStore({ path });
    paths.set(s, path);
    return s;
  },
  async reopen(s) {
    const path = paths.get(s)!;
    await s.close();
    const again = new LmdbStore({ path });
    paths.set(again, path);
    return again;
  },
});
