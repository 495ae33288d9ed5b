/**
 * The DER rules of the certificates API's request reader and certificate writer that x509.test.ts
 * leaves out, each checked against what Go does and, for what is written, read back by openssl:
 * requests are DER (no trailing bytes, no long lengths, no padding bits past 7), IP alternative names
 * are 4 or 16 bytes, subjects are read from every string type openssl writes; issued certificates copy
 * the CA's subject byte for byte as their issuer, mark the alternative names critical when the subject
 * is empty, write times as RFC 5280 asks (UTCTime from 1950 through 2049, whole seconds), name no
 * authority key when the CA has no subject key identifier, and carry positive, minimally encoded serials.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { issueCertificate, parseCertificateRequestDer, parseCertificateRequestPem, pemBlocks, toPem } from '../../core/certificates/x509.js';
import { ecCsr } from '../helpers/csr.js';
import { tmp } from '../helpers/fixtures.js';

const dir = tmp('x509-der-');
const openssl = (...args: string[]): string => execFileSync('openssl', args, { cwd: dir }).toString();
writeFileSync(join(dir, 'req.key'), generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
/** A request for req.key made by openssl with `args` (subject, extensions, a config file). */
const opensslRequest = (...args: string[]): string => openssl('req', '-new', '-key', 'req.key', ...args);
// openssl configurations whose string_mask makes it write BMPString or T61String names
writeFileSync(join(dir, 'bmp.cnf'), '[req]\ndistinguished_name=dn\nprompt=no\nstring_mask=MASK:0x800\nutf8=yes\n[dn]\nCN=b\u00e9mp\nO=org\n');
writeFileSync(join(dir, 't61.cnf'), '[req]\ndistinguished_name=dn\nprompt=no\nstring_mask=MASK:0x4\n[dn]\nCN=tele\nO=t61\n');
const derOf = (pem: string): Buffer => pemBlocks(pem)[0]!.bytes;

/** `der` with the bytes `from` replaced by `to` (as long), where they first occur. */
function splice(der: Buffer, from: number[], to: number[]): Buffer {
  const at = der.indexOf(Buffer.from(from));
  if (at < 0 || from.length !== to.length) throw new Error('splice: no such bytes');
  const out = Buffer.from(der);
  Buffer.from(to).copy(out, at);
  return out;
}

t.test('a request is read as DER, as Go reads it', async (t) => {
  const der = derOf(ecCsr({ cn: 'n', dns: ['n1.example'], ips: ['10.0.0.7'] }).pem);
  const ipOnly = derOf(ecCsr({ cn: 'n', ips: ['10.0.0.7'] }).pem);
  const longLength = Buffer.concat([Buffer.from([0x30, der[1]! + 1, 0x00]), der.subarray(2)]); // 30 8n LL.. as 30 8n+1 00 LL..
  const padding = Buffer.from(der);
  padding[der.length - parseCertificateRequestDer(der).signature.length - 1] = 0xff;
  const dnsThenIp = [0x82, 0x0a, ...Buffer.from('n1.example'), 0x87, 0x04, 10, 0, 0, 7];
  const rows: [string, Buffer, string][] = [
    ['a byte after the request', Buffer.concat([der, Buffer.from([0])]), 'x509: trailing data after X.509 certificate request'],
    ['a request cut short', der.subarray(0, der.length - 10), 'asn1: syntax error: data truncated'],
    ['nothing', Buffer.alloc(0), 'asn1: syntax error: data truncated'],
    ['no SEQUENCE', Buffer.from([0, 0, 0]), 'x509: malformed certificate request'],
    ['a length in more bytes than it needs (BER, not DER)', longLength, 'x509: malformed certificate request'],
    ['a signature BIT STRING with 255 padding bits', padding, 'x509: malformed certificate request'],
    ['an IP alternative name of 2 bytes', splice(ipOnly, [0x87, 0x04, 10, 0, 0, 7], [0x87, 0x02, 10, 0, 0x82, 0x00]), 'x509: cannot parse IP address of length 2'],
    ['an IP alternative name of 0 bytes', splice(ipOnly, [0x87, 0x04, 10, 0, 0, 7], [0x87, 0x00, 0x82, 0x02, 0x61, 0x62]), 'x509: cannot parse IP address of length 0'],
    ['an IP alternative name of 8 bytes', splice(der, dnsThenIp, [0x87, 0x08, 1, 2, 3, 4, 255, 255, 255, 0, 0x87, 0x06, 1, 2, 3, 4, 5, 6]), 'x509: cannot parse IP address of length 8'],
  ];
  t.ok(der[1] === 0x81 || der[1] === 0x82, 'the request has a long-form length');
  for (const [rule, input, want] of rows) t.throws(() => parseCertificateRequestDer(input), { message: want }, rule);
});

