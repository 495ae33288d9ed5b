import t from 'tap';
import { controllerCatalog, selectControllers } from '../../core/controllers/manager.js';

const names = (flag: string[]) => selectControllers(flag).map((c) => c.name);
const onByDefault = controllerCatalog.filter((c) => !c.offByDefault).map((c) => c.name);

t.test('--controllers: * runs every controller on by default; names add, -names remove; aliases accepted', async (t) => {
  t.same(names(['*']), onByDefault, '* is every controller that is on by default');
  t.same(names([]), [], 'an empty list runs none');
  t.same(names(['namespace']), ['namespace-controller'], 'the older name is accepted');
  t.same(names(['namespace-controller']), ['namespace-controller']);
  t.same(names(['*', '-namespace']), onByDefault.filter((n) => n !== 'namespace-controller'), '-name turns one off');
  t.same(names(['-namespace', '*']), onByDefault.filter((n) => n !== 'namespace-controller'), 'order does not matter');
  for (const c of controllerCatalog.filter((c) => c.offByDefault)) {
    t.notOk(names(['*']).includes(c.name), `${c.name} is off under *`);
    t.ok(names(['*', c.aliases[0] ?? c.name]).includes(c.name), `${c.name} runs when named`);
  }
  t.same(names(['garbagecollector']), ['garbage-collector-controller'], 'the garbage collector under its older name');
  t.ok(names(['*']).includes('garbage-collector-controller'), 'the garbage collector is on by default');
  t.throws(() => selectControllers(['bogus']), { message: '"bogus" is not in the list of known controllers' });
});
