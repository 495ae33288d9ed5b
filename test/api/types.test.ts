/** The object vocabulary's helpers (core/api/types.ts). */
import t from 'tap';
import { nowRFC3339 } from '../../core/api/types.js';

t.test('nowRFC3339 writes whole seconds in UTC, as metav1.Time does, for any instant in any order', async (t) => {
  const cases: [string, string][] = [
    ['2024-05-06T07:08:09.999Z', '2024-05-06T07:08:09Z'],
    ['2024-05-06T07:08:10.001Z', '2024-05-06T07:08:10Z'],
    ['2024-05-06T07:08:09.000Z', '2024-05-06T07:08:09Z'],
    ['1969-12-31T23:59:59.500Z', '1969-12-31T23:59:59Z'],
    ['1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00Z'],
    ['2024-05-06T07:08:10.500Z', '2024-05-06T07:08:10Z'],
  ];
  for (const [instant, text] of cases) t.equal(nowRFC3339(new Date(instant)), text, instant);
  t.match(nowRFC3339(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.throws(() => nowRFC3339(new Date(NaN)), RangeError, 'an invalid date is refused, as toISOString refuses it');
});
