import t from 'tap';
import { errors } from '../../core/api/status.js';
import { fieldErrors } from '../../core/api/field-errors.js';

t.test('notFound names the qualified resource and the object', async (t) => {
  const e = errors.notFound({ group: 'storage.svc.io', resource: 'csidrivers' }, 'x');
  t.equal(e.code, 404);
  t.equal(e.status.message, 'csidrivers.storage.svc.io "x" not found');
  t.same(e.status.details, { name: 'x', group: 'storage.svc.io', kind: 'csidrivers' });
});

t.test('invalid lists one cause per field and aggregates messages in brackets', async (t) => {
  const e = errors.invalid({ group: '', kind: 'ConfigMap' }, 'cm', [
    fieldErrors.invalid('metadata.name', 'A', 'bad'),
    fieldErrors.required('data'),
  ]);
  t.equal(e.code, 422);
  t.equal(e.status.message, 'ConfigMap "cm" is invalid: [metadata.name: Invalid value: "A": bad, data: Required value]');
  t.equal(e.status.details?.causes?.length, 2);
  t.same(e.status.details?.causes?.[1], { reason: 'FieldValueRequired', message: 'Required value', field: 'data' });
});
