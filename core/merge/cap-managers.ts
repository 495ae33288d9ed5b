/**
 * The cap upstream puts on Update entries: beyond 10 updaters, the oldest are folded, per apiVersion,
 * into one entry named "ancient-changes" that owns the union of their fields and carries the newest
 * folded time. Appliers are never folded. Runs after every non-apply write.
 */
import { type ManagedState, cmp, timeSeconds } from './managed-fields.js';
import { managerKey } from './managers.js';

export const MAX_UPDATE_MANAGERS = 10;
export const ANCIENT_CHANGES_MANAGER = 'ancient-changes';

export function capUpdateManagers(state: ManagedState, max = MAX_UPDATE_MANAGERS): ManagedState {
  const updaters = [...state.sets].filter(([, vs]) => !vs.applied).map(([key]) => key);
  if (updaters.length <= max) return state;
  const sets = new Map(state.sets);
  const times = new Map(state.times);
  updaters.sort((a, b) => timeSeconds(times.get(a)) - timeSeconds(times.get(b)) || cmp(a, b));
  const firstOfVersion = new Map<string, string>();
  let count = updaters.length;
  for (let i = 0; i < updaters.length && count > max; i++) {
    const key = updaters[i]!;
    const vs = sets.get(key)!;
    const first = firstOfVersion.get(vs.apiVersion);
    if (first === undefined) {
      firstOfVersion.set(vs.apiVersion, key);
      continue;
    }
    const bucket = managerKey({ manager: ANCIENT_CHANGES_MANAGER, operation: 'Update', apiVersion: vs.apiVersion });
    if (!sets.has(bucket)) {
      sets.set(bucket, sets.get(first)!);
      sets.delete(first);
    }
    sets.set(bucket, { set: vs.set.union(sets.get(bucket)!.set), apiVersion: vs.apiVersion, applied: vs.applied });
    sets.delete(key);
    times.set(bucket, times.get(key));
    count--;
  }
  return { sets, times };
}
