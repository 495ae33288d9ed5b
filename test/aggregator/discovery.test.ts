/**
 * A remote group version's aggregated discovery is read as upstream's discovery aggregation
 * controller reads it: the extension's /apis asked for apidiscovery v2 (then v2beta1), its entry for
 * the group version used as it is (what only that form carries shows through: a subresource's
 * acceptedTypes, categories), an unchanged document answered 304 to the ETag read before; an
 * extension that does not answer the aggregated form has its legacy resource list converted.
 */
import t from 'tap';
import { aggregatedResources, type DiscoveryForm, WARDLE_GROUP } from '../helpers/extension-apiserver.js';
import { kubectlAsToken } from '../helpers/kubectl.js';
import { ADMIN_TOKEN } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { type Aggregated, startWithWardle } from './setup.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let a: Aggregated;
t.before(async () => void (a = await startWithWardle()));
t.teardown(() => a?.stop());

/** The wardle version entry of this server's aggregated discovery (v2). */
async function wardleEntry(): Promise<Json | undefined> {
  const r = await a.s.admin.get('/apis', { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
  return r.json?.items?.find((i: Json) => i.metadata.name === WARDLE_GROUP)?.versions?.[0];
}

const hasScale = (e: Json | undefined): boolean => e?.resources?.[0]?.subresources?.some((s: Json) => s.subresource === 'scale') === true;

t.test('what each form of the extension\'s discovery shows (table)', async (t) => {
  const rows: { form: DiscoveryForm; scale: boolean; categories?: string[] }[] = [
    { form: 'v2', scale: true, categories: ['wardle-all'] },
    { form: 'legacy', scale: false },
    { form: 'v2beta1', scale: true, categories: ['wardle-all'] },
  ];
  for (const r of rows) {
    a.ext.discoveryForm = r.form;
    t.ok(await waitFor(async () => hasScale(await wardleEntry()) === r.scale, 10_000), `${r.form}: the scale subresource ${r.scale ? 'shown' : 'absent'}`);
    const e = (await wardleEntry())!;
    const flunders = e.resources[0];
    t.equal(e.freshness, 'Current', `${r.form}: Current`);
    t.same(flunders.shortNames, ['fl'], `${r.form}: short names (both forms carry them)`);
    t.same(flunders.categories, r.categories, `${r.form}: categories`);
    if (r.scale) {
      t.same(flunders, aggregatedResources()[0], `${r.form}: the extension's entry, as it wrote it`);
      t.same(flunders.subresources[0].acceptedTypes, [{ group: 'autoscaling', version: 'v1', kind: 'Scale' }], `${r.form}: the subresource's acceptedTypes`);
    }
  }
});

t.test('an unchanged aggregated document is answered 304 to the ETag read before; a changed one is read again', async (t) => {
  a.ext.discoveryForm = 'v2';
  t.ok(await waitFor(async () => hasScale(await wardleEntry()), 10_000));
  const before = a.ext.discoveryNotModified;
  t.ok(await waitFor(() => a.ext.discoveryNotModified > before + 1, 10_000), 'later checks: 304 Not Modified');
  a.ext.aggregated = aggregatedResources().map((r) => ({ ...r, categories: ['wardle-all', 'all'] }));
  t.ok(await waitFor(async () => (await wardleEntry())?.resources?.[0]?.categories?.includes('all') === true, 10_000), 'a new build\'s document is seen');
});

t.test('kubectl reads the extension\'s categories from aggregated discovery', async (t) => {
  t.ok(await waitFor(async () => (await wardleEntry())?.resources?.[0]?.categories?.includes('all') === true, 10_000));
  const kubectl = kubectlAsToken(a.dir, a.s, 'admin', ADMIN_TOKEN);
  const r = await kubectl(['api-resources', `--api-group=${WARDLE_GROUP}`, '-o', 'wide']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /flunders\s+fl\s+wardle\.example\.com\/v1alpha1\s+true\s+Flunder\s+.*wardle-all,all/, 'the CATEGORIES column');
});

t.test('an aggregated discovery answered 503 is a failed read: Stale, the last document read kept (upstream keeps none); an answer again makes it Current', async (t) => {
  a.ext.discoveryForm = 'unavailable';
  t.ok(await waitFor(async () => (await wardleEntry())?.freshness === 'Stale', 10_000), 'Stale');
  t.ok(hasScale(await wardleEntry()), 'the last document read is kept');
  a.ext.discoveryForm = 'v2';
  t.ok(await waitFor(async () => (await wardleEntry())?.freshness === 'Current', 10_000), 'Current again');
});

t.test('an entry without resources: none here, still Current', async (t) => {
  const saved = a.ext.aggregated;
  t.teardown(() => (a.ext.aggregated = saved));
  a.ext.aggregated = [];
  t.ok(await waitFor(async () => (await wardleEntry())?.resources?.length === 0, 10_000));
  t.equal((await wardleEntry())?.freshness, 'Current');
});
