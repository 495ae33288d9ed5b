/**
 * The gRPC transport runs the HTTPS request path, so its calls are counted in the same metrics and
 * audited by the same policy: a call's Audit-ID (metadata audit-id, or a new one) names its events.
 */
import t from 'tap';
import { join } from 'node:path';
import { eventsOf, writePolicy } from '../helpers/audit.js';
import { startGrpcServer } from '../helpers/grpc.js';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { tempDir } from '../helpers/server.js';

t.test('gRPC calls are counted in apiserver_request_total and audited like HTTPS requests', async (t) => {
  const dir = tempDir('svc-grpc-obs-');
  const log = join(dir, 'audit.log');
  const s = await startGrpcServer([`--audit-policy-file=${writePolicy(dir, 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n')}`, `--audit-log-path=${log}`]);
  t.teardown(() => s.stop());
  const count = async (labels: Record<string, string>): Promise<number> => {
    const fams = parsePrometheusText((await s.admin.get('/metrics')).text);
    return fams.get('apiserver_request')!.samples.filter((m) => m.name === 'apiserver_request_total' && Object.entries(labels).every(([k, v]) => m.labels[k] === v)).reduce((a, m) => a + m.value, 0);
  };
  const created = { verb: 'POST', resource: 'configmaps', code: '201' };
  const missing = { verb: 'GET', resource: 'configmaps', code: '404' };
  const before = [await count(created), await count(missing)];
  const ref = { group: '', version: 'v1', resource: 'configmaps', namespace: 'default' };
  const c = await s.g.create(ref, { metadata: { name: 'over-grpc' }, data: { a: 'b' } }, { metadata: { 'audit-id': 'grpc-audit-0001' } });
  t.equal((c.object as { metadata: { name: string } }).metadata.name, 'over-grpc');
  await t.rejects(s.g.get({ ...ref, name: 'nope' }), { code: 5 }, 'NOT_FOUND');
  t.equal((await count(created)) - before[0]!, 1);
  t.equal((await count(missing)) - before[1]!, 1);
  const evs = await eventsOf(log, 'grpc-audit-0001', 2);
  t.same(evs.map((e) => e.stage), ['RequestReceived', 'ResponseComplete']);
  t.equal(evs[1]!.verb, 'create');
  t.equal(evs[1]!.objectRef.name, 'over-grpc');
  t.equal(evs[1]!.responseStatus.code, 201);
  t.equal(evs[1]!.annotations['authorization.svc.io/decision'], 'allow');
});
