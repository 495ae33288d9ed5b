import t from 'tap';
import { startServer } from '../helpers/server.js';

const EV = '/api/v1/namespaces/default/events';
const event = (name: string) => ({
  metadata: { name },
  involvedObject: { kind: 'ConfigMap', namespace: 'default', name: 'x' },
  reason: 'Tested',
  message: 'hello',
  type: 'Normal',
});

t.test('an Event not written for --event-ttl disappears (DELETED for watchers); a write renews it', async (t) => {
  const s = await startServer(['--event-ttl=1500ms']);
  t.teardown(() => s.stop());
  t.equal((await s.admin.post(EV, event('old'))).status, 201);
  t.equal((await s.admin.post(EV, event('renewed'))).status, 201);
  const w = await s.admin.stream(`${EV}?watch=1&resourceVersion=0`);
  t.teardown(() => w.close());
  t.equal((await w.take(2)).length, 2, 'initial events');
  await new Promise((r) => setTimeout(r, 900));
  const cur = await s.admin.get(`${EV}/renewed`);
  t.equal((await s.admin.put(`${EV}/renewed`, { ...cur.json, message: 'again' })).status, 200);
  const gone = await w.take(2, 4000);
  t.same(
    gone.map((e) => [e.type, e.object.metadata.name]),
    [
      ['MODIFIED', 'renewed'],
      ['DELETED', 'old'],
    ],
  );
  t.equal((await s.admin.get(`${EV}/old`)).status, 404, 'the untouched event expired');
  t.equal((await s.admin.get(`${EV}/renewed`)).status, 200, 'the renewed one lives on');
});
