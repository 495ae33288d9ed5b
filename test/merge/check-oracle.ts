/**
 * Re-checks the SSA scenarios against the ssa-oracle (structured-merge-diff in Go). Not part of the
 * normal test run: it needs Go. For each scenario it writes the oracle input and output under
 * test/merge/oracle-cases/, then reports where the oracle, our core and the literal expectations in
 * ssa-scenarios.ts disagree.
 *
 *   node dist-merge/test/merge/check-oracle.js            # uses ../shared/tools/ssa-oracle/run.sh (SMD 4.1.2)
 *   SSA_ORACLE_BIN=/path/oracle SSA_ORACLE_SMD=4.4.2 node dist-merge/test/merge/check-oracle.js
 *
 * Scenarios marked `smd412Differs` are known to differ on the shared 4.1.2 oracle (Kubernetes 1.32
 * ships 4.4.2); they are reported, not failed, when checking against 4.1.2.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { toOracleSchema } from './support/oracle-schema.js';
import { type StepOut, runSteps } from './support/scenario.js';
import { type Scenario, scenarios } from './ssa-scenarios.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../../..');
const casesDir = join(repoRoot, 'test/merge/oracle-cases');
const oracleBin = process.env.SSA_ORACLE_BIN ?? resolve(repoRoot, '../shared/tools/ssa-oracle/run.sh');
const smdVersion = process.env.SSA_ORACLE_SMD ?? '4.1.2';

export const slug = (name: string): string =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 80);

function oracleInput(sc: Scenario): object {
  return {
    ...toOracleSchema(sc.schema),
    steps: sc.steps.map((st) => ({ op: st.op, manager: st.manager, apiVersion: st.apiVersion ?? 'v1', object: st.object, force: st.force ?? false })),
  };
}

function runOracle(input: object): { steps: StepOut[] } {
  try {
    return JSON.parse(execFileSync(oracleBin, { input: JSON.stringify(input) }).toString()) as { steps: StepOut[] };
  } catch (e) {
    const out = (e as { stdout?: Buffer }).stdout?.toString();
    throw new Error(`oracle rejected the document: ${out ?? String(e)}`);
  }
}

/** What the scenario asserts, in the oracle's shape. */
function expected(sc: Scenario): { object: unknown; managedFields: unknown; conflicts: unknown[]; errors: (string | undefined)[] } {
  return {
    object: sc.expectObject,
    managedFields: sc.expectManaged,
    conflicts: sc.steps.map((st) => st.expectConflicts ?? []),
    errors: sc.steps.map((st) => st.expectError),
  };
}

function compare(label: string, got: StepOut[], want: ReturnType<typeof expected>): string[] {
  const last = got[got.length - 1]!;
  const problems: string[] = [];
  if (!isDeepStrictEqual(last.object, want.object)) problems.push(`${label} object ${JSON.stringify(last.object)}`);
  if (!isDeepStrictEqual(last.managedFields, want.managedFields)) problems.push(`${label} managedFields ${JSON.stringify(last.managedFields)}`);
  got.forEach((s, i) => {
    if (!isDeepStrictEqual(s.conflicts, want.conflicts[i])) problems.push(`${label} step ${i + 1} conflicts ${JSON.stringify(s.conflicts)}`);
    const error = want.errors[i];
    if (error !== undefined && s.error !== error) problems.push(`${label} step ${i + 1} error ${JSON.stringify(s.error)}`);
  });
  return problems;
}

function main(): void {
  mkdirSync(casesDir, { recursive: true });
  let failed = 0;
  for (const sc of scenarios) {
    if (sc.notOracleExpressible) continue;
    const input = oracleInput(sc);
    const name = slug(sc.name);
    writeFileSync(join(casesDir, `${name}.in.json`), `${JSON.stringify(input, null, 2)}\n`);
    const oracle = runOracle(input);
    writeFileSync(join(casesDir, `${name}.smd${smdVersion}.out.json`), `{"steps": [\n${oracle.steps.map((st) => JSON.stringify(st)).join(',\n')}\n]}\n`);
    const ours = runSteps(sc.schema, sc.steps);
    const want = expected(sc);
    const problems = [...compare('oracle', oracle.steps, want), ...compare('ours', ours, want)];
    if (!problems.length) continue;
    if (sc.smd412Differs && smdVersion !== '4.4.2') {
      console.log(`known 4.1.2 difference: ${sc.name}: ${sc.smd412Differs}`);
      continue;
    }
    failed++;
    console.log(`MISMATCH ${sc.name}\n  ${problems.join('\n  ')}`);
  }
  console.log(failed ? `${failed} scenario(s) disagree` : `all scenarios agree with the oracle (structured-merge-diff ${smdVersion})`);
  process.exitCode = failed ? 1 : 0;
}

main();
