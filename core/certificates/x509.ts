/**
 * The X.509 pieces the certificates API needs, read and written as DER directly: PEM blocks as Go's
 * encoding/pem finds them, PKCS#10 certificate requests (subject, public key, requested subject
 * alternative names) with their self-signature checked as Go's CheckSignature does, and leaf
 * certificates issued from a request by a CA, as upstream's local signer issues them. Keys are
 * node:crypto's (RSA, ECDSA, Ed25519 alike: node-forge reads RSA keys only, and kubelets ask with
 * ECDSA ones); certificates are read with node:crypto's X509Certificate.
 */
import { createPublicKey, type KeyObject, randomBytes, sign as cryptoSign, verify as cryptoVerify, X509Certificate } from 'node:crypto';

// ---- PEM -------------------------------------------------------------------------------------------

export interface PemBlock {
  type: string;
  headers: Record<string, string>;
  bytes: Buffer;
}

const PEM_BLOCK = /-----BEGIN ([^\r\n-]*)-----\r?\n([\s\S]*?)-----END \1-----/g;
const BASE64_BODY = /^[A-Za-z0-9+/=\s]*$/;

/** Every well-formed PEM block of `text`, in order (malformed ones are skipped, as Go's pem.Decode does). */
export function pemBlocks(text: string): PemBlock[] {
  const out: PemBlock[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) {
    let body = m[2]!;
    const headers: Record<string, string> = {};
    // RFC 1421 headers: `Key: value` lines ended by a blank line
    const blank = /\r?\n\r?\n/.exec(body);
    if (blank && body.slice(0, blank.index).split(/\r?\n/).every((l) => l.includes(':'))) {
      for (const line of body.slice(0, blank.index).split(/\r?\n/)) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      body = body.slice(blank.index + blank[0].length);
    }
    if (!BASE64_BODY.test(body)) continue;
    out.push({ type: m[1]!, headers, bytes: Buffer.from(body.replace(/\s+/g, ''), 'base64') });
  }
  return out;
}

export const toPem = (type: string, der: Buffer): string => `-----BEGIN ${type}-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${type}-----\n`;

// ---- DER -------------------------------------------------------------------------------------------

export class DerError extends Error {}

interface Tlv {
  tag: number;
  /** The whole element (header and content). */
  raw: Buffer;
  content: Buffer;
}

function readTlv(buf: Buffer, at: number): Tlv {
  if (at + 2 > buf.length) throw new DerError('asn1: syntax error: data truncated');
  const tag = buf[at]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('asn1: syntax error: high-tag-number form is not supported');
  let len = buf[at + 1]!;
  let header = 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || at + 2 + n > buf.length) throw new DerError('asn1: syntax error: invalid length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[at + 2 + i]!;
    header += n;
  }
  const end = at + header + len;
  if (end > buf.length) throw new DerError('asn1: syntax error: data truncated');
  return { tag, raw: buf.subarray(at, end), content: buf.subarray(at + header, end) };
}

function children(content: Buffer): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < content.length; ) {
    const t = readTlv(content, at);
    out.push(t);
    at += t.raw.length;
  }
  return out;
}

function expect(t: Tlv | undefined, tag: number, what: string): Tlv {
  if (!t || t.tag !== tag) throw new DerError(`x509: malformed ${what}`);
  return t;
}

function decodeOid(content: Buffer): string {
  const parts: number[] = [];
  let v = 0;
  for (const b of content) {
    v = v * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      if (!parts.length) parts.push(v < 80 ? Math.floor(v / 40) : 2, v < 80 ? v % 40 : v - 80);
      else parts.push(v);
      v = 0;
    }
  }
  return parts.join('.');
}

const STRING_TAGS = new Set([0x0c, 0x13, 0x16, 0x14, 0x1e, 0x1c, 0x12]);

