/**
 * meta/v1 Time and MicroTime between their protobuf form ({seconds, nanos}) and their JSON form
 * (RFC 3339 in UTC: whole seconds for Time, six fraction digits for MicroTime; null for the zero time,
 * which Go writes as an empty message).
 */
import { ProtobufDecodeError, ProtobufEncodeError } from './errors.js';

/** Unix seconds of Go's zero time, 0001-01-01T00:00:00Z. */
export const GO_ZERO_TIME_SECONDS = -62135596800;

export interface WireTimestamp {
  seconds: number;
  nanos: number;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** `YYYY-MM-DDTHH:MM:SS` in UTC for whole Unix seconds; Go refuses years outside 0..9999. */
function utcDateTime(seconds: number): string {
  const d = new Date(seconds * 1000);
  const year = d.getUTCFullYear();
  if (!Number.isFinite(d.getTime()) || year < 0 || year > 9999) {
    throw new ProtobufDecodeError('Time.MarshalJSON: year outside of range [0,9999]');
  }
  return (
    `${pad(year, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}` +
    `T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`
  );
}

/** Seconds and nanos with nanos brought into 0..999999999, as Go's time.Unix does. */
function normalized(t: WireTimestamp): WireTimestamp {
  const carry = Math.floor(t.nanos / 1e9);
  return { seconds: t.seconds + carry, nanos: t.nanos - carry * 1e9 };
}

/** JSON for a decoded Time: `null` when zero; nanos are ignored (only whole seconds are kept). */
export function timeToJson(t: WireTimestamp | undefined): string | null {
  if (!t || t.seconds === GO_ZERO_TIME_SECONDS) return null;
  return `${utcDateTime(t.seconds)}Z`;
}

/** JSON for a decoded MicroTime: `null` when zero; nanos truncated to microseconds. */
export function microTimeToJson(t: WireTimestamp | undefined): string | null {
  if (!t) return null;
  const n = normalized(t);
  if (n.seconds === GO_ZERO_TIME_SECONDS && n.nanos === 0) return null;
  return `${utcDateTime(n.seconds)}.${pad(Math.floor(n.nanos / 1000), 6)}Z`;
}

const rfc3339Re = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Parses RFC 3339 (optional fraction, Z or ±hh:mm) into Unix seconds and nanos. */
export function parseRfc3339(text: string): WireTimestamp | undefined {
  const m = rfc3339Re.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day); // setUTCFullYear keeps years below 100 as given
  d.setUTCHours(hour, minute, second, 0);
  let seconds = d.getTime() / 1000;
  if (m[9]) seconds -= (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 3600 + Number(m[11]) * 60);
  const nanos = m[7] ? Number(m[7].padEnd(9, '0')) : 0;
  return { seconds, nanos };
}

/** Parsed times by text: objects repeat a few timestamps (creation, managed-fields times) many times. */
const parsed = new Map<string, WireTimestamp>();
const PARSED_LIMIT = 4096;

function parseCached(text: string): WireTimestamp | undefined {
  let t = parsed.get(text);
  if (t) return t;
  t = parseRfc3339(text);
  if (!t) return undefined;
  if (parsed.size >= PARSED_LIMIT) parsed.clear();
  parsed.set(text, t);
  return t;
}

function parseOrThrow(value: unknown, path: string): WireTimestamp | undefined {
  if (value === null) return undefined;
  if (typeof value !== 'string') throw new ProtobufEncodeError(`${path}: expected an RFC 3339 time string, got ${typeof value}`);
  const t = parseCached(value);
  if (!t) throw new ProtobufEncodeError(`${path}: ${JSON.stringify(value)} is not an RFC 3339 time`);
  return t.seconds === GO_ZERO_TIME_SECONDS && t.nanos === 0 ? undefined : t;
}

/** The protobuf form of a JSON Time: empty for null / the zero time, else whole seconds and nanos 0. */
export function timeFromJson(value: unknown, path: string): Partial<WireTimestamp> {
  const t = parseOrThrow(value, path);
  return t ? { seconds: t.seconds, nanos: 0 } : {};
}

/** The protobuf form of a JSON MicroTime: empty for null / the zero time, else nanos to the microsecond. */
export function microTimeFromJson(value: unknown, path: string): Partial<WireTimestamp> {
  const t = parseOrThrow(value, path);
  return t ? { seconds: t.seconds, nanos: Math.floor(t.nanos / 1000) * 1000 } : {};
}
