import t from 'tap';
import { DEFAULT_MAX_ACCEPTORS, acceptorCount } from '../../core/server/acceptors.js';

t.test('--acceptors given wins over the cores; by default one per core less one, capped, one process on 1-2 cores', async (t) => {
  const table: Array<[flag: number, cores: number, want: number]> = [
    [0, 1, 1],
    [0, 2, 1],
    [0, 3, 2],
    [0, 4, 3],
    [0, 8, 7],
    [0, 9, 8],
    [0, 16, DEFAULT_MAX_ACCEPTORS],
    [0, 64, DEFAULT_MAX_ACCEPTORS],
    [1, 16, 1],
    [3, 2, 3],
    [12, 16, 12],
  ];
  for (const [acceptors, cores, want] of table) t.equal(acceptorCount({ acceptors }, cores), want, `--acceptors=${acceptors} on ${cores} cores: ${want}`);
});
