/**
 * FieldSet: a set of field paths stored as a trie, structured-merge-diff's fieldpath.Set. A node is a
 * path element that is a member of the set (the path ending there is in the set), has children, or
 * both. Sets are built once (addMember / attachChild / insert on a fresh set) and then treated as
 * immutable: the set algebra returns new sets that share untouched subtrees.
 */
import { type Path, type PathElement, comparePE } from './path-element.js';

export interface SetNode {
  readonly pe: PathElement;
  readonly member: boolean;
  /** Never empty when present. */
  readonly child: FieldSet | undefined;
}

interface MutableNode {
  pe: PathElement;
  member: boolean;
  child: FieldSet | undefined;
}

export class FieldSet {
  private readonly nodes = new Map<string, MutableNode>();

  static of(...paths: Path[]): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  isEmpty(): boolean {
    return this.nodes.size === 0;
  }

  /** Number of member paths in the whole set. */
  size(): number {
    let n = 0;
    for (const node of this.nodes.values()) n += (node.member ? 1 : 0) + (node.child ? node.child.size() : 0);
    return n;
  }

  node(pe: PathElement): SetNode | undefined {
    return this.nodes.get(pe.id);
  }

  hasMember(pe: PathElement): boolean {
    return this.nodes.get(pe.id)?.member === true;
  }

  childAt(pe: PathElement): FieldSet | undefined {
    return this.nodes.get(pe.id)?.child;
  }

  /** Lookups by path element id (its FieldsV1 key), for walkers that have the key text only. */
  hasMemberId(id: string): boolean {
    return this.nodes.get(id)?.member === true;
  }

  childAtId(id: string): FieldSet | undefined {
    return this.nodes.get(id)?.child;
  }

  has(path: Path): boolean {
    let s: FieldSet | undefined = this;
    for (let i = 0; s && i < path.length - 1; i++) s = s.childAt(path[i]!);
    return path.length > 0 && s !== undefined && s.hasMember(path[path.length - 1]!);
  }

  /** Builder: marks `pe` (relative to this set) as a member. */
  addMember(pe: PathElement): void {
    const n = this.nodes.get(pe.id);
    if (n) n.member = true;
    else this.nodes.set(pe.id, { pe, member: true, child: undefined });
  }

  /** Builder: adds `set` under `pe`; empty sets are dropped to keep nodes meaningful. */
  attachChild(pe: PathElement, set: FieldSet): void {
    if (set.isEmpty()) return;
    const n = this.nodes.get(pe.id);
    if (!n) this.nodes.set(pe.id, { pe, member: false, child: set });
    else n.child = n.child ? n.child.union(set) : set;
  }

  /** Builder: inserts one path. */
  insert(path: Path): void {
    if (path.length === 0) return;
    let s: FieldSet = this;
    for (let i = 0; i < path.length - 1; i++) {
      const pe = path[i]!;
      let n = s.nodes.get(pe.id);
      if (!n) s.nodes.set(pe.id, (n = { pe, member: false, child: undefined }));
      if (!n.child) n.child = new FieldSet();
      s = n.child;
    }
    s.addMember(path[path.length - 1]!);
  }

  /** Nodes in structured-merge-diff order. */
  sortedNodes(): SetNode[] {
    const list = [...this.nodes.values()];
    if (list.length > 1) list.sort((a, b) => comparePE(a.pe, b.pe));
    return list;
  }

  /** Unordered node iteration, for algorithms where order does not matter. */
  nodeValues(): IterableIterator<SetNode> {
    return this.nodes.values();
  }

  /** Member paths in structured-merge-diff's iteration order: a level's members, then its children. */
  iterate(fn: (path: Path) => void, prefix: PathElement[] = []): void {
    const sorted = this.sortedNodes();
    for (const n of sorted) if (n.member) fn([...prefix, n.pe]);
    for (const n of sorted) {
      if (!n.child) continue;
      prefix.push(n.pe);
      n.child.iterate(fn, prefix);
      prefix.pop();
    }
  }

  paths(): Path[] {
    const out: Path[] = [];
    this.iterate((p) => out.push(p));
    return out;
  }

  /** Builds a set from nodes that are not shared with a set still being built. */
  private static fromNodes(nodes: Map<string, MutableNode>): FieldSet {
    const s = new FieldSet();
    for (const [id, n] of nodes) s.nodes.set(id, n);
    return s;
  }

  // The algebra returns `this` (or `o`) when the result has the same members, so callers can keep
  // caches keyed by set identity; nodes of finished sets are shared, never modified.

  union(o: FieldSet): FieldSet {
    if (o === this || o.isEmpty()) return this;
    if (this.isEmpty()) return o;
    let out: Map<string, MutableNode> | undefined;
    for (const [id, m] of o.nodes) {
      const n = this.nodes.get(id);
      let next: MutableNode | undefined = n ? undefined : m;
      if (n) {
        const member = n.member || m.member;
        const child = unionChild(n.child, m.child);
        if (member !== n.member || child !== n.child) next = { pe: n.pe, member, child };
      }
      if (next) (out ??= new Map(this.nodes)).set(id, next);
    }
    return out ? FieldSet.fromNodes(out) : this;
  }

  intersection(o: FieldSet): FieldSet {
    const out = new FieldSet();
    const [small, large] = this.nodes.size <= o.nodes.size ? [this, o] : [o, this];
    for (const [id, n] of small.nodes) {
      const m = large.nodes.get(id);
      if (!m) continue;
      const child = n.child && m.child ? nonEmpty(n.child.intersection(m.child)) : undefined;
      const member = n.member && m.member;
      if (member || child) out.nodes.set(id, { pe: n.pe, member, child });
    }
    return out;
  }

  /** Member-wise difference: a member of `o` does not remove this set's children below it. */
  difference(o: FieldSet): FieldSet {
    return this.subtract(o, false);
  }

  /** Difference that also drops everything below a member of `o`. */
  recursiveDifference(o: FieldSet): FieldSet {
    return this.subtract(o, true);
  }

  private subtract(o: FieldSet, recursive: boolean): FieldSet {
    if (o.isEmpty() || this.isEmpty()) return this;
    let out: Map<string, MutableNode> | undefined;
    for (const [id, m] of o.nodes) {
      const n = this.nodes.get(id);
      if (!n) continue;
      const dropsAll = recursive && m.member;
      const member = n.member && !m.member;
      const child = dropsAll ? undefined : n.child && m.child ? nonEmpty(n.child.subtract(m.child, recursive)) : n.child;
      if (member === n.member && child === n.child) continue;
      out ??= new Map(this.nodes);
      if (member || child) out.set(id, { pe: n.pe, member, child });
      else out.delete(id);
    }
    return out ? FieldSet.fromNodes(out) : this;
  }

  /** Every member path of this set is a member of `o`. */
  isSubsetOf(o: FieldSet): boolean {
    for (const [id, n] of this.nodes) {
      const m = o.nodes.get(id);
      if (!m) return false;
      if (n.member && !m.member) return false;
      if (n.child && (!m.child || !n.child.isSubsetOf(m.child))) return false;
    }
    return true;
  }

  equals(o: FieldSet): boolean {
    return this === o || (this.isSubsetOf(o) && o.isSubsetOf(this));
  }
}

const nonEmpty = (s: FieldSet): FieldSet | undefined => (s.isEmpty() ? undefined : s);

function unionChild(a: FieldSet | undefined, b: FieldSet | undefined): FieldSet | undefined {
  if (!a) return b;
  if (!b) return a;
  return a.union(b);
}
