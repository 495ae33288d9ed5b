import t from 'tap';
import { serverFeatures } from '../../core/server/features/index.js';

t.test('features configure and start in an order that keeps the start rules', async (t) => {
  const names = serverFeatures().map((f) => f.name);
  t.same(new Set(names).size, names.length, 'each feature once');
  const at = (n: string) => names.indexOf(n);
  // configuration errors are reported in the order the flags' parts were read before: keys and authenticators, then audit
  t.ok(at('authentication') < at('audit'), 'authentication configures before audit');
  // RBAC writes pass the escalation check, which needs the authorizer: it starts before anything writes
  for (const writer of ['system-namespaces', 'rbac-bootstrap', 'controllers', 'housekeeping', 'apiserver-identity']) t.ok(at('authorization') < at(writer), `authorization starts before ${writer}`);
  // upstream's bootstrap policy goes into namespaces that exist
  t.ok(at('system-namespaces') < at('rbac-bootstrap'), 'system namespaces before the RBAC bootstrap');
});

t.test('only the request-path features fill stage slots, each slot once', async (t) => {
  const slots = serverFeatures().flatMap((f) => (f.stages ? [f.name] : []));
  t.same(slots, ['authentication', 'audit', 'authorization', 'priority-and-fairness']);
});
