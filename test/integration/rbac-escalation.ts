/**
 * Escalation prevention (spec rule 8) on every write path (POST, PUT on an existing and on a missing
 * object, merge / JSON / strategic merge patch, server-side apply of an existing and of a missing
 * object, dry runs), inline (--workers=0) and with the worker pool (--workers=2): a role only with
 * permissions the caller holds in the same scope, or `escalate`; a binding only to a role whose
 * permissions the caller holds, or may `bind` (resourceNames respected); an aggregationRule only
 * with full authority; a change of owner references or finalizers only is let through. A refused
 * write answers 403 naming what is missing, as upstream words it, and stores nothing.
 */
import t, { type Test } from 'tap';

// run by rbac-escalation-inline.test.ts (--workers=0) and rbac-escalation-pool.test.ts (--workers=2)
import type { Client, Response } from '../helpers/client.js';
import { expectStatus } from '../helpers/fixtures.js';
import {
  clusterRole,
  clusterRoleBinding,
  createAll,
  G,
  namespace,
  pathOf,
  RBAC,
  type RbacServer,
  role,
  roleBinding,
  rule,
  startRbacServer,
  user,
} from '../helpers/rbac.js';

const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';
const STRATEGIC = 'application/strategic-merge-patch+json';
const APPLY = 'application/apply-patch+yaml';

const roles = `${RBAC}/namespaces/team/roles`;
const bindings = `${RBAC}/namespaces/team/rolebindings`;
const held = rule(['get', 'list'], [''], ['configmaps']);
const secrets = rule(['get'], [''], ['secrets']);
const notHeld = (who: string, missing: string) =>
  `user "${who}" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n${missing}`;
const SECRETS_MISSING = '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}';

