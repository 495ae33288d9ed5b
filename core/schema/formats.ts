/**
 * The OpenAPI string formats a custom resource schema may name, as upstream's list: each checks a
 * string value. A format outside the list is ignored (upstream strips it before validation), and
 * names are compared with dashes removed (`date-time` is `datetime`), as go-openapi normalizes them.
 */
import { isIP, isIPv4, isIPv6 } from 'node:net';

type Check = (v: string) => boolean;

const re = (r: RegExp): Check => (v) => r.test(v);

/** Letters, digits and symbols in hostname labels; labels of up to 63, a final label of letters. */
const HOSTNAME = /^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$/u;
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID3 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID4 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const UUID5 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const ISBN10 = /^(?:[0-9]{9}X|[0-9]{10})$/;
const ISBN13 = /^(?:[0-9]{13})$/;
const CREDITCARD = /^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$/;
const SSN = /^\d{3}[- ]?\d{2}[- ]?\d{4}$/;
const HEXCOLOR = /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const RGBCOLOR = /^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(:(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$/;
/** Go's time.ParseDuration units, or the Scala form (`3 seconds`) go-openapi also accepts. */
const GO_DURATION = /^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$/;
const SCALA_DURATION = /^\s*(\d+)\s*(ns|nano|nanos|nanosecond|nanoseconds|us|micro|micros|microsecond|microseconds|ms|milli|millis|millisecond|milliseconds|s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days|w|wk|wks|week|weeks)\s*$/;
const MAC = /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{2}[:-]){7}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{2}[:-]){19}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{4}\.){2}[0-9a-fA-F]{4}$|^([0-9a-fA-F]{4}\.){3}[0-9a-fA-F]{4}$|^([0-9a-fA-F]{4}\.){9}[0-9a-fA-F]{4}$/;

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

function isDate(v: string): boolean {
  const m = DATE.exec(v);
  return !!m && validDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

function isDateTime(v: string): boolean {
  const m = DATETIME.exec(v);
  if (!m || !validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return false;
  return Number(m[4]) < 24 && Number(m[5]) < 60 && (m[7] === undefined || Number(m[7]) < 60);
}

function isCIDR(v: string): boolean {
  const slash = v.indexOf('/');
  if (slash < 0) return false;
  const ip = v.slice(0, slash);
  const bits = v.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  const v4 = isIPv4(ip);
  if (!v4 && !isIPv6(ip)) return false;
  return Number(bits) <= (v4 ? 32 : 128);
}

function isURI(v: string): boolean {
  // an absolute URI, or an absolute path (Go's url.ParseRequestURI)
  if (v.startsWith('/')) return !/\s/.test(v);
  try {
    return /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(v) && !!new URL(v);
  } catch {
    return false;
  }
}

function isEmail(v: string): boolean {
  // an address with an optional display name (`Name <a@b>`), as Go's mail.ParseAddress reads one
  const m = /^(?:[^<>]*<([^<>]+)>|([^<>\s]+))$/.exec(v.trim());
  const addr = m?.[1] ?? m?.[2];
  return !!addr && /^[^@\s]+@[^@\s]+$/.test(addr);
}

function isISBN(v: string, kind: 10 | 13 | 0): boolean {
  const s = v.replace(/[\s-]/g, '');
  if ((kind === 10 || kind === 0) && ISBN10.test(s)) {
    let sum = 0;
    for (let i = 0; i < 9; i++) sum += (i + 1) * Number(s[i]);
    sum += s[9] === 'X' ? 100 : 10 * Number(s[9]);
    if (sum % 11 === 0) return true;
  }
  if ((kind === 13 || kind === 0) && ISBN13.test(s)) {
    let sum = 0;
    for (let i = 0; i < 12; i++) sum += Number(s[i]) * (i % 2 === 0 ? 1 : 3);
    return (10 - (sum % 10)) % 10 === Number(s[12]);
  }
  return false;
}

function isCreditCard(v: string): boolean {
  const s = v.replace(/[^0-9]/g, '');
  if (!CREDITCARD.test(s)) return false;
  // Luhn check digit
  let sum = 0;
  for (let i = 0; i < s.length; i++) {
    let d = Number(s[s.length - 1 - i]);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

const formats: Readonly<Record<string, Check>> = {
  bsonobjectid: re(/^[0-9a-fA-F]{24}$/),
  uri: isURI,
  email: isEmail,
  hostname: re(HOSTNAME),
  ipv4: (v) => isIP(v) !== 0 && v.includes('.'),
  ipv6: (v) => isIP(v) !== 0 && v.includes(':'),
  cidr: isCIDR,
  mac: re(MAC),
  uuid: re(UUID),
  uuid3: re(UUID3),
  uuid4: re(UUID4),
  uuid5: re(UUID5),
  isbn: (v) => isISBN(v, 0),
  isbn10: (v) => isISBN(v, 10),
  isbn13: (v) => isISBN(v, 13),
  creditcard: isCreditCard,
  ssn: re(SSN),
  hexcolor: re(HEXCOLOR),
  rgbcolor: re(RGBCOLOR),
  byte: (v) => BASE64.test(v.replace(/[\r\n]/g, '')),
  password: () => true,
  date: isDate,
  duration: (v) => GO_DURATION.test(v) || SCALA_DURATION.test(v) || v === '0',
  datetime: isDateTime,
};

/** The normalized name of a format this server checks, or undefined for one it ignores. */
export function supportedFormat(format: string): string | undefined {
  const n = format.replace(/-/g, '');
  return Object.hasOwn(formats, n) ? n : undefined;
}

/** Whether `value` is in `format`; formats outside the list accept anything. */
export function matchesFormat(format: string, value: string): boolean {
  const n = supportedFormat(format);
  return n === undefined || formats[n]!(value);
}