function decodeString(t: Tlv): string {
  if (t.tag === 0x1e) {
    // BMPString: UTF-16BE
    const b = Buffer.from(t.content);
    return b.swap16().toString('utf16le');
  }
  return t.content.toString(t.tag === 0x0c ? 'utf8' : 'latin1');
}

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, content: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), len(content.length), content]);
const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const nullValue = (): Buffer => Buffer.from([0x05, 0x00]);

function oid(text: string): Buffer {
  const parts = text.split('.').map(Number);
  const bytes: number[] = [parts[0]! * 40 + parts[1]!];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A non-negative INTEGER from big-endian magnitude bytes. */
function unsignedInteger(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  const trimmed = b.subarray(i);
  return tlv(0x02, trimmed[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

function time(d: Date): Buffer {
  const iso = d.toISOString();
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const year = d.getUTCFullYear();
  // RFC 5280: UTCTime through 2049, GeneralizedTime from 2050
  return year >= 1950 && year < 2050 ? tlv(0x17, Buffer.from(digits.slice(2))) : tlv(0x18, Buffer.from(digits));
}

function bitString(bytes: Buffer, unusedBits = 0): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), bytes]));
}

// ---- certificate requests --------------------------------------------------------------------------

export interface CertificateRequest {
  /** The DER of the whole request. */
  raw: Buffer;
  /** The DER of the signed part (CertificationRequestInfo). */
  rawInfo: Buffer;
  /** The DER of the subject Name, copied into an issued certificate as is. */
  rawSubject: Buffer;
  /** The DER of the SubjectPublicKeyInfo. */
  rawPublicKey: Buffer;
  subject: { commonName: string; organizations: string[] };
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
  /** The requested subjectAltName extension's value (DER), when there is one. */
  rawSubjectAltName?: Buffer;
  signatureAlgorithm: string;
  signature: Buffer;
}

export class CertificateRequestError extends Error {}

const OID_CN = '2.5.4.3';
const OID_O = '2.5.4.10';
const OID_EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const OID_SAN = '2.5.29.17';

function parseName(name: Tlv): { commonName: string; organizations: string[] } {
  let commonName = '';
  const organizations: string[] = [];
  for (const rdn of children(name.content)) {
    for (const atv of children(rdn.content)) {
      const [type, value] = children(atv.content);
      if (!type || type.tag !== 0x06 || !value) throw new DerError('x509: malformed subject');
      const id = decodeOid(type.content);
      if (!STRING_TAGS.has(value.tag)) continue;
      if (id === OID_CN) commonName = decodeString(value);
      else if (id === OID_O) organizations.push(decodeString(value));
    }
  }
  return { commonName, organizations };
}

function ipText(b: Buffer): string {
  if (b.length === 4) return [...b].join('.');
  if (b.length === 16) {
    const groups: string[] = [];
    for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16));
    return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
  }
  throw new DerError(`x509: cannot parse IP address of length ${b.length}`);
}

function parseSubjectAltName(value: Buffer, out: CertificateRequest): void {
  const names = readTlv(value, 0);
  for (const n of children(expect(names, 0x30, 'subject alternative name').content)) {
    switch (n.tag) {
      case 0x81:
        out.emailAddresses.push(n.content.toString('latin1'));
        break;
      case 0x82:
        out.dnsNames.push(n.content.toString('latin1'));
        break;
      case 0x86:
        out.uris.push(n.content.toString('latin1'));
        break;
      case 0x87:
        out.ipAddresses.push(ipText(n.content));
        break;
    }
  }
}

