/**
 * The debug dumps as upstream's apf_controller_debug prints them: Go's tabwriter over ",\t"-joined
 * cells, RFC3339Nano times, Go durations, SeatSeconds; waiting, queued-executing and queueless
 * requests in dump_requests; no queue rows for levels without queues. A real server on loopback.
 */
import t from 'tap';
import { rfc3339Nano, tabular } from '../../core/flowcontrol/debug.js';
import { BOB_TOKEN, startServer } from '../helpers/server.js';
import { stalledUpload, tinyLevel } from '../helpers/flowcontrol.js';
import { waitFor } from '../helpers/wait.js';

t.test("Go's tabwriter (minwidth 8, padding 1): each cell but the last padded to its column's widest plus one; an empty last cell leaves the padding", async (t) => {
  const rows: [string, string[][], string][] = [
    ['short cells: the minimum width 8', [['a', 'bb'], ['ccc', 'd']], 'a,      bb\nccc,    d\n'],
    ['a wide cell widens its column', [['PriorityLevelName', 'x'], ['pl', 'y']], 'PriorityLevelName, x\npl,                y\n'],
    ['an empty last cell: the line ends in padding', [['PL', 'x'], ['aaaaaaaaa', '']], 'PL,        x\naaaaaaaaa, \n'],
    ['empty cells in the middle are padded too', [['a', '', 'b']], 'a,      ,       b\n'],
  ];
  for (const [name, input, want] of rows) t.equal(tabular(input), want, name);
});

t.test("times as Go's RFC3339Nano in UTC: nanoseconds without trailing zeros, none on a whole second", async (t) => {
  const rows: [number, string][] = [
    [Date.UTC(2026, 10, 29, 9, 2, 33), '2026-11-29T09:02:33Z'],
    [Date.UTC(2026, 10, 29, 9, 2, 33) + 120, '2026-11-29T09:02:33.12Z'],
    [1000.000001, '1970-01-01T00:00:01.000000001Z'],
    [Date.UTC(2026, 10, 29, 9, 2, 33) + 999.5, '2026-11-29T09:02:33.9995Z'],
  ];
  for (const [ms, want] of rows) t.equal(rfc3339Nano(ms), want, want);
});

t.test('the dumps of a real server with a request executing and one waiting in its queue', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow', '--max-requests-inflight=1', '--max-mutating-requests-inflight=1', '--request-timeout=40s']);
  t.teardown(() => s.stop());
  await tinyLevel(s, 'tiny', 'bob', { type: 'Queue', queuing: { queues: 2, handSize: 1, queueLengthLimit: 5 } });
  const bob = s.admin.with({ token: BOB_TOKEN });
  const dump = async (name: string, query = ''): Promise<string[][]> =>
    (await s.admin.get(`/debug/api_priority_and_fairness/${name}${query}`)).text
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(',').map((c) => c.trim()));
  const upload = await stalledUpload(s, BOB_TOKEN, 'held');
  t.teardown(() => upload.destroy());
  const tinyRows = async (name: string, query = '') => (await dump(name, query)).filter((r) => r[0] === 'tiny');
  t.ok(await waitFor(async () => (await tinyRows('dump_requests')).length === 1), 'the upload runs');
  const waiting = bob.get('/api/v1/namespaces/default/configmaps');
  t.ok(await waitFor(async () => (await tinyRows('dump_requests')).length === 2), 'a LIST waits');

  const [head, ...rows] = await dump('dump_requests', '?includeRequestDetails=true');
  t.same(head, [
    'PriorityLevelName', 'FlowSchemaName', 'QueueIndex', 'RequestIndexInQueue', 'FlowDistingsher', 'ArriveTime', 'InitialSeats', 'FinalSeats', 'AdditionalLatency', 'StartTime',
    'UserName', 'Verb', 'APIPath', 'Namespace', 'Name', 'APIVersion', 'Resource', 'SubResource',
  ], 'headers, details included for any non-empty includeRequestDetails');
  const tiny = rows.filter((r) => r[0] === 'tiny');
  const waitingRow = tiny.find((r) => r[3] === '0')!;
  const runningRow = tiny.find((r) => r[3] === '-1')!;
  t.same(waitingRow.slice(0, 5), ['tiny', 'tiny', waitingRow[2], '0', 'bob'], 'the waiting LIST: its queue, first in it, its flow');
  t.equal(waitingRow[9], '0001-01-01T00:00:00Z', "not started: Go's zero time");
  t.same(waitingRow.slice(6, 9), ['1', '0', '0s'], 'seats and additional latency as Go writes a Duration');
  t.same(waitingRow.slice(10), ['bob', 'list', '/api/v1/namespaces/default/configmaps', 'default', '', 'v1', 'configmaps', ''], 'its details');
  t.same([runningRow[3], runningRow[11]], ['-1', 'create'], 'the running upload: index -1 in its queue');
  t.match(runningRow[9], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/, 'started: its start time');
  t.match(waitingRow[5], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?Z$/, 'arrival in RFC3339Nano (no trailing zeros)');
  const self = rows.find((r) => r[0] === 'exempt' && r[12] === '/debug/api_priority_and_fairness/dump_requests');
  t.same(self?.slice(2, 4), ['-1', '-1'], 'the dump request itself, exempt: run without a queue');

  const queues = await dump('dump_queues');
  t.notOk(queues.some((r) => r[0] === 'exempt' || r[0] === 'catch-all'), 'levels without queues have no rows');
  const tq = queues.filter((r) => r[0] === 'tiny');
  t.same(tq.map((r) => r[1]), ['0', '1'], 'one row per queue of the level');
  const busy = tq.find((r) => r[2] === '1')!;
  t.same([busy[6], busy[7]], ['1', '1'], "the waiting LIST's initial and max seats");
  t.match(busy[5], /^\d+\.\d{8}ss$/, 'NextDispatchR in seat-seconds as upstream writes them');
  t.equal(busy[8], '0.00300000ss', "TotalWorkSum: one seat for the estimated 3 ms");

  upload.destroy();
  t.equal((await waiting).status, 200);
  const levels = await dump('dump_priority_levels');
  const row = levels.find((r) => r[0] === 'tiny')!;
  t.same(row.slice(1, 6), ['0', 'true', 'false', '0', '0'], 'idle again: no active queue, nothing waiting or executing');
  t.same([row[6], row[8]], ['2', '0'], 'dispatched: the upload and the LIST; TimedoutRequests 0, as upstream (it never counts there)');
});
