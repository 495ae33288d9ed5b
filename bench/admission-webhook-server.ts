/**
 * An admission webhook for the admission bench: HTTPS with the API server's generated certificate,
 * offering HTTP/2 and HTTP/1.1 by ALPN as a Go webhook server does, allowing every review (its uid
 * echoed), as cheaply as a webhook can answer. Run as its own process so its work is not counted
 * against the load generator or the server.
 */
import { createSecureServer } from 'node:http2';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, port] = process.argv.slice(2) as [string, string];
const server = createSecureServer({ cert: readFileSync(join(dir, 'apiserver.crt')), key: readFileSync(join(dir, 'apiserver.key')), allowHTTP1: true }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { apiVersion?: string; request?: { uid?: string } };
    const body = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request?.uid, allowed: true } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(port), '127.0.0.1', () => console.log('serving admission webhook'));
