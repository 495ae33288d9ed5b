import t from 'tap';
import { ALICE_TOKEN, startServer } from '../helpers/server.js';

t.test('smoke', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const r = await s.admin.get('/apis/flowcontrol.apiserver.svc.io/v1/flowschemas');
  t.equal(r.status, 200);
  console.log(r.json.items.map((i: any) => `${i.metadata.name} ${i.spec.matchingPrecedence} ${JSON.stringify(i.status)}`).join('\n'));
  console.log(r.headers);
  const a = await s.admin.with({ token: ALICE_TOKEN }).get('/api/v1/namespaces/default/configmaps');
  console.log(a.status, a.headers);
  console.log((await s.admin.get('/debug/api_priority_and_fairness/dump_priority_levels')).text);
  console.log((await s.admin.get('/metrics')).text.split('\n').filter((l) => l.startsWith('apiserver_flowcontrol_dispatched')).join('\n'));
});
