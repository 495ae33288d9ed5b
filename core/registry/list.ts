/**
 * Lists served from the store rather than the watch cache: Exact at a past revision, continue pages
 * whose snapshot the cache no longer holds or has not reached yet, and deletecollection's selection. Each page is read at
 * one revision; with selectors the store is paged until `limit` matches are found (so a continue
 * token may be returned with no further matches, as upstream does) and remainingItemCount is omitted.
 */
import { errors, StatusError } from '../api/status.js';
import { withResourceVersion } from '../codec/object-bytes.js';
import { itemValue } from '../codec/serializer.js';
import { fromStorage } from './objects.js';
import { hasSelectors, listPlan, type ListOptions } from '../request/list-options.js';
import { type KeyValue, StoreError } from '../storage/interface.js';
import type { OpResult, RegistryContext } from './context.js';
import { continueExpiredMessage, continueFrom, decodeContinue, encodeContinue } from './continue-token.js';
import { checkFieldSelector, describeStored, selectionFilter } from './describe.js';
import { collectionPrefix } from './keys.js';
import type { ResourceType } from './resource-type.js';

export interface StorePage {
  keys: KeyValue[];
  revision: number;
  continue: string | undefined;
  remainingItemCount: number | undefined;
}

/** Reads one page of `rt` in `namespace` from the store per the list options (plan from the spec's table). */
export async function listFromStore(
  ctx: RegistryContext,
  rt: ResourceType,
  namespace: string,
  o: ListOptions,
  /** countRemaining false: a limited page without remainingItemCount (no walk over the rest of the range). */
  mode: { countRemaining?: boolean } = {},
): Promise<StorePage> {
  checkFieldSelector(rt, o.fieldSelector);
  const prefix = collectionPrefix(rt, namespace);
  const plan = listPlan(o);
  let revision: number | undefined;
  let startKey: string | undefined;
  if (plan.kind === 'exact') revision = plan.revision;
  else if (plan.kind === 'continue') {
    const pos = decodeContinue(plan.token, prefix);
    // a negative revision (the token of a 410 Expired) continues at the latest one, as upstream
    revision = pos.revision > 0 ? pos.revision : undefined;
    startKey = pos.startKey;
  }
  try {
    return await readPage(ctx, rt, prefix, o, revision, startKey, mode.countRemaining ?? true);
  } catch (err) {
    if (err instanceof StoreError && err.code === 'Compacted') {
      if (plan.kind === 'continue') {
        // upstream's answer: a token that continues from the same key at the latest revision (rv -1)
        const e = errors.expired(continueExpiredMessage);
        e.status.metadata.continue = continueFrom(startKey!, prefix, -1);
        throw e;
      }
      throw errors.expired('The resourceVersion for the provided list is too old.');
    }
    if (err instanceof StoreError && err.code === 'FutureRevision') throw errors.tooLargeResourceVersion(revision ?? 0, err.revision, 1);
    if (err instanceof StatusError) throw err;
    throw errors.internal(err);
  }
}

async function readPage(
  ctx: RegistryContext,
  rt: ResourceType,
  prefix: string,
  o: ListOptions,
  revision: number | undefined,
  startKey: string | undefined,
  countRemaining: boolean,
): Promise<StorePage> {
  const limit = o.limit > 0 ? o.limit : 0;
  if (!hasSelectors(o)) {
    const res = await ctx.store.list(prefix, { revision, startKey, limit, countRemaining: countRemaining && limit > 0 });
    const last = res.items[res.items.length - 1];
    return {
      keys: res.items,
      revision: res.revision,
      continue: res.more && last ? encodeContinue(last.key, prefix, res.revision) : undefined,
      remainingItemCount: res.more ? res.remaining : undefined,
    };
  }
  const filter = selectionFilter({ namespace: '', labels: o.labelSelector, fields: o.fieldSelector });
  const batch = limit > 0 ? Math.max(limit, 256) : 0;
  const keys: KeyValue[] = [];
  let at = revision;
  let start = startKey;
  let more = false;
  let lastKey: string | undefined;
  for (;;) {
    const res = await ctx.store.list(prefix, { revision: at, startKey: start, limit: batch });
    at = res.revision; // pin every later batch to the first batch's snapshot
    let stopped = false;
    for (let i = 0; i < res.items.length; i++) {
      const kv = res.items[i]!;
      lastKey = kv.key;
      if (filter(describeStored(rt, kv.key, kv.value, kv.modRevision))) keys.push(kv);
      if (limit && keys.length === limit) {
        more = i < res.items.length - 1 || res.more;
        stopped = true;
        break;
      }
    }
    if (stopped || !res.more || !lastKey) break;
    start = lastKey + '\u0000';
  }
  return {
    keys,
    revision: at!,
    continue: more && lastKey ? encodeContinue(lastKey, prefix, at!) : undefined,
    remainingItemCount: undefined,
  };
}

/** A store list as an operation result (items as JSON with resourceVersion stamped). */
export async function listOp(ctx: RegistryContext, rt: ResourceType, namespace: string, o: ListOptions): Promise<OpResult> {
  const page = await listFromStore(ctx, rt, namespace, o);
  // custom resources are converted from the version they were stored in
  const items = rt.custom ? (await fromStorage(rt, page.keys)).map((obj) => Buffer.from(JSON.stringify(itemValue(obj)))) : page.keys.map((kv) => withResourceVersion(kv.value, kv.modRevision));
  const list: { items: Buffer[]; resourceVersion: string; continue?: string; remainingItemCount?: number } = {
    items,
    resourceVersion: String(page.revision),
  };
  if (page.continue) list.continue = page.continue;
  if (page.remainingItemCount !== undefined) list.remainingItemCount = page.remainingItemCount;
  return { code: 200, body: { list }, warnings: [] };
}
