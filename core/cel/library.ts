/**
 * The CEL library (@bufbuild/cel), loaded on first use through its CommonJS build, synchronously: a
 * server that configures no expression does not pay for loading it at start, and every user of this
 * layer shares the one copy (types and values from two copies of the library would not mix).
 *
 * Also the function libraries an environment may include: the library's strings extension, and our
 * version of upstream's Kubernetes list and regex libraries with the optional type's methods (what
 * optionalOldSelf needs).
 */
import { createRequire } from 'node:module';
import type { CelFunc, CelValue } from '@bufbuild/cel';

export type CelLib = typeof import('@bufbuild/cel');

let lib: CelLib | undefined;
let strings: readonly CelFunc[] | undefined;
let k8s: readonly CelFunc[] | undefined;

/** The library, loaded on the first call. */
export function celLib(): CelLib {
  return (lib ??= createRequire(import.meta.url)('@bufbuild/cel') as CelLib);
}

/** The function libraries an environment can include. */
export type CelLibraryName = 'strings' | 'k8s';

export function libraryFuncs(name: CelLibraryName): readonly CelFunc[] {
  if (name === 'strings') return (strings ??= (createRequire(import.meta.url)('@bufbuild/cel/ext') as typeof import('@bufbuild/cel/ext')).strings);
  return (k8s ??= k8sFuncs(celLib()));
}

/** The absent value of an optional (optionalOldSelf's `oldSelf` on create): `hasValue()` is false, `orValue(x)` is x. */
export const OPTIONAL_NONE: ReadonlyMap<string, unknown> = new Map([['@none', true]]);

const isNone = (v: unknown): boolean => celLib().isCelMap(v) && (v as { has(k: string): boolean }).has('@none');

const compare = (a: CelValue, b: CelValue): number => {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) return Number(a) - Number(b);
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  throw new Error('no such overload');
};

function celEqual(a: CelValue, b: CelValue): boolean {
  try {
    return compare(a, b) === 0;
  } catch {
    const json = (v: CelValue): string => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x));
    return json(a) === json(b);
  }
}

/** Upstream's Kubernetes list and regex library, and the optional type's methods. */
function k8sFuncs(cel: CelLib): CelFunc[] {
  const { celList, celMethod, CelScalar, listType } = cel;
  const values = (l: Iterable<CelValue>): CelValue[] => [...l];
  return [
    celMethod('isSorted', listType(CelScalar.DYN), [], CelScalar.BOOL, function () {
      const v = values(this);
      for (let i = 1; i < v.length; i++) if (compare(v[i - 1]!, v[i]!) > 0) return false;
      return true;
    }),
    celMethod('sum', listType(CelScalar.DYN), [], CelScalar.DYN, function () {
      const v = values(this);
      if (v.length === 0) return 0n;
      if (v.every((x) => typeof x === 'bigint')) return (v as bigint[]).reduce((a, b) => a + b, 0n);
      return v.reduce((a: number, b) => a + Number(b), 0);
    }),
    celMethod('min', listType(CelScalar.DYN), [], CelScalar.DYN, function () {
      const v = values(this);
      if (v.length === 0) throw new Error('min called on empty list');
      return v.reduce((a, b) => (compare(a, b) <= 0 ? a : b)) as never;
    }),
    celMethod('max', listType(CelScalar.DYN), [], CelScalar.DYN, function () {
      const v = values(this);
      if (v.length === 0) throw new Error('max called on empty list');
      return v.reduce((a, b) => (compare(a, b) >= 0 ? a : b)) as never;
    }),
    celMethod('indexOf', listType(CelScalar.DYN), [CelScalar.DYN], CelScalar.INT, function (x) {
      return BigInt(values(this).findIndex((e) => celEqual(e, x)));
    }),
    celMethod('lastIndexOf', listType(CelScalar.DYN), [CelScalar.DYN], CelScalar.INT, function (x) {
      const v = values(this);
      for (let i = v.length - 1; i >= 0; i--) if (celEqual(v[i]!, x)) return BigInt(i);
      return -1n;
    }),
    celMethod('find', CelScalar.STRING, [CelScalar.STRING], CelScalar.STRING, function (re) {
      return new RegExp(re, 'u').exec(this)?.[0] ?? '';
    }),
    celMethod('findAll', CelScalar.STRING, [CelScalar.STRING], listType(CelScalar.STRING), function (re) {
      return celList([...this.matchAll(new RegExp(re, 'gu'))].map((m) => m[0]));
    }),
    celMethod('findAll', CelScalar.STRING, [CelScalar.STRING, CelScalar.INT], listType(CelScalar.STRING), function (re, n) {
      const all = [...this.matchAll(new RegExp(re, 'gu'))].map((m) => m[0]);
      return celList(n < 0n ? all : all.slice(0, Number(n)));
    }),
    celMethod('hasValue', CelScalar.DYN, [], CelScalar.BOOL, function () {
      return !isNone(this);
    }),
    celMethod('value', CelScalar.DYN, [], CelScalar.DYN, function () {
      if (isNone(this)) throw new Error('optional.none() dereference');
      return this as never;
    }),
    celMethod('orValue', CelScalar.DYN, [CelScalar.DYN], CelScalar.DYN, function (x) {
      return (isNone(this) ? x : this) as never;
    }),
  ];
}
