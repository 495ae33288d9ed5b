/**
 * Runs the write check a kind declares (ResourceType.writeCheck) on the final object of a create or
 * update, after validation and admission and before the store (so dry runs are checked too, and a
 * refused write stores nothing). A registry that lacks the check (a pool worker) refuses the write
 * rather than let it through: such kinds' tasks are routed to the main thread.
 */
import { errors } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import type { OpRequest, RegistryContext } from './context.js';

export async function runWriteCheck(ctx: RegistryContext, req: OpRequest, verb: 'create' | 'update', object: ApiObject, old?: ApiObject): Promise<void> {
  const name = req.rt.writeCheck;
  if (!name) return;
  const check = ctx.writeChecks.get(name);
  if (!check) throw errors.internal(new Error(`writes of ${req.rt.plural} need the ${name} check, which this thread does not have`));
  const w = { rt: req.rt, verb, user: req.user, namespace: req.namespace, name: req.name, object };
  await check(old ? { ...w, old } : w);
}
