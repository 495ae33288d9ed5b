/**
 * Runs the SSA scenarios (ssa-scenarios.ts) through the core and checks every step's conflicts or
 * error and the final object and managed fields against the oracle-confirmed expectations.
 */
import t from 'tap';
import { runSteps } from './support/scenario.js';
import { scenarios } from './ssa-scenarios.js';

for (const sc of scenarios) {
  t.test(sc.name, async (t) => {
    const out = runSteps(sc.schema, sc.steps);
    sc.steps.forEach((st, i) => {
      const step = out[i]!;
      const label = `step ${i + 1} (${st.op} by ${st.manager})`;
      t.same(step.conflicts, st.expectConflicts ?? [], `${label} conflicts`);
      if (st.expectError !== undefined) t.equal(step.error, st.expectError, `${label} fails with the expected error`);
      else t.equal(step.ok, (st.expectConflicts ?? []).length === 0, `${label} succeeds unless it conflicts`);
    });
    const last = out[out.length - 1]!;
    t.same(last.object, sc.expectObject, 'final object');
    t.strictSame(last.managedFields, sc.expectManaged, 'final managed fields');
  });
}

t.test('conflict messages: one conflict names the manager and path, several are grouped by manager', async (t) => {
  const single = runSteps(scenarios.find((s) => s.name.startsWith('rule 6: re-applying'))!.schema, scenarios.find((s) => s.name.startsWith('rule 6: re-applying'))!.steps);
  t.equal(single[2]!.error, 'Apply failed with 1 conflict: conflict with "ctrl" using v2: .spec.replicas');
  const multi = scenarios.find((s) => s.name.startsWith('conflicts with several managers'))!;
  t.equal(
    runSteps(multi.schema, multi.steps)[2]!.error,
    'Apply failed with 3 conflicts: conflicts with "alice":\n- .spec.replicas\nconflicts with "ctrl" using v1:\n- .spec.args\n- .spec.color',
  );
});
