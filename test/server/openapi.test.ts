/**
 * The published OpenAPI v3 documents describe every field: each component schema has a description,
 * and so has each of its properties (a property that is another definition carries its own
 * description beside the reference). `kubectl explain` shows these texts.
 */
import t from 'tap';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { buildOpenApi } from '../../core/server/openapi.js';

type Json = Record<string, unknown>;

const docs = buildOpenApi(builtinResourceTypes);

/** Property paths (definition.property[.property...]) that have no description. */
function undescribed(defs: Record<string, Json>): string[] {
  const missing: string[] = [];
  const walk = (schema: Json, path: string): void => {
    const props = (schema.properties ?? {}) as Record<string, Json>;
    for (const [name, prop] of Object.entries(props)) {
      const p = `${path}.${name}`;
      if (typeof prop.description !== 'string' || prop.description.trim() === '') missing.push(p);
      if (prop.$ref !== undefined) missing.push(`${p} (a bare $ref cannot carry a description)`);
      // inline objects (not references) are walked too
      if (prop.properties) walk(prop, p);
    }
  };
  for (const [name, def] of Object.entries(defs)) {
    if (typeof def.description !== 'string' || def.description.trim() === '') missing.push(`${name} (the definition)`);
    walk(def, name);
  }
  return missing;
}

for (const [gv, doc] of docs.byGroupVersion) {
  t.test(`${gv}: every definition and every field has a description`, async (t) => {
    const defs = (doc.components as Json).schemas as Record<string, Json>;
    t.ok(Object.keys(defs).length > 3, 'definitions are published');
    t.same(undescribed(defs), []);
  });
}

t.test('a field whose type is a definition: description beside the reference in an allOf', async (t) => {
  const doc = docs.byGroupVersion.get('apis/storage.svc.io/v1')!;
  const defs = (doc.components as Json).schemas as Record<string, Json>;
  const spec = (defs['io.svc.api.storage.v1.CSIDriver']!.properties as Record<string, Json>).spec!;
  t.same(spec.allOf, [{ $ref: '#/components/schemas/io.svc.api.storage.v1.CSIDriverSpec' }]);
  t.match(spec.description, /How the cluster works with the driver/);
  const attach = (defs['io.svc.api.storage.v1.CSIDriverSpec']!.properties as Record<string, Json>).attachRequired!;
  t.match(attach.description, /Default true\. Immutable\./, 'CSIDriver texts follow the spec tables');
});

t.test('the walk finds a missing description (the check can fail)', async (t) => {
  t.same(undescribed({ X: { description: 'x', properties: { a: { type: 'string' }, b: { $ref: '#/y', description: 'b' } } } }), ['X.a', 'X.b (a bare $ref cannot carry a description)']);
});
