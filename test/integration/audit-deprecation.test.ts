import t from 'tap';
import { join } from 'node:path';
import { createCrd, crd, waitEstablished } from '../helpers/crd.js';
import { eventsOf, writePolicy } from '../helpers/audit.js';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { startServer, tempDir } from '../helpers/server.js';

const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };

t.test('a request to a deprecated version is annotated svc.io/deprecated in its audit event, and the audit counters move', async (t) => {
  const dir = tempDir('svc-audit-dep-');
  const log = join(dir, 'audit.log');
  const s = await startServer([`--audit-policy-file=${writePolicy(dir, 'apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n')}`, `--audit-log-path=${log}`]);
  t.teardown(() => s.stop());
  const def = crd({
    group: 'old.example.com',
    versions: [
      { name: 'v1beta1', served: true, storage: false, deprecated: true, deprecationWarning: 'old.example.com/v1beta1 Widget is deprecated; use v1', schema },
      { name: 'v1', served: true, storage: true, schema },
    ],
  });
  await createCrd(s.admin, def);
  await waitEstablished(s.admin, def.metadata.name);
  const path = '/apis/old.example.com/v1beta1/namespaces/default/widgets';
  let r = await s.admin.get(path);
  for (let i = 0; r.status === 404 && i < 50; i++) {
    await new Promise((res) => setTimeout(res, 100));
    r = await s.admin.get(path);
  }
  t.equal(r.status, 200);
  t.equal(r.headers.warning, '299 - "old.example.com/v1beta1 Widget is deprecated; use v1"');
  const [, complete] = await eventsOf(log, r.headers['audit-id'] as string, 2);
  t.equal(complete!.stage, 'ResponseComplete');
  t.equal(complete!.annotations['svc.io/deprecated'], 'true');
  t.notOk('svc.io/removed-release' in complete!.annotations, 'no removal release is known for a CRD version');

  const current = await s.admin.get('/apis/old.example.com/v1/namespaces/default/widgets');
  const [, ok] = await eventsOf(log, current.headers['audit-id'] as string, 2);
  t.notOk('svc.io/deprecated' in (ok!.annotations ?? {}), 'the served version is not deprecated');

  const fams = parsePrometheusText((await s.admin.get('/metrics')).text);
  const value = (family: string, sample: string, labels: Record<string, string> = {}) =>
    fams.get(family)?.samples.find((m) => m.name === sample && Object.entries(labels).every(([k, v]) => m.labels[k] === v))?.value ?? 0;
  t.ok(value('apiserver_audit_event', 'apiserver_audit_event_total') >= 4, 'events counted');
  t.ok(value('apiserver_audit_level', 'apiserver_audit_level_total', { level: 'Metadata' }) >= 2, 'policy levels counted');
});
