/**
 * Translates a schema of the project's DSL into the ssa-oracle's "simple form", so that one scenario
 * definition drives both our SSA core and structured-merge-diff. Struct, map and list markers map to
 * the oracle's elementRelationship/keys; untyped becomes `deduced`, int-or-string `untyped`.
 */
import { type Schema, effectiveListType } from '../../../core/schema/schema.js';

export interface OracleSchema {
  typeName: string;
  schema: Record<string, unknown>;
}

export function toOracleSchema(root: Schema): OracleSchema {
  return { typeName: 'Root', schema: { Root: spec(root) } };
}

function spec(s: Schema): unknown {
  switch (s.kind) {
    case 'scalar':
      if (s.type === 'int-or-string') return 'untyped';
      return s.type === 'string' ? 'string' : s.type === 'boolean' ? 'boolean' : 'number';
    case 'untyped':
      return 'deduced';
    case 'struct': {
      const fields: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(s.fields)) fields[k] = spec(v);
      return { struct: fields, elementRelationship: s.mapType === 'atomic' ? 'atomic' : 'separable' };
    }
    case 'map':
      return { map: spec(s.values), elementRelationship: s.mapType === 'atomic' ? 'atomic' : 'granular' };
    case 'list': {
      const { type, keys } = effectiveListType(s);
      if (type === 'map' && keys.length) return { list: spec(s.items), elementRelationship: 'associative', keys };
      return { list: spec(s.items), elementRelationship: type === 'atomic' ? 'atomic' : 'set' };
    }
  }
}
