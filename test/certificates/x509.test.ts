/**
 * The DER layer of the certificates API checked against an independent implementation (the openssl
 * command): requests of every key type parse and verify; certificates issued by CAs of every key
 * type (RSA, ECDSA P-256 and P-384, Ed25519) verify under `openssl verify`, carry the request's
 * subject, key and alternative names, the usages asked (key usage bits and extended key usages as
 * openssl reads them), CA false, and the validity given; PEM blocks are found as Go finds them.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { checkRequestSignature, issueCertificate, parseCertificateRequestPem, pemBlocks, toPem } from '../../core/certificates/x509.js';
import { ecCsr, rsaCsr } from '../helpers/csr.js';
import { tmp } from '../helpers/fixtures.js';
import { makeCA } from '../helpers/pki.js';

const dir = tmp('x509-');
const openssl = (...args: string[]): string => execFileSync('openssl', args, { cwd: dir }).toString();

/** A self-signed CA made by openssl with a key of `newkey` (e.g. `ec -pkeyopt ec_paramgen_curve:P-256`). */
function opensslCA(name: string, keyArgs: string[]): { cert: string; key: string } {
  openssl('req', '-x509', '-nodes', ...keyArgs, '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  return { cert: openssl('x509', '-in', `${name}.crt`), key: execFileSync('cat', [join(dir, `${name}.key`)]).toString() };
}

t.test('requests of every key type parse and verify', async (t) => {
  for (const [rule, made] of [
    ['RSA (node-forge)', rsaCsr({ cn: 'a', orgs: ['o1', 'o2'], dns: ['a.example'], ips: ['10.1.2.3', '::1'], emails: ['a@example.com'], uris: ['spiffe://x/y'] })],
    ['ECDSA P-256 (openssl)', ecCsr({ cn: 'a', orgs: ['o1', 'o2'], dns: ['a.example'], ips: ['10.1.2.3'] })],
    ['Ed25519 (openssl)', ecCsr({ cn: 'a', orgs: ['o1', 'o2'] }, 'ed25519')],
  ] as const) {
    const req = parseCertificateRequestPem(made.pem);
    t.doesNotThrow(() => checkRequestSignature(req), `${rule}: verifies`);
    t.same(req.subject, { commonName: 'a', organizations: ['o1', 'o2'] }, `${rule}: subject`);
  }
  const full = parseCertificateRequestPem(rsaCsr({ cn: 'a', dns: ['a.example'], ips: ['10.1.2.3', '::1'], emails: ['a@example.com'], uris: ['spiffe://x/y'] }).pem);
  t.same([full.dnsNames, full.ipAddresses, full.emailAddresses, full.uris], [['a.example'], ['10.1.2.3', '::1'], ['a@example.com'], ['spiffe://x/y']], 'alternative names');
});

t.test('certificates issued by CAs of every key type verify under openssl', async (t) => {
  const rsa = makeCA('rsa-ca');
  const cas: [string, { cert: string; key: string }][] = [
    ['RSA', rsa],
    ['ECDSA P-256', opensslCA('ec256', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'])],
    ['ECDSA P-384', opensslCA('ec384', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384'])],
    ['Ed25519', opensslCA('ed', ['-newkey', 'ed25519'])],
  ];
  const made = ecCsr({ cn: 'system:node:n1', orgs: ['system:nodes'], dns: ['n1.example'], ips: ['10.0.0.7'] });
  const req = parseCertificateRequestPem(made.pem);
  const notBefore = new Date(Date.UTC(2026, 0, 1, 0, 0, 0));
  const notAfter = new Date(Date.UTC(2060, 0, 1, 0, 0, 0)); // past 2049: GeneralizedTime
  for (const [rule, ca] of cas) {
    const der = issueCertificate({ cert: new X509Certificate(ca.cert), key: createPrivateKey(ca.key) }, req, { usages: ['digital signature', 'key encipherment', 'server auth', 'client auth'], notBefore, notAfter });
    const pem = toPem('CERTIFICATE', der);
    writeFileSync(join(dir, 'ca.pem'), ca.cert);
    writeFileSync(join(dir, 'leaf.pem'), pem);
    t.equal(openssl('verify', '-no_check_time', '-CAfile', 'ca.pem', 'leaf.pem').trim(), 'leaf.pem: OK', `${rule}: openssl verify`);
    const text = openssl('x509', '-in', 'leaf.pem', '-noout', '-text');
    t.match(text, /Subject: O\s*=\s*system:nodes, CN\s*=\s*system:node:n1/, `${rule}: the request's subject`);
    t.match(text, /X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment/, `${rule}: key usage bits`);
    t.match(text, /X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication/, `${rule}: extended key usages`);
    t.match(text, /X509v3 Basic Constraints: critical\s+CA:FALSE/, `${rule}: not a CA`);
    t.match(text, /DNS:n1\.example, IP Address:10\.0\.0\.7/, `${rule}: the request's alternative names`);
    const caKeyId = /X509v3 Subject Key Identifier:\s+([0-9A-F:]+)/.exec(openssl('x509', '-in', 'ca.pem', '-noout', '-text'))?.[1];
    if (caKeyId) t.match(text, new RegExp(`X509v3 Authority Key Identifier:\\s+(keyid:)?${caKeyId}`), `${rule}: the CA's key identifier as the authority's`);
    const cert = new X509Certificate(pem);
    t.equal(new Date(cert.validFrom).toISOString(), notBefore.toISOString(), `${rule}: notBefore`);
    t.equal(new Date(cert.validTo).toISOString(), notAfter.toISOString(), `${rule}: notAfter`);
    t.ok(cert.publicKey.export({ type: 'spki', format: 'der' }).equals(req.rawPublicKey), `${rule}: the request's key`);
  }
  const signing = issueCertificate({ cert: new X509Certificate(rsa.cert), key: createPrivateKey(rsa.key) }, req, { usages: ['cert sign', 'crl sign', 'decipher only'], notBefore, notAfter });
  writeFileSync(join(dir, 'bits.pem'), toPem('CERTIFICATE', signing));
  t.match(openssl('x509', '-in', 'bits.pem', '-noout', '-text'), /Certificate Sign, CRL Sign, Decipher Only/, 'bits past the first byte');
  t.throws(() => issueCertificate({ cert: new X509Certificate(rsa.cert), key: createPrivateKey(rsa.key) }, req, { usages: ['flying'], notBefore, notAfter }), /unrecognized usage values: \["flying"\]/);
});

t.test('PEM blocks as Go finds them', async (t) => {
  const one = toPem('CERTIFICATE', Buffer.from('abc'));
  t.same(pemBlocks(`preamble\n${one}between\n${one}`).map((b) => b.bytes.toString()), ['abc', 'abc'], 'text around blocks is skipped');
  t.same(pemBlocks('-----BEGIN CERTIFICATE-----\nnot*base64\n-----END CERTIFICATE-----\n'), [], 'a block that is no base64 is skipped');
  t.same(pemBlocks('-----BEGIN X-----\nK: v\n\nYWJj\n-----END X-----\n')[0]?.headers, { K: 'v' }, 'headers');
  t.same(pemBlocks('-----BEGIN X-----\nYWJj\n-----END Y-----\n'), [], 'mismatched END');
});
