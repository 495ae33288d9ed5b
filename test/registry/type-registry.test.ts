import t from 'tap';
import { configMaps } from '../../core/registry/core/configmaps.js';
import type { ResourceType } from '../../core/registry/resource-type.js';
import { type TypeChange, TypeRegistry } from '../../core/registry/type-registry.js';

const widgets: ResourceType = { ...configMaps, group: 'example.svc.io', version: 'v1', kind: 'Widget', plural: 'widgets', singular: 'widget' };

t.test('the type registry: lookups, derived views per generation, and changes heard by followers', async (t) => {
  const types = new TypeRegistry([configMaps]);
  const heard: string[] = [];
  const off = types.subscribe((c: TypeChange) => heard.push(`${c.kind} ${c.rt.plural}${c.old ? ` (was ${c.old.kind})` : ''}`));
  t.equal(types.get('/v1/configmaps'), configMaps);
  t.same([...types.knownKinds], ['v1/ConfigMap']);
  const g0 = types.generation;
  types.put(widgets);
  t.ok(types.generation > g0, 'a change moves the generation');
  t.equal(types.get('example.svc.io/v1/widgets'), widgets);
  t.same([...types.knownKinds], ['v1/ConfigMap', 'example.svc.io/v1/Widget'], 'derived views follow');
  t.ok(types.groups().has('example.svc.io'));
  types.put({ ...widgets, kind: 'Gadget' });
  types.remove('example.svc.io/v1/widgets');
  types.remove('example.svc.io/v1/widgets');
  t.same(heard, ['added widgets', 'changed widgets (was Widget)', 'removed widgets'], 'followers hear each change once');
  off();
  types.put(widgets);
  t.equal(heard.length, 3, 'an unsubscribed follower hears nothing');
  t.same(types.all().map((x) => x.plural), ['configmaps', 'widgets']);
});