/** Reads a DER PKCS#10 request (x509.ParseCertificateRequest); the signature is not checked here. */
export function parseCertificateRequestDer(der: Buffer): CertificateRequest {
  try {
    const outer = expect(readTlv(der, 0), 0x30, 'certificate request');
    if (outer.raw.length !== der.length) throw new DerError('x509: trailing data after X.509 certificate request');
    const [info, sigAlg, sig] = children(outer.content);
    expect(info, 0x30, 'certificate request');
    expect(sigAlg, 0x30, 'signature algorithm');
    expect(sig, 0x03, 'signature');
    const [version, subject, spki, attributes] = children(info!.content);
    expect(version, 0x02, 'version');
    expect(subject, 0x30, 'subject');
    expect(spki, 0x30, 'public key');
    const out: CertificateRequest = {
      raw: der,
      rawInfo: info!.raw,
      rawSubject: subject!.raw,
      rawPublicKey: spki!.raw,
      subject: parseName(subject!),
      dnsNames: [],
      ipAddresses: [],
      emailAddresses: [],
      uris: [],
      signatureAlgorithm: decodeOid(expect(children(sigAlg!.content)[0], 0x06, 'signature algorithm').content),
      signature: sig!.content.subarray(1),
    };
    if (attributes && attributes.tag === 0xa0) {
      for (const attr of children(attributes.content)) {
        const [type, values] = children(expect(attr, 0x30, 'attribute').content);
        if (!type || decodeOid(expect(type, 0x06, 'attribute').content) !== OID_EXTENSION_REQUEST || !values) continue;
        for (const exts of children(values.content)) {
          for (const ext of children(expect(exts, 0x30, 'extensions').content)) {
            const parts = children(expect(ext, 0x30, 'extension').content);
            const id = decodeOid(expect(parts[0], 0x06, 'extension').content);
            const value = expect(parts[parts.length - 1], 0x04, 'extension');
            if (id === OID_SAN) {
              out.rawSubjectAltName = Buffer.from(value.content);
              parseSubjectAltName(value.content, out);
            }
          }
        }
      }
    }
    return out;
  } catch (e) {
    if (e instanceof DerError) throw new CertificateRequestError(e.message);
    throw e;
  }
}

/** certificates.ParseCSR: the first PEM block must be a CERTIFICATE REQUEST that parses. */
export function parseCertificateRequestPem(pem: Buffer | string): CertificateRequest {
  const block = pemBlocks(typeof pem === 'string' ? pem : pem.toString('latin1'))[0];
  if (!block || block.type !== 'CERTIFICATE REQUEST') throw new CertificateRequestError('PEM block type must be CERTIFICATE REQUEST');
  return parseCertificateRequestDer(block.bytes);
}

interface SignatureAlgorithm {
  /** node:crypto's digest name (null: Ed25519 signs the message itself). */
  hash: string | null;
  key: 'rsa' | 'ec' | 'ed25519';
}

const SIGNATURE_ALGORITHMS: Readonly<Record<string, SignatureAlgorithm>> = {
  '1.2.840.113549.1.1.5': { hash: 'sha1', key: 'rsa' },
  '1.2.840.113549.1.1.11': { hash: 'sha256', key: 'rsa' },
  '1.2.840.113549.1.1.12': { hash: 'sha384', key: 'rsa' },
  '1.2.840.113549.1.1.13': { hash: 'sha512', key: 'rsa' },
  '1.2.840.10045.4.1': { hash: 'sha1', key: 'ec' },
  '1.2.840.10045.4.3.2': { hash: 'sha256', key: 'ec' },
  '1.2.840.10045.4.3.3': { hash: 'sha384', key: 'ec' },
  '1.2.840.10045.4.3.4': { hash: 'sha512', key: 'ec' },
  '1.3.101.112': { hash: null, key: 'ed25519' },
};

const KEY_NAMES: Record<string, string> = { rsa: 'RSA', ec: 'ECDSA', ed25519: 'Ed25519' };

export function publicKeyOf(req: CertificateRequest): KeyObject {
  try {
    return createPublicKey({ key: req.rawPublicKey, format: 'der', type: 'spki' });
  } catch {
    throw new CertificateRequestError('x509: unsupported public key type');
  }
}