async function setUp(t: Test, s: RbacServer): Promise<void> {
  await createAll(t, s.admin, [
    namespace('team'),
    // lead: writes roles and bindings in team, holds get/list on configmaps there
    role('team', 'lead', [rule(['get', 'list', 'create', 'update', 'patch', 'delete'], [G], ['roles', 'rolebindings']), held]),
    roleBinding('team', 'lead', { kind: 'Role', name: 'lead' }, [user('lead')]),
    role('team', 'cm-reader', [held]),
    // binder: writes bindings and may bind the ClusterRole view (only that one) in team
    role('team', 'binder', [rule(['get', 'create', 'update', 'patch'], [G], ['rolebindings']), rule(['bind'], [G], ['clusterroles'], ['view'])]),
    roleBinding('team', 'binder', { kind: 'Role', name: 'binder' }, [user('binder')]),
    // escalator: writes roles and may escalate them in team
    role('team', 'escalator', [rule(['get', 'create', 'update', 'patch'], [G], ['roles']), rule(['escalate'], [G], ['roles'])]),
    roleBinding('team', 'escalator', { kind: 'Role', name: 'escalator' }, [user('escalator')]),
    // cluster-writer: every ordinary verb on every resource (so not bind, escalate, or verb *), no URL
    clusterRole('cluster-writer', [rule(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'], ['*'], ['*'])]),
    clusterRoleBinding('cluster-writer', 'cluster-writer', [user('cluster-writer')]),
    // self-editor: may update the one cluster role it is bound to
    clusterRole('self-editor', [rule(['get', 'update', 'patch'], [G], ['clusterroles'], ['self-editor']), rule(['get', 'create'], [G], ['clusterrolebindings'])]),
    clusterRoleBinding('self-editor', 'self-editor', [user('self-editor')]),
  ]);
}

const get = (c: Client, path: string) => c.get(path).then((r) => r.json);

/** The write refused with upstream's escalation wording, and nothing stored. */
async function refused(t: Test, r: Response, kindPlural: string, name: string, message: string): Promise<void> {
  expectStatus(t, r, 403, 'Forbidden', `${kindPlural}.${G} "${name}" is forbidden: ${message}`);
  t.same(r.json?.details, { name, group: G, kind: kindPlural }, 'details name the object');
}

export function escalationSuite(mode: string): void {
  t.test(`--workers=${mode}`, async (t) => {
    const s = await startRbacServer([{ name: 'lead' }, { name: 'binder' }, { name: 'escalator' }, { name: 'cluster-writer' }, { name: 'self-editor' }], [`--workers=${mode}`]);
    t.teardown(() => s.stop());
    await setUp(t, s);
    const lead = s.as('lead');

    t.test('roles: every write verb with permissions held succeeds, with one not held is 403 and stores nothing', async (t) => {
      const ok = (name: string) => role('team', name, [held]);
      const bad = (name: string) => role('team', name, [held, secrets]);
      const message = notHeld('lead', SECRETS_MISSING);

      t.equal((await lead.post(roles, ok('r1'))).status, 201, 'POST');
      await refused(t, await lead.post(roles, bad('r2')), 'roles', 'r2', message);
      t.equal((await s.admin.get(`${roles}/r2`)).status, 404, 'POST: nothing stored');

      await refused(t, await lead.post(`${roles}?dryRun=All`, bad('r2')), 'roles', 'r2', message);
      t.equal((await lead.post(`${roles}?dryRun=All`, ok('r2'))).status, 201, 'a dry run is checked like the real request');

      const live = await get(s.admin, `${roles}/r1`);
      await refused(t, await lead.put(`${roles}/r1`, { ...live, rules: [held, secrets] }), 'roles', 'r1', message);
      t.equal((await lead.put(`${roles}/r1`, { ...live, rules: [rule(['get'], [''], ['configmaps'])] })).status, 200, 'PUT within what is held');

      await refused(t, await lead.put(`${roles}/r3`, bad('r3')), 'roles', 'r3', message);
      t.equal((await s.admin.get(`${roles}/r3`)).status, 404, 'PUT creating: nothing stored');
      t.equal((await lead.put(`${roles}/r3`, ok('r3'))).status, 201, 'PUT creating within what is held');

      const before = await get(s.admin, `${roles}/r1`);
      await refused(t, await lead.patch(`${roles}/r1`, { rules: [held, secrets] }, MERGE), 'roles', 'r1', message);
      await refused(t, await lead.patch(`${roles}/r1`, [{ op: 'add', path: '/rules/-', value: secrets }], JSON_PATCH), 'roles', 'r1', message);
      await refused(t, await lead.patch(`${roles}/r1`, { rules: [held, secrets] }, STRATEGIC), 'roles', 'r1', message);
      await refused(t, await lead.patch(`${roles}/r1?fieldManager=lead&force=true`, bad('r1'), APPLY), 'roles', 'r1', message);
      await refused(t, await lead.patch(`${roles}/r1?dryRun=All`, { rules: [held, secrets] }, MERGE), 'roles', 'r1', message);
      const after = await get(s.admin, `${roles}/r1`);
      t.same(after.rules, before.rules, 'patches: rules unchanged');
      t.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'patches: nothing written');
      t.equal((await lead.patch(`${roles}/r1`, { rules: [held] }, MERGE)).status, 200, 'merge patch within what is held');
      t.equal((await lead.patch(`${roles}/r1`, [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }], JSON_PATCH)).status, 200, 'JSON patch within');
      t.equal((await lead.patch(`${roles}/r1?fieldManager=lead&force=true`, ok('r1'), APPLY)).status, 200, 'apply within');

      await refused(t, await lead.patch(`${roles}/r4?fieldManager=lead&force=true`, bad('r4'), APPLY), 'roles', 'r4', message);
      t.equal((await s.admin.get(`${roles}/r4`)).status, 404, 'apply creating: nothing stored');
      t.equal((await lead.patch(`${roles}/r4?fieldManager=lead&force=true`, ok('r4'), APPLY)).status, 201, 'apply creating within');
    });

    t.test('roles: the whole rule set must be held, not only what changes', async (t) => {
      await createAll(t, s.admin, [role('team', 'big', [held, secrets])]);
      const r = await lead.patch(`${roles}/big`, { metadata: { labels: { x: 'y' } } }, MERGE);
      await refused(t, r, 'roles', 'big', notHeld('lead', SECRETS_MISSING));
      t.equal((await lead.patch(`${roles}/big`, { metadata: { finalizers: ['example.com/keep'] } }, MERGE)).status, 200, 'finalizers only: let through');
      const owner = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: '1d0c3f6e-0000-4000-8000-000000000000' };
      t.equal((await lead.patch(`${roles}/big`, { metadata: { ownerReferences: [owner], finalizers: null } }, MERGE)).status, 200, 'owner references only: let through');
    });

    t.test('roles: escalate lets a caller grant what it does not hold', async (t) => {
      const r = await s.as('escalator').post(roles, role('team', 'esc', [rule(['*'], ['*'], ['secrets'])]));
      t.equal(r.status, 201, r.text);
      const other = await s.as('escalator').post(`${RBAC}/namespaces/default/roles`, role('default', 'esc', [secrets]));
      t.equal(other.status, 403, 'not in another namespace (no write there at all)');
    });

    t.test('bindings: to a role whose permissions are held, or that may be bound', async (t) => {
      t.equal((await lead.post(bindings, roleBinding('team', 'b1', { kind: 'Role', name: 'cm-reader' }, [user('someone')]))).status, 201, 'role held');
      const toEdit = await lead.post(bindings, roleBinding('team', 'b2', { kind: 'ClusterRole', name: 'view' }, [user('someone')]));
      t.equal(toEdit.status, 403, 'view holds more than lead');
      t.match(toEdit.json.message, /^rolebindings\.rbac\.authorization\.svc\.io "b2" is forbidden: user "lead" \(groups=\["system:authenticated"\]\) is attempting to grant RBAC permissions not currently held:\n\{APIGroups:\[""\], Resources:\["configmaps"\], Verbs:\["watch"\]\}\n\{APIGroups:\[""\], Resources:\["endpoints"\], Verbs:\["get" "list" "watch"\]\}\n\{APIGroups:\[""\], Resources:\["events"\], Verbs:\["get" "list" "watch"\]\}\n/);
      t.equal((await s.admin.get(`${bindings}/b2`)).status, 404, 'nothing stored');

      const binder = s.as('binder');
      t.equal((await binder.post(bindings, roleBinding('team', 'b3', { kind: 'ClusterRole', name: 'view' }, [user('someone')]))).status, 201, 'bind on view');
      const r = await binder.post(bindings, roleBinding('team', 'b4', { kind: 'ClusterRole', name: 'edit' }, [user('someone')]));
      t.equal(r.status, 403, 'bind is limited to the names it lists');
      t.match(r.json.message, /^rolebindings\.rbac\.authorization\.svc\.io "b4" is forbidden: user "binder" .* not currently held:\n/);
      t.equal((await binder.put(`${bindings}/b4`, roleBinding('team', 'b4', { kind: 'ClusterRole', name: 'edit' }, []))).status, 403, 'PUT creating');
      t.equal((await binder.patch(`${bindings}/b4?fieldManager=binder`, roleBinding('team', 'b4', { kind: 'ClusterRole', name: 'edit' }, []), APPLY)).status, 403, 'apply creating');
      t.equal((await s.admin.get(`${bindings}/b4`)).status, 404, 'nothing stored');

      const missing = await lead.post(bindings, roleBinding('team', 'b5', { kind: 'Role', name: 'ghost' }, [user('someone')]));
      expectStatus(t, missing, 403, 'Forbidden', `rolebindings.${G} "b5" is forbidden: roles.${G} "ghost" not found`);
      t.equal((await s.admin.post(bindings, roleBinding('team', 'b5', { kind: 'Role', name: 'ghost' }, [user('someone')]))).status, 201, 'system:masters may bind a missing role');
    });

    t.test('bindings: changing the subjects of a binding to a role not held is refused on every write verb', async (t) => {
      await createAll(t, s.admin, [roleBinding('team', 'edit-b', { kind: 'ClusterRole', name: 'edit' }, [user('someone')])]);
      const live = await get(s.admin, `${bindings}/edit-b`);
      const more = [user('someone'), user('lead')];
      const check = async (r: Response, what: string) => {
        t.equal(r.status, 403, what);
        t.match(r.json?.message, /^rolebindings\.rbac\.authorization\.svc\.io "edit-b" is forbidden: user "lead" .* not currently held:/, what);
      };
      await check(await lead.put(`${bindings}/edit-b`, { ...live, subjects: more }), 'PUT');
      await check(await lead.patch(`${bindings}/edit-b`, { subjects: more }, MERGE), 'merge patch');
      await check(await lead.patch(`${bindings}/edit-b`, [{ op: 'add', path: '/subjects/-', value: user('lead') }], JSON_PATCH), 'JSON patch');
      await check(await lead.patch(`${bindings}/edit-b`, { subjects: more }, STRATEGIC), 'strategic merge patch');
      await check(await lead.patch(`${bindings}/edit-b?fieldManager=lead&force=true`, { ...roleBinding('team', 'edit-b', { kind: 'ClusterRole', name: 'edit' }, more) }, APPLY), 'apply');
      const after = await get(s.admin, `${bindings}/edit-b`);
      t.same(after.subjects, live.subjects, 'subjects unchanged');
      t.equal(after.metadata.resourceVersion, live.metadata.resourceVersion, 'nothing written');
      t.equal((await lead.patch(`${bindings}/edit-b`, { metadata: { finalizers: ['example.com/x'] } }, MERGE)).status, 200, 'finalizers only: let through');
    });

    t.test('a user cannot grant itself cluster-admin, by a binding or by editing its role', async (t) => {
      const adminAll = `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}`;
      const selfEditor = s.as('self-editor');
      await refused(
        t,
        await selfEditor.post(`${RBAC}/clusterrolebindings`, clusterRoleBinding('me-admin', 'cluster-admin', [user('self-editor')])),
        'clusterrolebindings',
        'me-admin',
        `user "self-editor" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n${adminAll}`,
      );
      t.equal((await s.admin.get(`${RBAC}/clusterrolebindings/me-admin`)).status, 404, 'no binding stored');
      const mine = await get(s.admin, `${RBAC}/clusterroles/self-editor`);
      const r = await selfEditor.put(`${RBAC}/clusterroles/self-editor`, { ...mine, rules: [...mine.rules, rule(['*'], ['*'], ['*']), { verbs: ['*'], nonResourceURLs: ['*'] }] });
      t.equal(r.status, 403);
      t.match(r.json.message, /^clusterroles\.rbac\.authorization\.svc\.io "self-editor" is forbidden: user "self-editor" .* not currently held:\n\{APIGroups:\["\*"\], Resources:\["\*"\], Verbs:\["\*"\]\}/);
      t.same((await get(s.admin, `${RBAC}/clusterroles/self-editor`)).rules, mine.rules, 'role unchanged');
      t.equal((await selfEditor.get('/api/v1/namespaces/team/secrets')).status, 403, 'still no access');
      // cluster-writer holds every ordinary verb on every resource: cluster-admin is still out of reach
      const cw = await s.as('cluster-writer').post(`${RBAC}/clusterrolebindings`, clusterRoleBinding('cw-admin', 'cluster-admin', [user('cluster-writer')]));
      expectStatus(t, cw, 403, 'Forbidden', `clusterrolebindings.${G} "cw-admin" is forbidden: ${notHeld('cluster-writer', adminAll)}`);
    });

    t.test('an aggregationRule needs full authority', async (t) => {
      const cw = s.as('cluster-writer');
      const agg = clusterRole('agg', [], { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: 'y' } }] } });
      expectStatus(t, await cw.post(`${RBAC}/clusterroles`, agg), 403, 'Forbidden', `clusterroles.${G} "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`);
      t.equal((await cw.post(`${RBAC}/clusterroles`, clusterRole('plain', [rule(['get'], [''], ['pods'])]))).status, 201, 'rules it holds, no aggregation');
      t.equal((await s.admin.post(`${RBAC}/clusterroles`, agg)).status, 201);
      const live = await get(s.admin, `${RBAC}/clusterroles/agg`);
      expectStatus(t, await cw.put(`${RBAC}/clusterroles/agg`, { ...live, metadata: { ...live.metadata, labels: { a: 'b' } } }), 403, 'Forbidden', `clusterroles.${G} "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`);
      t.equal((await s.admin.delete(pathOf(agg))).status, 200);
    });
  });
}

