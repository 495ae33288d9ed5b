/**
 * get and list, served from the WatchCache on the main thread whenever its state is the snapshot the
 * request asks for (the spec's resourceVersion tables):
 *   Most recent    wait until the cache holds every acknowledged write, then read it
 *   Any            read the cache as it is
 *   Not older than wait (briefly) until the cache reaches the revision, then read it
 *   Exact          read the cache if nothing changed this resource since that revision,
 *                  otherwise the store's history at that revision (a task on the pool)
 *   Continue       the token's revision as Exact, without waiting: a revision the cache has not
 *                  reached yet (a token of another server on the same etcd) is the store's to read
 * Pages carry a continue token (unsigned, as upstream: any server on the store accepts it);
 * remainingItemCount is given only without selectors.
 */
import { errors } from '../../api/status.js';
import { getPlan, hasSelectors, listOptionsFromQuery, listPlan, type ListOptions, type ListPlan, validateListOptions } from '../../request/list-options.js';
import type { Cacher } from '../../storage/cacher.js';
import type { Store } from '../../storage/interface.js';
import type { CachedObject, WatchCache } from '../../storage/watch-cache.js';
import { decodeContinue, encodeContinue } from '../../registry/continue-token.js';
import { checkFieldSelector, selectionFilter, unreadableError } from '../../registry/describe.js';
import { collectionPrefix, objectKey, resourcePrefix } from '../../registry/keys.js';
import { groupResourceOf, type ResourceType, type SubresourceView } from '../../registry/resource-type.js';
import type { ApiObject } from '../../api/types.js';
import { cachedSource, prepareViews } from '../object-encoding.js';
import type { ListMeta, ObjectSource } from '../../codec/serializer.js';
import { encodeListIn, encodeObjectIn, encodeValueIn } from '../../registry/respond.js';
import type { ResponseForm } from '../../registry/task.js';
import { type MaybePromise, then } from '../../api/maybe-async.js';

export interface ReadContext {
  cacher: Cacher;
  store: Store;
}

export type ReadResult =
  | { kind: 'stream'; chunks: Iterable<Uint8Array> }
  /** The cache cannot serve this snapshot: run the list on the store (pool task). */
  | { kind: 'store' };

function waitForPlan(ctx: ReadContext, plan: ListPlan): MaybePromise<unknown> {
  if (plan.kind === 'mostRecent') return ctx.cacher.syncConsistent();
  if (plan.kind === 'notOlderThan' || plan.kind === 'exact') return ctx.cacher.waitFor(plan.revision);
  return undefined;
}

/**
 * One object from the cache; answers without waiting whenever the cache is already fresh enough. A
 * subresource served as another kind (scale) answers with its view of the object.
 */
export function getFromCache(
  ctx: ReadContext,
  rt: ResourceType,
  namespace: string,
  name: string,
  query: URLSearchParams,
  form: ResponseForm,
  view?: SubresourceView,
): MaybePromise<Uint8Array> {
  const plan = getPlan(query.get('resourceVersion') ?? '');
  return then(waitForPlan(ctx, plan), () => {
    const cache = ctx.cacher.cacheFor(resourcePrefix(rt));
    const o = cache.get(objectKey(rt, namespace, name));
    if (!o) throw errors.notFound(groupResourceOf(rt), name);
    if (o.unreadable) throw unreadableError(o);
    const encode = (): Uint8Array => {
      if (view) return encodeValueIn(form, view.toView(cachedSource(o, rt).value() as unknown as ApiObject) as unknown as Record<string, unknown>);
      return encodeObjectIn(rt, form, cachedSource(o, rt));
    };
    return rt.custom?.webhook ? prepareViews(rt, [o]).then(encode) : encode();
  });
}

export function parseListOptions(rt: ResourceType, query: URLSearchParams): ListOptions {
  const o = listOptionsFromQuery(query);
  checkFieldSelector(rt, o.fieldSelector);
  return o;
}

/** Serves a list from the cache, or says the store must serve it. */
export async function listFromCache(ctx: ReadContext, rt: ResourceType, namespace: string, o: ListOptions, form: ResponseForm): Promise<ReadResult> {
  validateListOptions(o);
  const plan = listPlan(o);
  const prefix = collectionPrefix(rt, namespace);
  let startKey: string | undefined;
  let atRevision: number | undefined;
  if (plan.kind === 'continue') {
    const pos = decodeContinue(plan.token, prefix);
    startKey = pos.startKey;
    // a negative revision (the token of a 410 Expired) continues at the latest one, as upstream
    if (pos.revision > 0) atRevision = pos.revision;
    else await ctx.cacher.syncConsistent();
  } else await waitForPlan(ctx, plan);
  if (plan.kind === 'exact') atRevision = plan.revision;

  const cache = ctx.cacher.cacheFor(resourcePrefix(rt));
  // a snapshot the cache cannot vouch for (changed since, or not reached yet), or one below the store's
  // compaction, is the store's to answer (at that revision; 410 there when compacted)
  if (atRevision !== undefined && (!cache.isExactAt(atRevision) || atRevision < (await ctx.store.compactedRevision()))) return { kind: 'store' };
  const listRevision = atRevision ?? cache.revision;
  const page = pageFromCache(cache, rt, prefix, startKey, o, listRevision);
  await prepareViews(rt, page.items);
  return { kind: 'stream', chunks: encodeListIn(rt, form, page.meta, sources(page.items, rt)) };
}

function pageFromCache(
  cache: WatchCache,
  rt: ResourceType,
  prefix: string,
  startKey: string | undefined,
  o: ListOptions,
  revision: number,
): { items: CachedObject[]; meta: ListMeta } {
  const filter = selectionFilter({ namespace: '', labels: o.labelSelector, fields: o.fieldSelector });
  const limit = o.limit > 0 ? o.limit : Infinity;
  const items: CachedObject[] = [];
  let more = false;
  let last: CachedObject | undefined;
  const { objects, from, end } = cache.bounds(prefix, startKey);
  for (let i = from; i < end; i++) {
    const obj = objects[i]!;
    // as a list from the store would, an object that cannot be decoded fails the list, naming it
    if (obj.unreadable) throw unreadableError(obj);
    if (!filter(obj)) continue;
    if (items.length === limit) {
      more = true;
      break;
    }
    items.push(obj);
    last = obj;
  }
  const meta: ListMeta = { resourceVersion: String(revision) };
  if (more && last) {
    meta.continue = encodeContinue(last.key, prefix, revision);
    if (!hasSelectors(o)) meta.remainingItemCount = cache.countFrom(prefix, last.key + '\u0000');
  }
  return { items, meta };
}

function sources(items: CachedObject[], rt: ResourceType): ObjectSource[] {
  // an array, not a generator: no iterator result per item
  return items.map((o) => cachedSource(o, rt));
}
