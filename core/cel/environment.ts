/**
 * CEL environments: the variables an expression may read and their types, the object types those
 * refer to, and the function libraries it may call. Declared without the library (types are plain
 * data here), built into a library environment on first compile, so declaring one costs nothing at
 * start. An environment's identity keys the compile cache: declare each once and reuse it.
 */
import type { CelEnv, CelFunc, CelType } from '@bufbuild/cel';
import type { Schema } from '../schema/schema.js';
import { celLib, type CelLibraryName, libraryFuncs } from './library.js';

/** A CEL type as data: a scalar's name, a list, a map, or a declared object type. */
export type CelTypeDecl =
  | 'dyn'
  | 'bool'
  | 'int'
  | 'uint'
  | 'double'
  | 'string'
  | 'bytes'
  | 'null'
  | { list: CelTypeDecl }
  | { map: CelTypeDecl; key?: 'string' | 'int' | 'uint' | 'bool' }
  | { object: string };

export interface CelObjectDecl {
  fields: Readonly<Record<string, CelTypeDecl>>;
  /** The value is bound as a map, and expressions may use it as one (index it, pass it where a map is expected). */
  mapLike?: boolean;
}

export interface CelEnvironmentSpec {
  /** What the environment is for (shown in test names and diagnostics). */
  name: string;
  variables: Readonly<Record<string, CelTypeDecl>>;
  objects?: Readonly<Record<string, CelObjectDecl>>;
  libraries: readonly CelLibraryName[];
  /**
   * Message names an expression may construct (`Object{spec: Object.spec{...}}`, `JSONPatch{...}`):
   * a name equal to one of these, or starting with one and a dot, builds a map of its fields (upstream's
   * mutating admission policies' object construction, typed as maps here).
   */
  constructible?: readonly string[];
  /** Functions of the environment's own beyond the libraries (built when the library is loaded). */
  funcs?: () => readonly CelFunc[];
  /** When set, the only functions the type check lets an expression call (operators included). */
  functions?: ReadonlySet<string>;
}

/** What the type check and the planner use, built from a spec on first use. */
export interface BuiltEnvironment {
  env: CelEnv;
  variables: ReadonlyMap<string, CelType>;
  objects: ReadonlyMap<string, { fields: ReadonlyMap<string, CelType>; mapLike: boolean }>;
  functions: ReadonlySet<string> | undefined;
}

export class CelEnvironment {
  private built: BuiltEnvironment | undefined;

  constructor(readonly spec: CelEnvironmentSpec) {}

  build(): BuiltEnvironment {
    if (this.built) return this.built;
    const cel = celLib();
    const s = this.spec;
    const variables = new Map(Object.entries(s.variables).map(([k, t]) => [k, celType(t)]));
    const objects = new Map(
      Object.entries(s.objects ?? {}).map(([name, o]) => [name, { fields: new Map(Object.entries(o.fields).map(([f, t]) => [f, celType(t)])), mapLike: !!o.mapLike }]),
    );
    // the planner binds variables by name at run time; their declared types serve only the type check
    const env = cel.celEnv({ funcs: [...s.libraries.flatMap((l) => [...libraryFuncs(l)]), ...(s.funcs?.() ?? [])] });
    this.built = { env, variables, objects, functions: s.functions };
    return this.built;
  }
}

/** Declares an environment (nothing is loaded until an expression is compiled in it). */
export const celEnvironment = (spec: CelEnvironmentSpec): CelEnvironment => new CelEnvironment(spec);

/** The library's type for a declaration. */
export function celType(t: CelTypeDecl): CelType {
  const { CelScalar, listType, mapType, objectType } = celLib();
  if (typeof t === 'string') {
    switch (t) {
      case 'dyn':
        return CelScalar.DYN;
      case 'bool':
        return CelScalar.BOOL;
      case 'int':
        return CelScalar.INT;
      case 'uint':
        return CelScalar.UINT;
      case 'double':
        return CelScalar.DOUBLE;
      case 'string':
        return CelScalar.STRING;
      case 'bytes':
        return CelScalar.BYTES;
      case 'null':
        return CelScalar.NULL;
    }
  }
  if ('list' in t) return listType(celType(t.list));
  if ('map' in t) return mapType(celType(t.key ?? 'string') as typeof CelScalar.STRING, celType(t.map));
  return objectType(t.object);
}

/**
 * The type of values of a structural schema node, declaring an object type (named from `name` and
 * the field path) for every struct node into `objects`: integers are ints, numbers doubles, lists and
 * maps typed by their items, and what the schema leaves open (int-or-string, untyped, preserved
 * unknown fields) is dyn.
 */
export function schemaType(schema: Schema, name: string, objects: Record<string, CelObjectDecl>): CelTypeDecl {
  switch (schema.kind) {
    case 'scalar':
      switch (schema.type) {
        case 'integer':
          return 'int';
        case 'number':
          return 'double';
        case 'boolean':
          return 'bool';
        case 'string':
          return 'string';
        default:
          return 'dyn';
      }
    case 'list':
      return { list: schemaType(schema.items, `${name}.@items`, objects) };
    case 'map':
      return { map: schemaType(schema.values, `${name}.@values`, objects) };
    case 'struct': {
      if (schema.preserveUnknownFields || schema.embeddedResource) return 'dyn';
      const fields: Record<string, CelTypeDecl> = {};
      for (const [f, s] of Object.entries(schema.fields)) fields[f] = schemaType(s, `${name}.${f}`, objects);
      objects[name] = { fields };
      return { object: name };
    }
    default:
      return 'dyn';
  }
}