/** x509.CertificateRequest.CheckSignature: the request is signed by the key it carries. */
export function checkRequestSignature(req: CertificateRequest): void {
  const alg = SIGNATURE_ALGORITHMS[req.signatureAlgorithm];
  if (!alg) throw new CertificateRequestError('x509: cannot verify signature: algorithm unimplemented');
  const key = publicKeyOf(req);
  const type = key.asymmetricKeyType ?? '';
  if (type !== alg.key) throw new CertificateRequestError(`x509: signature algorithm specifies an ${KEY_NAMES[alg.key]} public key, but have public key of type ${KEY_NAMES[type] ?? type}`);
  let ok = false;
  try {
    ok = cryptoVerify(alg.hash, req.rawInfo, key, req.signature);
  } catch {
    ok = false;
  }
  if (!ok) throw new CertificateRequestError(alg.key === 'rsa' ? 'crypto/rsa: verification error' : `x509: ${KEY_NAMES[alg.key]} verification failure`);
}

// ---- certificates ----------------------------------------------------------------------------------

/** The certificates of a PEM bundle, each block a CERTIFICATE without headers; Go's messages otherwise. */
export function validateCertificateBundle(text: string): string | undefined {
  const blocks = pemBlocks(text);
  for (const b of blocks) {
    if (b.type !== 'CERTIFICATE') return `only CERTIFICATE PEM blocks are allowed, found ${JSON.stringify(b.type)}`;
    if (Object.keys(b.headers).length) return 'no PEM block headers are permitted';
    try {
      new X509Certificate(b.bytes);
    } catch {
      return 'x509: malformed certificate';
    }
  }
  if (!blocks.length) return 'must contain at least one CERTIFICATE PEM block';
  return undefined;
}

/** The key usages a certificate may carry by name (upstream's keyUsageDict and extKeyUsageDict). */
const KEY_USAGE_BITS: Readonly<Record<string, number>> = {
  signing: 0,
  'digital signature': 0,
  'content commitment': 1,
  'key encipherment': 2,
  'data encipherment': 3,
  'key agreement': 4,
  'cert sign': 5,
  'crl sign': 6,
  'encipher only': 7,
  'decipher only': 8,
};

const EXT_KEY_USAGES: Readonly<Record<string, string>> = {
  any: '2.5.29.37.0',
  'server auth': '1.3.6.1.5.5.7.3.1',
  'client auth': '1.3.6.1.5.5.7.3.2',
  'code signing': '1.3.6.1.5.5.7.3.3',
  'email protection': '1.3.6.1.5.5.7.3.4',
  's/mime': '1.3.6.1.5.5.7.3.4',
  'ipsec end system': '1.3.6.1.5.5.7.3.5',
  'ipsec tunnel': '1.3.6.1.5.5.7.3.6',
  'ipsec user': '1.3.6.1.5.5.7.3.7',
  timestamping: '1.3.6.1.5.5.7.3.8',
  'ocsp signing': '1.3.6.1.5.5.7.3.9',
  'microsoft sgc': '1.3.6.1.4.1.311.10.3.3',
  'netscape sgc': '2.16.840.1.113730.4.1',
};

function keyUsageExtension(usages: readonly string[]): { keyUsage?: Buffer; extKeyUsage?: Buffer } {
  let bits = 0;
  const ext = new Set<string>();
  const unknown: string[] = [];
  for (const u of usages) {
    if (u in KEY_USAGE_BITS) bits |= 1 << KEY_USAGE_BITS[u]!;
    else if (u in EXT_KEY_USAGES) ext.add(EXT_KEY_USAGES[u]!);
    else unknown.push(u);
  }
  if (unknown.length) throw new Error(`unrecognized usage values: ${JSON.stringify(unknown.sort())}`);
  const out: { keyUsage?: Buffer; extKeyUsage?: Buffer } = {};
  if (bits) {
    // bit 0 is the high bit of the first byte; trailing zero bits are dropped (DER)
    const bytes = Buffer.from([0, 0]);
    let last = 0;
    for (let i = 0; i < 9; i++) {
      if (bits & (1 << i)) {
        bytes[i >> 3]! |= 0x80 >> (i & 7);
        last = i;
      }
    }
    const used = (last >> 3) + 1;
    out.keyUsage = bitString(bytes.subarray(0, used), 7 - (last & 7));
  }
  if (ext.size) out.extKeyUsage = seq(...[...ext].sort().map(oid));
  return out;
}

