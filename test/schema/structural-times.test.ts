/**
 * Times in bodies as the structural decode writes them back: metav1.Time in whole seconds, MicroTime
 * with six fraction digits, both in UTC; a value already in that form is kept as sent, and a string
 * that is not an RFC 3339 date is refused with upstream's wording.
 */
import t from 'tap';
import { decodeStructural } from '../../core/schema/structural.js';
import { s } from '../../core/schema/schema.js';

const schema = s.struct('Times', { at: s.time(), micro: s.microTime() });

t.test('a time is written back in UTC at its precision, or refused', async (t) => {
  const rows: [field: 'at' | 'micro', sent: string, want: string | undefined][] = [
    ['micro', '2026-11-29T12:00:00.123456Z', '2026-11-29T12:00:00.123456Z'],
    ['micro', '2026-11-29T12:00:00.123Z', '2026-11-29T12:00:00.123000Z'],
    ['micro', '2026-11-29T12:00:00Z', '2026-11-29T12:00:00.000000Z'],
    ['micro', '2026-11-29T13:00:00.123456+01:00', '2026-11-29T12:00:00.123456Z'],
    ['micro', '2026-11-29t12:00:00.123456z', '2026-11-29T12:00:00.123456Z'],
    ['micro', '2026-13-01T00:00:00.000000Z', undefined],
    ['micro', '2026-11-29T25:00:00.000000Z', undefined],
    ['micro', 'yesterday', undefined],
    ['at', '2026-11-29T12:00:00Z', '2026-11-29T12:00:00Z'],
    ['at', '2026-11-29T12:00:00.999Z', '2026-11-29T12:00:00Z'],
    ['at', '2026-11-29T13:00:00+01:00', '2026-11-29T12:00:00Z'],
    ['at', 'yesterday', undefined],
  ];
  for (const [field, sent, want] of rows) {
    const r = decodeStructural<Record<string, unknown>>({ [field]: sent }, schema);
    if (want === undefined) t.match(r.errors.map((e) => e.detail ?? ''), [new RegExp(`${field} in body must be of type date-time`)], `${field} ${sent}: refused`);
    else t.same({ value: r.value[field], errors: r.errors }, { value: want, errors: [] }, `${field} ${sent} -> ${want}`);
  }
});
