/**
 * CertificateSigningRequest calls for tests against a real server: the collection path, approval and
 * denial through the approval subresource (as kubectl writes them), waiting for the signer's answer,
 * and reading the issued certificate.
 */
import { X509Certificate } from 'node:crypto';
import type { Client, Response } from './client.js';
import { waitFor } from './wait.js';

export const CSRS = '/apis/certificates.svc.io/v1/certificatesigningrequests';
export const WHOAMI = '/apis/authentication.svc.io/v1/selfsubjectreviews';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export async function getCsr(c: Client, name: string): Promise<Json> {
  return (await c.get(`${CSRS}/${name}`)).json;
}

/** Adds an Approved (or Denied) condition through the approval subresource. */
export async function decide(c: Client, name: string, type: 'Approved' | 'Denied' = 'Approved'): Promise<Response> {
  const csr = await getCsr(c, name);
  csr.status ??= {};
  (csr.status.conditions ??= []).push({ type, status: 'True', reason: 'Test', message: `${type} by a test` });
  return c.request('PUT', `${CSRS}/${name}/approval`, { body: csr });
}

/** Waits until the request is issued or failed; returns it then (undefined on timeout). */
export async function settled(c: Client, name: string, ms = 10_000): Promise<Json | undefined> {
  let csr: Json;
  const ok = await waitFor(async () => {
    csr = await getCsr(c, name);
    return !!csr?.status?.certificate || (csr?.status?.conditions ?? []).some((x: Json) => x.type === 'Failed');
  }, ms);
  return ok ? csr : undefined;
}

/** The issued certificate (PEM) of a request. */
export const issuedPem = (csr: Json): string => Buffer.from(csr.status.certificate, 'base64').toString();
export const issuedCert = (csr: Json): X509Certificate => new X509Certificate(issuedPem(csr));

export const condition = (csr: Json, type: string): Json => (csr?.status?.conditions ?? []).find((c: Json) => c.type === type);
