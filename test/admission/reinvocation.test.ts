/**
 * Reinvocation bookkeeping (core/admission/reinvocation.ts), step by step as a plugin drives it
 * through the chain's two passes.
 */
import t from 'tap';
import { ReinvocationContext } from '../../core/admission/reinvocation.js';
import type { ApiObject } from '../../core/api/types.js';

const cm = (v: string): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { v } }) as unknown as ApiObject;

t.test('a change re-arms only the IfNeeded calls made before it, and asks for a second pass', async (t) => {
  const ctx = new ReinvocationContext();
  const r = ctx.trackerFor('p');
  r.begin(cm('1'));
  r.invoked('a', false, true); // IfNeeded, no change
  r.invoked('b', false, false); // Never
  t.notOk(ctx.shouldReinvoke, 'nothing changed yet');
  r.invoked('c', true, true); // changes: re-arms a, not b; c itself is not re-armed by its own change
  t.ok(ctx.shouldReinvoke);
  r.end(cm('2'));
  ctx.isReinvoke = true;
  r.begin(cm('2')); // nothing changed since this plugin's pass
  t.same(['a', 'b', 'c'].map((k) => r.skips(k)), [false, true, true]);
});

t.test('in the second pass, a change by a later plugin since this plugin\'s last output re-arms every IfNeeded call', async (t) => {
  const ctx = new ReinvocationContext();
  const r = ctx.trackerFor('p');
  r.begin(cm('1'));
  r.invoked('a', false, true);
  r.invoked('b', false, true);
  r.end(cm('1'));
  ctx.shouldReinvoke = true; // another plugin changed the object
  ctx.isReinvoke = true;
  r.begin(cm('other plugin wrote this'));
  t.same(['a', 'b'].map((k) => r.skips(k)), [false, false]);
});

t.test('outside a second pass nothing is skipped; trackers are per plugin', async (t) => {
  const ctx = new ReinvocationContext();
  t.notOk(ctx.trackerFor('p').skips('anything'));
  t.equal(ctx.trackerFor('p'), ctx.trackerFor('p'));
  t.not(ctx.trackerFor('p'), ctx.trackerFor('q'));
});
