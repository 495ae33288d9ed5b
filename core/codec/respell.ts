/**
 * Answers in the group spelling of the request path: under an upstream alias (storage.k8s.io for
 * storage.svc.io) the apiVersions the server wrote inside an object (managedFields entries, owner
 * references to objects of the same group, and the group a binding names in roleRef and subjects,
 * which the server fills in and stores canonical) are spelled as the path spelled the group, and so
 * are the group names in a Status. The stored object is not touched: a respelled source is a view over it,
 * memoized per spelling on the object version like any other encoding.
 */
import { itemValue, type ObjectSource } from './serializer.js';

/** The group as stored (canonical) and as the request spelled it. */
export interface Respelling {
  from: string;
  to: string;
}

function respellApiVersionOf(apiVersion: unknown, r: Respelling): unknown {
  return typeof apiVersion === 'string' && apiVersion.startsWith(`${r.from}/`) ? `${r.to}${apiVersion.slice(r.from.length)}` : apiVersion;
}

function respellEntries(list: unknown, r: Respelling): unknown {
  if (!Array.isArray(list)) return list;
  let changed = false;
  const out = list.map((e) => {
    if (typeof e !== 'object' || e === null) return e;
    const av = (e as { apiVersion?: unknown }).apiVersion;
    const next = respellApiVersionOf(av, r);
    if (next === av) return e;
    changed = true;
    return { ...(e as object), apiVersion: next };
  });
  return changed ? out : list;
}

type GroupNamed = { apiGroup?: unknown };

function respellGroupField<T>(e: T, r: Respelling): T {
  return typeof e === 'object' && e !== null && (e as GroupNamed).apiGroup === r.from ? { ...e, apiGroup: r.to } : e;
}

/** A binding's roleRef and subjects naming the group (RBAC stores them canonical, whatever the client wrote). */
function respellBinding(v: Readonly<Record<string, unknown>>, r: Respelling): Readonly<Record<string, unknown>> {
  if (!('roleRef' in v)) return v;
  const roleRef = respellGroupField(v.roleRef, r);
  const subjects = Array.isArray(v.subjects) ? v.subjects.map((e) => respellGroupField(e, r)) : v.subjects;
  const changed = roleRef !== v.roleRef || (Array.isArray(subjects) && subjects.some((e, i) => e !== (v.subjects as unknown[])[i]));
  return changed ? { ...v, roleRef, subjects } : v;
}

/** The object value with the server-written apiVersions of `r.from` spelled `r.to` (a copy only where something changes). */
export function respellValue(value: Readonly<Record<string, unknown>>, r: Respelling): Readonly<Record<string, unknown>> {
  const v = respellBinding(value, r);
  const meta = v.metadata as Record<string, unknown> | undefined;
  if (!meta) return v;
  const managedFields = respellEntries(meta.managedFields, r);
  const ownerReferences = respellEntries(meta.ownerReferences, r);
  if (managedFields === meta.managedFields && ownerReferences === meta.ownerReferences) return v;
  const m = { ...meta };
  if (managedFields !== undefined) m.managedFields = managedFields;
  if (ownerReferences !== undefined) m.ownerReferences = ownerReferences;
  return { ...v, metadata: m };
}

/** Memo keys of one spelling, made once per spelling (lists ask for them once per item). */
const suffixes = new Map<string, { suffix: string; item: string }>();
const keysOf = (r: Respelling): { suffix: string; item: string } => {
  let k = suffixes.get(r.to);
  if (!k) suffixes.set(r.to, (k = { suffix: `|${r.to}`, item: `item|${r.to}` }));
  return k;
};

/**
 * A view of a source spelled for a respelling; its encodings are memoized on the source under the
 * spelling. A class rather than closures: an aliased list makes one per item per request.
 */
class RespelledSource implements ObjectSource {
  private spelledValue: Readonly<Record<string, unknown>> | undefined;
  constructor(
    private src: ObjectSource,
    private readonly r: Respelling,
    private readonly keys: { suffix: string; item: string },
  ) {}

  /** Points this view at another source (the list flyweight below). */
  view(src: ObjectSource): this {
    this.src = src;
    this.spelledValue = undefined;
    return this;
  }

  value(): Readonly<Record<string, unknown>> {
    return (this.spelledValue ??= respellValue(this.src.value(), this.r));
  }

  itemJson(): Uint8Array {
    let b = this.src.memo(this.keys.item);
    if (!b) {
      const v = this.value();
      // nothing to respell: the stored JSON is already right
      b = v === this.src.value() ? this.src.itemJson() : Buffer.from(JSON.stringify(itemValue(v)));
      this.src.setMemo(this.keys.item, b);
    }
    return b;
  }

  memo(k: string): Uint8Array | undefined {
    return this.src.memo(k + this.keys.suffix);
  }

  setMemo(k: string, b: Uint8Array): void {
    this.src.setMemo(k + this.keys.suffix, b);
  }
}

/** A view of `src` spelled for `r`; its encodings are memoized on `src` under the spelling. */
export function respelledSource(src: ObjectSource, r: Respelling): ObjectSource {
  return new RespelledSource(src, r, keysOf(r));
}

/**
 * The items of a list spelled for `r`, through one view re-pointed at each item in turn: for a
 * consumer that is done with an item before it asks for the next (every serializer's encodeList),
 * an aliased list then costs no allocation per item. Not for consumers that keep the items.
 */
export function respelledOneByOne(items: Iterable<ObjectSource>, r: Respelling): Iterable<ObjectSource> {
  return { [Symbol.iterator]: () => new OneByOne(items[Symbol.iterator](), new RespelledSource(undefined as unknown as ObjectSource, r, keysOf(r))) };
}

/** The iterator of respelledOneByOne: a hand-written one reusing its result object (a generator allocates one per step). */
class OneByOne implements Iterator<ObjectSource> {
  private readonly step: IteratorResult<ObjectSource> = { done: false, value: undefined as unknown as ObjectSource };
  constructor(
    private readonly inner: Iterator<ObjectSource>,
    private readonly view: RespelledSource,
  ) {}

  next(): IteratorResult<ObjectSource> {
    const r = this.inner.next();
    if (r.done) return r;
    (this.step as { value: ObjectSource }).value = this.view.view(r.value);
    return this.step;
  }
}

/** A Status whose group names are spelled for `r` (details.group and the `<resource>.<group>` in its message). */
export function respellStatus<T extends { message?: string; details?: { group?: string } }>(status: T, r: Respelling): T {
  const out = { ...status };
  if (out.message) out.message = out.message.split(`.${r.from}`).join(`.${r.to}`);
  if (out.details?.group === r.from) out.details = { ...out.details, group: r.to };
  return out;
}
