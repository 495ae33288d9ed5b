/**
 * A priority level that leaves the configuration while it holds requests keeps serving them
 * (quiescing, as upstream's controller does) and is forgotten once drained; its FlowSchema is dangling
 * meanwhile, so new requests go on to the next matching schema. A real server on loopback.
 */
import t from 'tap';
import { BOB_TOKEN, startServer } from '../helpers/server.js';
import { FS, PL, stalledUpload, tinyLevel } from '../helpers/flowcontrol.js';
import { waitFor } from '../helpers/wait.js';

const PL_UID = 'x-kubernetes-pf-prioritylevel-uid';
const DUMP = '/debug/api_priority_and_fairness/dump_priority_levels';

t.test('a level deleted while a request waits in its queue serves it, then is forgotten; new requests go elsewhere at once', async (t) => {
  // two seats in all: the one-share level gets one; a queued request waits up to 10 s (a quarter of the timeout)
  const s = await startServer(['--authorization-mode=AlwaysAllow', '--max-requests-inflight=1', '--max-mutating-requests-inflight=1', '--request-timeout=40s']);
  t.teardown(() => s.stop());
  await tinyLevel(s, 'doomed', 'bob', { type: 'Queue', queuing: { queues: 1, handSize: 1, queueLengthLimit: 5 } });
  const bob = s.admin.with({ token: BOB_TOKEN });
  const doomedUid = (await s.admin.get(`${PL}/doomed`)).json.metadata.uid;
  const globalDefaultUid = (await s.admin.get(`${PL}/global-default`)).json.metadata.uid;
  /** The dump's row of a level, cells trimmed (undefined when the level is not listed). */
  const row = async (name: string): Promise<Record<string, string> | undefined> => {
    const lines = (await s.admin.get(DUMP)).text.trim().split('\n');
    const cells = (l: string) => l.split(',').map((c) => c.trim());
    const head = cells(lines[0]!);
    const line = lines.slice(1).find((l) => cells(l)[0] === name);
    return line ? Object.fromEntries(cells(line).map((c, i) => [head[i]!, c])) : undefined;
  };

  const upload = await stalledUpload(s, BOB_TOKEN, 'held');
  t.teardown(() => upload.destroy());
  t.ok(await waitFor(async () => (await row('doomed'))?.ExecutingRequests === '1'), "the held upload takes the level's one seat");
  let settled = false;
  const waiting = bob.get('/api/v1/namespaces/default/configmaps').finally(() => (settled = true));
  t.ok(await waitFor(async () => (await row('doomed'))?.WaitingRequests === '1'), 'a LIST waits in its queue');

  t.equal((await s.admin.delete(`${PL}/doomed`)).status, 200, 'the level is deleted');
  t.ok(await waitFor(async () => (await row('doomed'))?.IsQuiescing === 'true'), 'it stays, quiescing, while it holds requests');
  t.same([(await row('doomed'))?.WaitingRequests, (await row('doomed'))?.ExecutingRequests], ['1', '1'], 'with its waiting and executing requests');
  const other = await bob.get('/api/v1/namespaces/default/configmaps');
  t.equal(other.status, 200, "a new request of the same user is served at once: the level's FlowSchema is dangling");
  t.equal(other.headers[PL_UID], globalDefaultUid, 'by the next matching schema, global-default');
  t.ok(
    await waitFor(async () => (await s.admin.get(`${FS}/doomed`)).json.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Dangling' && c.status === 'True')),
    'the FlowSchema says so (Dangling)',
  );
  t.notOk(settled, 'the queued LIST is still waiting');

  upload.destroy();
  const served = await waiting;
  t.equal(served.status, 200, 'the queued LIST runs once the seat comes back, on the quiescing level');
  t.equal(served.headers[PL_UID], doomedUid, 'and names the deleted level');
  t.ok(await waitFor(async () => (await row('doomed')) === undefined), 'drained, the level is forgotten');

  // a level deleted while idle goes at once
  await tinyLevel(s, 'idle', 'carol', { type: 'Reject' });
  t.ok(await waitFor(async () => (await row('idle')) !== undefined), 'a new level is listed');
  t.equal((await s.admin.delete(`${PL}/idle`)).status, 200);
  t.ok(await waitFor(async () => (await row('idle')) === undefined), 'an idle level deleted is forgotten at once');
});
