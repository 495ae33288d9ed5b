import t from 'tap';
import { IDLE_UTILIZATION, IDLE_UTILIZATION_FOR_LONG_PAUSES, LONG_PAUSE_MS, RECLAIM_GROWTH_BYTES, shouldReclaim } from '../../core/server/memory-reclaim.js';

t.test('a full collection runs after enough growth on an idle thread; after a long pause only on an all but idle one', async (t) => {
  const grown = RECLAIM_GROWTH_BYTES;
  const rows: [string, number, number, number, boolean][] = [
    ['not grown enough', grown - 1, 0, 0, false],
    ['grown, idle, no pause yet', grown, IDLE_UTILIZATION, 0, true],
    ['grown, busy', grown, IDLE_UTILIZATION + 0.01, 0, false],
    ['grown, lightly loaded, the last pause short', grown, 0.05, LONG_PAUSE_MS, true],
    ['grown, lightly loaded, the last pause long (a steady light load must not wait behind the next)', grown, 0.05, LONG_PAUSE_MS + 1, false],
    ['grown, all but idle, the last pause long', grown, IDLE_UTILIZATION_FOR_LONG_PAUSES, 150, true],
  ];
  for (const [name, growth, busy, pause, want] of rows) t.equal(shouldReclaim(growth, busy, pause), want, name);
});
