/**
 * Definitions a server must refuse (422 naming the field, nothing stored) and the one it must keep
 * apart: a name that is not <plural>.<group>, a schema that is not structural, a CEL rule that does
 * not compile (named with upstream's detail), a rule whose estimated cost is past the budget, a group
 * served by built-in kinds; and a definition whose group is itself under k8s.io, served as that group
 * (never respelled to svc.io by the upstream aliases).
 */
import t from 'tap';
import { CRDS, crd, createCrd } from '../helpers/crd.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s.stop());

const withSpec = (spec: unknown) => ({ type: 'object', properties: { spec } });

const cases: { rule: string; def: () => Record<string, unknown>; field: RegExp; message: RegExp }[] = [
  {
    rule: 'a name that is not <plural>.<group>',
    def: () => ({ ...crd(), metadata: { name: 'wrong.example.com' } }),
    field: /^metadata\.name$/,
    message: /must be spec\.names\.plural\+"\."\+spec\.group/,
  },
  {
    rule: 'a schema that is not structural (an object field without a type)',
    def: () => crd({ schema: withSpec({ properties: { a: { type: 'string' } } }) }),
    field: /openAPIV3Schema\.properties\[spec\]\.type$/,
    message: /must not be empty for specified object fields/,
  },
  {
    rule: 'a CEL rule that does not compile',
    def: () => crd({ schema: withSpec({ type: 'object', 'x-kubernetes-validations': [{ rule: 'self.size +' }] }) }),
    field: /x-kubernetes-validations\[0\]\.rule$/,
    message: /compilation failed: ERROR: <input>:1:\d+: Syntax error/,
  },
  {
    rule: 'a CEL rule past the cost budget',
    def: () =>
      crd({
        schema: withSpec({
          type: 'object',
          properties: { l: { type: 'array', items: { type: 'string' } } },
          'x-kubernetes-validations': [{ rule: 'self.l.all(a, self.l.all(b, self.l.all(c, a == b && b == c)))' }],
        }),
      }),
    field: /x-kubernetes-validations\[0\]\.rule$/,
    message: /estimated rule cost exceeds budget/,
  },
  {
    rule: 'a group served by built-in kinds',
    def: () => crd({ group: 'storage.svc.io', plural: 'gizmos', kind: 'Gizmo' }),
    field: /^spec\.group$/,
    message: /"storage\.svc\.io" is served by built-in resources/,
  },
];

for (const c of cases) {
  t.test(`${c.rule} is a 422 naming the field; nothing is stored`, async (t) => {
    const def = c.def();
    const r = await s.admin.post(CRDS, def);
    t.equal(r.status, 422, r.text);
    t.equal(r.json.reason, 'Invalid');
    const causes = (r.json.details?.causes ?? []) as { field: string; message: string }[];
    t.ok(
      causes.some((x) => c.field.test(x.field) && c.message.test(x.message)),
      `a cause at ${c.field} saying ${c.message}: ${JSON.stringify(causes)}`,
    );
    t.equal((await s.admin.get(`${CRDS}/${(def.metadata as { name: string }).name}`)).status, 404, 'not stored');
  });
}

t.test('a definition under a k8s.io group is served as its own group, not respelled as svc.io', async (t) => {
  const def = crd({ group: 'things.k8s.io', plural: 'things', kind: 'Thing' });
  (def.metadata as Record<string, unknown>).annotations = { 'api-approved.kubernetes.io': 'https://example.com/approval' };
  await createCrd(s.admin, def);
  const created = await s.admin.post('/apis/things.k8s.io/v1/namespaces/default/things', { apiVersion: 'things.k8s.io/v1', kind: 'Thing', metadata: { name: 't1' } });
  t.equal(created.status, 201, created.text);
  t.equal(created.json.apiVersion, 'things.k8s.io/v1');
  t.equal((await s.admin.get('/apis/things.svc.io/v1/namespaces/default/things/t1')).status, 404, 'no svc.io spelling of a group that is not ours');
  const groups = (await s.admin.get('/apis')).json.groups.map((g: { name: string }) => g.name);
  t.ok(groups.includes('things.k8s.io'));
  t.notOk(groups.includes('things.svc.io'));
});
