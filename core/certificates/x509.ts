/**
 * The X.509 pieces the certificates API needs: PEM blocks as Go's encoding/pem finds them, PKCS#10
 * certificate requests (subject, public key, requested subject alternative names) with their
 * self-signature checked as Go's CheckSignature does, and leaf certificates issued from a request by a
 * CA, as upstream's local signer issues them. The DER is read and written by PeculiarVentures' ASN.1
 * schemas (RFC 2986 and RFC 5280 as classes); keys, signing and verifying are node:crypto's (RSA,
 * ECDSA and Ed25519 alike: kubelets ask with ECDSA keys).
 */
import { createPublicKey, type KeyObject, randomBytes, sign as cryptoSign, verify as cryptoVerify, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { createRequire } from 'node:module';
import type { IAsnConvertible } from '@peculiar/asn1-schema';
import type { AlgorithmIdentifier, ExtendedKeyUsage, Extension, KeyUsage, Name, SubjectPublicKeyInfo, Time } from '@peculiar/asn1-x509';

// ---- PEM -------------------------------------------------------------------------------------------

export interface PemBlock {
  type: string;
  headers: Record<string, string>;
  bytes: Buffer;
}

const PEM_BLOCK = /-----BEGIN ([^\r\n-]*)-----\r?\n([\s\S]*?)-----END \1-----/g;
const BASE64_BODY = /^[A-Za-z0-9+/=\s]*$/;

/**
 * Every well-formed PEM block of `text`, in order (malformed ones are skipped, as Go's pem.Decode does).
 * Read here rather than by a library: the PEM readers at hand throw on the first malformed block or
 * read headers differently, and the API's answers depend on Go's rules.
 */
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

// ---- DER ----------------------------------------------------------------------------------------

export class DerError extends Error {}

/**
 * The ASN.1 libraries and the schemas built on them, loaded on first use: loading them costs a
 * process about 140 ms, paid at every start (and in every pool thread) for requests most servers
 * never see. They are CommonJS packages, so `require` loads them synchronously where they are needed.
 */
function loadDer() {
  const requireHere = createRequire(import.meta.url);
  const schema = requireHere('@peculiar/asn1-schema') as typeof import('@peculiar/asn1-schema');
  const x509 = requireHere('@peculiar/asn1-x509') as typeof import('@peculiar/asn1-x509');
  const csr = requireHere('@peculiar/asn1-csr') as typeof import('@peculiar/asn1-csr');
  const { fromBER } = requireHere('asn1js') as typeof import('asn1js');
  const { AsnProp } = schema;

  // Go copies a request's subject and key, and its CA's subject, into what it issues byte for byte
  // (RawSubject, RawSubjectPublicKeyInfo): these schemas keep the DER of those fields beside the parsed value.
  class RequestInfoDer extends csr.CertificationRequestInfo {
    declare subjectRaw?: ArrayBuffer;
    declare subjectPKInfoRaw?: ArrayBuffer;
  }
  AsnProp({ type: x509.Name, raw: true })(RequestInfoDer.prototype, 'subject');
  AsnProp({ type: x509.SubjectPublicKeyInfo, raw: true })(RequestInfoDer.prototype, 'subjectPKInfo');

  class RequestDer extends csr.CertificationRequest {
    declare certificationRequestInfo: RequestInfoDer;
  }
  AsnProp({ type: RequestInfoDer, raw: true })(RequestDer.prototype, 'certificationRequestInfo');

  class TbsCertificateDer extends x509.TBSCertificate {
    declare subjectRaw?: ArrayBuffer;
  }
  AsnProp({ type: x509.Name, raw: true })(TbsCertificateDer.prototype, 'subject');

  class CertificateDer extends x509.Certificate {
    declare tbsCertificate: TbsCertificateDer;
  }
  AsnProp({ type: TbsCertificateDer, raw: true })(CertificateDer.prototype, 'tbsCertificate');

  /** A field written as the DER it was read as (a Name copied from a request or a CA certificate). */
  class VerbatimDer implements IAsnConvertible {
    constructor(private readonly der: Buffer) {}
    toASN() {
      return schema.AsnAnyConverter.toASN(arrayBuffer(this.der));
    }
    fromASN(): this {
      throw new Error('VerbatimDer is written only');
    }
    toSchema(): never {
      throw new Error('VerbatimDer is written only');
    }
  }
  return { schema, x509, fromBER, RequestDer, CertificateDer, VerbatimDer };
}

let loadedDer: ReturnType<typeof loadDer> | undefined;
const der = (): ReturnType<typeof loadDer> => (loadedDer ??= loadDer());

const verbatim = <T>(bytes: Buffer): T => new (der().VerbatimDer)(bytes) as unknown as T;

const arrayBuffer = (b: Buffer): ArrayBuffer => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

/** The part of a request an error names, by the schema that could not read it (innermost first). */
const SCHEMA_PARTS: Readonly<Record<string, string>> = {
  AlgorithmIdentifier: 'signature algorithm',
  Name: 'subject',
  RelativeDistinguishedName: 'subject',
  AttributeTypeAndValue: 'subject',
  SubjectPublicKeyInfo: 'public key',
  Attribute: 'attribute',
  Extensions: 'extensions',
  Extension: 'extension',
  SubjectAlternativeName: 'subject alternative name',
  GeneralName: 'subject alternative name',
};

/** asn1js's reason for not reading an element, as Go's encoding/asn1 words it. */
function berError(reason: string, what: string): string {
  if (/end of input|zero (buffer )?length/i.test(reason)) return 'asn1: syntax error: data truncated';
  if (/length|too big/i.test(reason)) return 'asn1: syntax error: invalid length';
  return `x509: malformed ${what}`;
}

/** `der` read as one `target` (no trailing bytes), the library's errors worded as Go's asn1 and x509 word them. */
function parseDer<T>(bytes: Buffer, target: new () => T, what: string, whole = true): T {
  const { fromBER, schema } = der();
  const read = fromBER(arrayBuffer(bytes));
  if (read.offset === -1) throw new DerError(berError(read.result.error, what));
  // the outer element's type is checked before its length, as Go reads a tag before a length
  const { tagClass, tagNumber, isConstructed } = read.result.idBlock;
  if (tagClass !== 1 || tagNumber !== 16 || !isConstructed) throw new DerError(`x509: malformed ${what}`);
  if (whole && read.offset !== bytes.length) throw new DerError(`x509: trailing data after X.509 ${what}`);
  try {
    return schema.AsnParser.fromASN(read.result, target);
  } catch (e) {
    const part = e instanceof schema.AsnSchemaValidationError ? e.schemas.map((s) => SCHEMA_PARTS[s]).find(Boolean) : undefined;
    throw new DerError(`x509: malformed ${part ?? what}`);
  }
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

function nameParts(name: Name): { commonName: string; organizations: string[] } {
  let commonName = '';
  const organizations: string[] = [];
  for (const rdn of name) {
    for (const { type, value } of rdn) {
      // string values only (a value of another type is no name, as Go skips it)
      const text = value.utf8String ?? value.printableString ?? value.ia5String ?? value.teletexString ?? value.bmpString ?? value.universalString;
      if (text === undefined) continue;
      if (type === OID_CN) commonName = text;
      else if (type === OID_O) organizations.push(text);
    }
  }
  return { commonName, organizations };
}

/** The length of the address a GeneralName iPAddress held, from the library's text of it (4 and 16 bytes read as addresses). */
function ipLength(text: string): number {
  if (text.includes('/')) return text.includes(':') ? 32 : 8;
  return text.length / 2;
}

function addSubjectAltNames(value: Buffer, out: CertificateRequest): void {
  for (const n of parseDer(value, der().x509.SubjectAlternativeName, 'subject alternative name', false)) {
    if (n.rfc822Name !== undefined) out.emailAddresses.push(n.rfc822Name);
    else if (n.dNSName !== undefined) out.dnsNames.push(n.dNSName);
    else if (n.uniformResourceIdentifier !== undefined) out.uris.push(n.uniformResourceIdentifier);
    else if (n.iPAddress !== undefined) {
      if (!isIP(n.iPAddress)) throw new DerError(`x509: cannot parse IP address of length ${ipLength(n.iPAddress)}`);
      out.ipAddresses.push(n.iPAddress);
    }
  }
}

/** Reads a DER PKCS#10 request (x509.ParseCertificateRequest); the signature is not checked here. */
export function parseCertificateRequestDer(bytes: Buffer): CertificateRequest {
  const { schema, x509, RequestDer } = der();
  try {
    const csr = parseDer(bytes, RequestDer, 'certificate request');
    // the schemas read BER and let a mistagged field pass; Go reads DER only: written back, a request must be what was sent
    if (!Buffer.from(schema.AsnConvert.serialize(csr)).equals(bytes)) throw new DerError('x509: malformed certificate request');
    const info = csr.certificationRequestInfo;
    const out: CertificateRequest = {
      raw: bytes,
      rawInfo: Buffer.from(csr.certificationRequestInfoRaw!),
      rawSubject: Buffer.from(info.subjectRaw!),
      rawPublicKey: Buffer.from(info.subjectPKInfoRaw!),
      subject: nameParts(info.subject),
      dnsNames: [],
      ipAddresses: [],
      emailAddresses: [],
      uris: [],
      signatureAlgorithm: csr.signatureAlgorithm.algorithm,
      signature: Buffer.from(csr.signature),
    };
    for (const attr of info.attributes ?? []) {
      if (attr.type !== OID_EXTENSION_REQUEST) continue;
      for (const value of attr.values) {
        for (const ext of parseDer(Buffer.from(value), x509.Extensions, 'extensions', false)) {
          if (ext.extnID !== x509.id_ce_subjectAltName) continue;
          out.rawSubjectAltName = Buffer.from(ext.extnValue.buffer);
          addSubjectAltNames(out.rawSubjectAltName, out);
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

function keyUsageExtensions(usages: readonly string[]): { keyUsage?: KeyUsage; extKeyUsage?: ExtendedKeyUsage } {
  let bits = 0;
  const ext = new Set<string>();
  const unknown: string[] = [];
  for (const u of usages) {
    if (u in KEY_USAGE_BITS) bits |= 1 << KEY_USAGE_BITS[u]!;
    else if (u in EXT_KEY_USAGES) ext.add(EXT_KEY_USAGES[u]!);
    else unknown.push(u);
  }
  if (unknown.length) throw new Error(`unrecognized usage values: ${JSON.stringify(unknown.sort())}`);
  const { KeyUsage, ExtendedKeyUsage } = der().x509;
  return { ...(bits ? { keyUsage: new KeyUsage(bits) } : {}), ...(ext.size ? { extKeyUsage: new ExtendedKeyUsage([...ext].sort()) } : {}) };
}

function extension(extnID: string, critical: boolean, value: unknown): Extension {
  const { schema, x509 } = der();
  return new x509.Extension({ extnID, critical, extnValue: new schema.OctetString(schema.AsnConvert.serialize(value)) });
}

export interface SigningCA {
  cert: X509Certificate;
  key: import('node:crypto').KeyObject;
}

/** The CA certificate's subject (DER, the issuer of what it signs) and subject key identifier, when it has one. */
function issuerOf(cert: X509Certificate): { subject: Buffer; keyId?: Buffer } {
  const { schema, x509, CertificateDer } = der();
  const tbs = schema.AsnParser.parse(cert.raw, CertificateDer).tbsCertificate;
  const ski = tbs.extensions?.find((e) => e.extnID === x509.id_ce_subjectKeyIdentifier);
  return { subject: Buffer.from(tbs.subjectRaw!), ...(ski ? { keyId: Buffer.from(schema.AsnConvert.parse(ski.extnValue, x509.SubjectKeyIdentifier).buffer) } : {}) };
}

function signatureAlgorithmFor(key: KeyObject): { id: AlgorithmIdentifier; hash: string | null } {
  const { AlgorithmIdentifier } = der().x509;
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return { id: new AlgorithmIdentifier({ algorithm: '1.2.840.113549.1.1.11', parameters: null /* NULL, as RFC 4055 asks */ }), hash: 'sha256' };
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'secp384r1') return { id: new AlgorithmIdentifier({ algorithm: '1.2.840.10045.4.3.3' }), hash: 'sha384' };
      if (curve === 'secp521r1') return { id: new AlgorithmIdentifier({ algorithm: '1.2.840.10045.4.3.4' }), hash: 'sha512' };
      return { id: new AlgorithmIdentifier({ algorithm: '1.2.840.10045.4.3.2' }), hash: 'sha256' };
    }
    case 'ed25519':
      return { id: new AlgorithmIdentifier({ algorithm: '1.3.101.112' }), hash: null };
    default:
      throw new Error(`unsupported signing key type ${key.asymmetricKeyType}`);
  }
}

/** RFC 5280: UTCTime through 2049, GeneralizedTime before 1950 and from 2050; whole seconds. */
function time(d: Date): Time {
  const at = new Date(Math.floor(d.getTime() / 1000) * 1000);
  const year = at.getUTCFullYear();
  return new (der().x509.Time)(year >= 1950 && year < 2050 ? { utcTime: at } : { generalTime: at });
}

/** A positive serial of 127 random bits, its INTEGER minimally encoded. */
function randomSerial(): ArrayBuffer {
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  let i = 0;
  while (i < serial.length - 1 && serial[i] === 0 && serial[i + 1]! < 0x80) i++;
  return arrayBuffer(serial.subarray(i));
}

/**
 * A leaf certificate for the request, as upstream's local CA signs one: the request's subject, key and
 * subject alternative names; the given usages; basic constraints CA false; no other extension.
 */
export function issueCertificate(ca: SigningCA, req: CertificateRequest, o: { usages: readonly string[]; notBefore: Date; notAfter: Date }): Buffer {
  const { schema, x509 } = der();
  const { id_ce_keyUsage, id_ce_extKeyUsage, id_ce_basicConstraints, id_ce_authorityKeyIdentifier, id_ce_subjectAltName } = x509;
  const alg = signatureAlgorithmFor(ca.key);
  const { keyUsage, extKeyUsage } = keyUsageExtensions(o.usages);
  const issuer = issuerOf(ca.cert);
  const exts: Extension[] = [];
  if (keyUsage) exts.push(extension(id_ce_keyUsage, true, keyUsage));
  if (extKeyUsage) exts.push(extension(id_ce_extKeyUsage, false, extKeyUsage));
  exts.push(extension(id_ce_basicConstraints, true, new x509.BasicConstraints()));
  // as Go's CreateCertificate: the issuer's subject key identifier as the authority key identifier
  if (issuer.keyId) exts.push(extension(id_ce_authorityKeyIdentifier, false, new x509.AuthorityKeyIdentifier({ keyIdentifier: new x509.KeyIdentifier(issuer.keyId) })));
  // an empty subject makes the alternative names critical (RFC 5280 4.2.1.6)
  if (req.rawSubjectAltName) {
    const emptySubject = schema.AsnConvert.parse(req.rawSubject, x509.Name).length === 0;
    exts.push(new x509.Extension({ extnID: id_ce_subjectAltName, critical: emptySubject, extnValue: new schema.OctetString(req.rawSubjectAltName) }));
  }
  const tbs = new x509.TBSCertificate({
    version: x509.Version.v3,
    serialNumber: randomSerial(),
    signature: alg.id,
    issuer: verbatim<Name>(issuer.subject),
    validity: Object.assign(new x509.Validity(), { notBefore: time(o.notBefore), notAfter: time(o.notAfter) }),
    subject: verbatim<Name>(req.rawSubject),
    subjectPublicKeyInfo: verbatim<SubjectPublicKeyInfo>(req.rawPublicKey),
    extensions: new x509.Extensions(exts),
  });
  const signature = cryptoSign(alg.hash, Buffer.from(schema.AsnConvert.serialize(tbs)), ca.key);
  return Buffer.from(schema.AsnConvert.serialize(new x509.Certificate({ tbsCertificate: tbs, signatureAlgorithm: alg.id, signatureValue: arrayBuffer(signature) })));
}