const extension = (id: string, critical: boolean, value: Buffer): Buffer => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

export interface SigningCA {
  cert: X509Certificate;
  key: import('node:crypto').KeyObject;
}

/** The parts of a certificate's TBSCertificate, the version's explicit tag skipped. */
function tbsParts(cert: X509Certificate): Tlv[] {
  const tbs = children(readTlv(cert.raw, 0).content)[0]!;
  const parts = children(tbs.content);
  return parts[0]!.tag === 0xa0 ? parts.slice(1) : parts;
}

/** The DER of the subject Name of a certificate (the issuer of what it signs). */
const subjectOf = (cert: X509Certificate): Buffer => tbsParts(cert)[4]!.raw;

/** The certificate's subject key identifier, when it has one (what an issued certificate names as its authority key). */
function subjectKeyIdOf(cert: X509Certificate): Buffer | undefined {
  const exts = tbsParts(cert).find((p) => p.tag === 0xa3);
  if (!exts) return undefined;
  for (const ext of children(readTlv(exts.content, 0).content)) {
    const parts = children(ext.content);
    if (decodeOid(parts[0]!.content) !== '2.5.29.14') continue;
    return Buffer.from(readTlv(parts[parts.length - 1]!.content, 0).content);
  }
  return undefined;
}

function signatureAlgorithmFor(key: KeyObject): { id: Buffer; hash: string | null } {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return { id: seq(oid('1.2.840.113549.1.1.11'), nullValue()), hash: 'sha256' };
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'secp384r1') return { id: seq(oid('1.2.840.10045.4.3.3')), hash: 'sha384' };
      if (curve === 'secp521r1') return { id: seq(oid('1.2.840.10045.4.3.4')), hash: 'sha512' };
      return { id: seq(oid('1.2.840.10045.4.3.2')), hash: 'sha256' };
    }
    case 'ed25519':
      return { id: seq(oid('1.3.101.112')), hash: null };
    default:
      throw new Error(`unsupported signing key type ${key.asymmetricKeyType}`);
  }
}

/**
 * A leaf certificate for the request, as upstream's local CA signs one: the request's subject, key and
 * subject alternative names; the given usages; basic constraints CA false; no other extension.
 */
export function issueCertificate(ca: SigningCA, req: CertificateRequest, o: { usages: readonly string[]; notBefore: Date; notAfter: Date }): Buffer {
  const alg = signatureAlgorithmFor(ca.key);
  const { keyUsage, extKeyUsage } = keyUsageExtension(o.usages);
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  const exts: Buffer[] = [];
  if (keyUsage) exts.push(extension('2.5.29.15', true, keyUsage));
  if (extKeyUsage) exts.push(extension('2.5.29.37', false, extKeyUsage));
  exts.push(extension('2.5.29.19', true, seq()));
  // as Go's CreateCertificate: the issuer's subject key identifier as the authority key identifier
  const authorityKeyId = subjectKeyIdOf(ca.cert);
  if (authorityKeyId) exts.push(extension('2.5.29.35', false, seq(tlv(0x80, authorityKeyId))));
  // an empty subject makes the alternative names critical (RFC 5280 4.2.1.6)
  const emptySubject = readTlv(req.rawSubject, 0).content.length === 0;
  if (req.rawSubjectAltName) exts.push(extension(OID_SAN, emptySubject, req.rawSubjectAltName));
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    unsignedInteger(serial),
    alg.id,
    subjectOf(ca.cert),
    seq(time(o.notBefore), time(o.notAfter)),
    req.rawSubject,
    req.rawPublicKey,
    tlv(0xa3, seq(...exts)),
  );
  const signature = cryptoSign(alg.hash, tbs, ca.key);
  return seq(tbs, alg.id, bitString(signature));
}
