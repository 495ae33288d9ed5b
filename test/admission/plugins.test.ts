/**
 * The admission plugins' names, order and flags (upstream's ComputePluginNames), and the simple
 * plugins against a real server: AlwaysDeny refuses every write and no read, NamespaceExists and
 * NamespaceAutoProvision act on creates in a missing namespace, and a disabled NamespaceLifecycle lets
 * a system namespace be deleted.
 */
import t from 'tap';
import { ALL_ORDERED_PLUGINS, enabledPlugins, inlineAdmissionOf } from '../../core/admission/plugins.js';
import { startServer } from '../helpers/server.js';

const names = (l: { name: string }[]): string[] => l.map((p) => p.name);

t.test('the default set is upstream\'s default-on plugins, webhooks, policies and quota last', async (t) => {
  const on = names(enabledPlugins([], []));
  t.same(on.slice(-4), ['MutatingAdmissionWebhook', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionWebhook', 'ResourceQuota']);
  t.ok(on.includes('NamespaceLifecycle'));
  t.notOk(on.includes('AlwaysDeny'));
  t.notOk(on.includes('MutatingAdmissionPolicy'), 'alpha: off unless enabled');
});

t.test('enabled plugins run in upstream order whatever order the flag gives', async (t) => {
  const on = names(enabledPlugins(['AlwaysDeny', 'NamespaceExists'], []));
  t.ok(on.indexOf('NamespaceExists') < on.indexOf('MutatingAdmissionWebhook'));
  t.equal(on[on.length - 1], 'AlwaysDeny');
  const order = names([...ALL_ORDERED_PLUGINS]);
  t.same(on, order.filter((n) => on.includes(n)));
});

t.test('unknown names and overlapping flags are start errors worded as upstream', async (t) => {
  t.throws(() => enabledPlugins(['NoSuch'], []), /enable-admission-plugins plugin "NoSuch" is unknown/);
  t.throws(() => enabledPlugins([], ['NoSuch']), /disable-admission-plugins plugin "NoSuch" is unknown/);
  t.throws(() => enabledPlugins(['AlwaysDeny'], ['AlwaysDeny']), /\[AlwaysDeny\] in enable-admission-plugins and disable-admission-plugins overlapped/);
});

t.test('disabling NamespaceLifecycle or NodeRestriction switches the inline steps off', async (t) => {
  t.same(inlineAdmissionOf(enabledPlugins([], [])), { namespaceLifecycle: true, nodeRestriction: true });
  t.same(inlineAdmissionOf(enabledPlugins([], ['NamespaceLifecycle', 'NodeRestriction'])), { namespaceLifecycle: false, nodeRestriction: false });
});

t.test('AlwaysDeny refuses every write with 403 and lets reads through', async (t) => {
  const s = await startServer(['--enable-admission-plugins=AlwaysDeny']);
  t.teardown(() => s.stop());
  const c = await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'a' } });
  t.equal(c.status, 403);
  t.equal(c.json.message, 'configmaps "a" is forbidden: admission control is denying all modifications');
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200);
  t.equal((await s.admin.delete('/api/v1/namespaces/default/configmaps/x')).status, 404, 'a missing object is not found before admission');
});

t.test('NamespaceAutoProvision creates the namespace of a create; NamespaceExists refuses other writes in a missing one', async (t) => {
  const s = await startServer(['--enable-admission-plugins=NamespaceAutoProvision']);
  t.teardown(() => s.stop());
  const c = await s.admin.post('/api/v1/namespaces/auto/configmaps', { metadata: { name: 'a' } });
  t.equal(c.status, 201);
  t.equal((await s.admin.get('/api/v1/namespaces/auto')).status, 200);
  const dry = await s.admin.post('/api/v1/namespaces/dry/configmaps?dryRun=All', { metadata: { name: 'a' } });
  t.equal(dry.status, 404, 'a dry run provisions nothing, so the missing namespace is still missing');
  t.equal((await s.admin.get('/api/v1/namespaces/dry')).status, 404);
});

t.test('with NamespaceLifecycle disabled, a system namespace may be deleted', async (t) => {
  const s = await startServer(['--disable-admission-plugins=NamespaceLifecycle']);
  t.teardown(() => s.stop());
  const d = await s.admin.delete('/api/v1/namespaces/svc-public');
  t.equal(d.status, 200);
});
