/**
 * RBAC as an authorizer of --authorization-config (type RBAC, once the mode is registered): it decides
 * from the same roles and bindings as the flag's mode, a reload that drops it stops its grants, and a
 * reload that brings it back finds every binding in place (the instance and its indexes are kept across
 * reloads). The configuration file names RBAC as upstream's does.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { eventually } from '../helpers/authz-webhook.js';
import { tmp } from '../helpers/fixtures.js';
import { createAll, namespace, roleBinding, startRbacServer, user } from '../helpers/rbac.js';

const config = (types: string[]) =>
  ['apiVersion: apiserver.config.svc.io/v1', 'kind: AuthorizationConfiguration', 'authorizers:', ...types.flatMap((type) => [`- type: ${type}`, `  name: ${type.toLowerCase()}`]), ''].join('\n');

const path = join(tmp('svc-rbac-cfg-'), 'authz.yaml');
writeFileSync(path, config(['Node', 'RBAC']));
const s = await startRbacServer([{ name: 'alice' }, { name: 'bob' }], [`--authorization-config=${path}`]);
t.teardown(() => s.stop());
const CM = '/api/v1/namespaces/team/configmaps';

t.test('RBAC in the configuration file grants what bindings say', async (t) => {
  t.same(s.server.opts.authorizationConfig, path);
  await createAll(t, s.admin, [namespace('team'), roleBinding('team', 'alice-edit', { kind: 'ClusterRole', name: 'edit' }, [user('alice')])]);
  t.equal((await s.as('alice').get(CM)).status, 200, 'alice: edit in team');
  t.equal((await s.as('bob').get(CM)).status, 403, 'bob: nothing');
  t.equal((await s.as('bob').get('/apis')).status, 200, 'bob: system:discovery, a default binding');
  t.equal((await s.anon.get('/version')).status, 200, 'anonymous: system:public-info-viewer');
});

t.test('a reload without RBAC stops its grants; a reload with it finds them again', async (t) => {
  writeFileSync(path, config(['Node']));
  await eventually(async () => (await s.as('alice').get(CM)).status === 403);
  t.pass('without RBAC, alice is refused');
  writeFileSync(path, config(['Node', 'RBAC']));
  await eventually(async () => (await s.as('alice').get(CM)).status === 200);
  t.pass('with RBAC again, her binding counts');
  await createAll(t, s.admin, [roleBinding('team', 'bob-view', { kind: 'ClusterRole', name: 'view' }, [user('bob')])]);
  t.equal((await s.as('bob').get(CM)).status, 200, 'and a binding made after the reload counts at once');
});