t.test('subjects and alternative names of every kind openssl writes', async (t) => {
  const rows: [string, string, { commonName: string; organizations: string[] }][] = [
    ['UTF8String, not ASCII', opensslRequest('-utf8', '-subj', '/CN=\u00e9t\u00e9/O=\u00fcber/O=plain'), { commonName: '\u00e9t\u00e9', organizations: ['\u00fcber', 'plain'] }],
    ['BMPString', opensslRequest('-config', 'bmp.cnf'), { commonName: 'b\u00e9mp', organizations: ['org'] }],
    ['T61String', opensslRequest('-config', 't61.cnf'), { commonName: 'tele', organizations: ['t61'] }],
    ['a multi-valued RDN', opensslRequest('-multivalue-rdn', '-subj', '/CN=m+O=mo/O=o2'), { commonName: 'm', organizations: ['mo', 'o2'] }],
    ['an empty subject', opensslRequest('-subj', '/', '-addext', 'subjectAltName=DNS:only.example'), { commonName: '', organizations: [] }],
  ];
  for (const [rule, pem, want] of rows) t.same(parseCertificateRequestPem(pem).subject, want, rule);
  const names = parseCertificateRequestPem(opensslRequest('-subj', '/CN=s', '-addext', 'subjectAltName=IP:2001:db8::1,IP:0:0:1::,email:x@y.z,URI:https://u/v,DNS:d,otherName:1.2.3.4;UTF8:other,RID:1.2.3'));
  t.same([names.ipAddresses, names.emailAddresses, names.uris, names.dnsNames], [['2001:db8::1', '0:0:1::'], ['x@y.z'], ['https://u/v'], ['d']], 'each kind in its list (IPv6 as RFC 5952 writes it), other kinds skipped');
  t.same(parseCertificateRequestPem(opensslRequest('-subj', '/CN=k', '-addext', 'keyUsage=digitalSignature')).dnsNames, [], 'requested extensions other than subjectAltName are no names');
});

/** A self-signed CA made by openssl, with `more` arguments to `openssl req`. */
function opensslCA(name: string, more: string[]): { pem: string; ca: { cert: X509Certificate; key: ReturnType<typeof createPrivateKey> } } {
  openssl('req', '-x509', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-addext', 'basicConstraints=critical,CA:TRUE', ...more);
  const pem = openssl('x509', '-in', `${name}.crt`);
  return { pem, ca: { cert: new X509Certificate(pem), key: createPrivateKey(openssl('pkey', '-in', `${name}.key`)) } };
}

/** What openssl reads in a certificate: its text, its ASN.1 dump, and `openssl verify` against the CA. */
function read(der: Buffer, caPem: string): { text: string; asn1: string; verify: string } {
  writeFileSync(join(dir, 'ca.pem'), caPem);
  writeFileSync(join(dir, 'leaf.pem'), toPem('CERTIFICATE', der));
  return { text: openssl('x509', '-in', 'leaf.pem', '-noout', '-text'), asn1: openssl('asn1parse', '-in', 'leaf.pem'), verify: openssl('verify', '-no_check_time', '-CAfile', 'ca.pem', 'leaf.pem').trim() };
}

t.test('issued certificates, as openssl reads them', async (t) => {
  const t61 = opensslCA('t61', ['-subj', '/CN=tele-ca/O=t61', '-config', join(dir, 't61.cnf')]);
  const noKeyId = opensslCA('noski', ['-subj', '/CN=no-key-id', '-addext', 'subjectKeyIdentifier=none', '-addext', 'authorityKeyIdentifier=none']);
  const named = parseCertificateRequestPem(ecCsr({ cn: 'n', dns: ['n.example'] }).pem);
  const unnamed = parseCertificateRequestPem(opensslRequest('-subj', '/', '-addext', 'subjectAltName=DNS:only.example'));
  const at = (y: number, mo: number, d: number, h: number, mi: number, s: number, ms = 0): Date => new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms));
  const usages = ['client auth'];

  const fromT61 = read(issueCertificate(t61.ca, named, { usages, notBefore: at(2049, 12, 31, 23, 59, 59, 999), notAfter: at(2050, 1, 1, 0, 0, 0) }), t61.pem);
  t.equal(fromT61.verify, 'leaf.pem: OK', 'a CA whose subject is T61String: the chain verifies');
  t.match(fromT61.asn1, /T61STRING\s*:tele-ca/, "the CA's subject copied as it is written (T61String), not rewritten as UTF8String");
  t.match(fromT61.asn1, /UTCTIME\s*:491231235959Z/, '2049 is UTCTime, the milliseconds dropped');
  t.match(fromT61.asn1, /GENERALIZEDTIME\s*:20500101000000Z/, '2050 is GeneralizedTime');
  t.match(fromT61.text, /X509v3 Subject Alternative Name: \n\s*DNS:n\.example/, 'alternative names beside a subject are not critical');

  const old = read(issueCertificate(noKeyId.ca, unnamed, { usages, notBefore: at(1949, 12, 31, 23, 59, 59), notAfter: at(1950, 1, 1, 0, 0, 0) }), noKeyId.pem);
  t.equal(old.verify, 'leaf.pem: OK', 'a CA without a subject key identifier: the chain verifies');
  t.notMatch(old.text, /Authority Key Identifier/, 'no authority key identifier when the CA has no subject key identifier');
  t.match(old.text, /X509v3 Subject Alternative Name: critical\s*DNS:only\.example/, 'alternative names of an empty subject are critical');
  t.match(old.asn1, /GENERALIZEDTIME\s*:19491231235959Z/, 'before 1950 is GeneralizedTime');
  t.match(old.asn1, /UTCTIME\s*:500101000000Z/, '1950 is UTCTime');

  // OpenSSL refuses an INTEGER with a needless leading zero byte; one serial in 128 starts with one
  let refused = 0;
  let negative = 0;
  for (let i = 0; i < 600; i++) {
    try {
      const serial = new X509Certificate(issueCertificate(noKeyId.ca, named, { usages, notBefore: new Date(), notAfter: new Date(Date.now() + 3600_000) })).serialNumber;
      if (parseInt(serial[0]!, 16) >= 8 && serial.length === 32) negative++;
    } catch {
      refused++;
    }
  }
  t.equal(refused, 0, 'serials are minimally encoded (600 certificates read by OpenSSL)');
  t.equal(negative, 0, 'serials are positive');
});
