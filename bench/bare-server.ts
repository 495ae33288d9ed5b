/**
 * The baseline: a bare node:https server answering a fixed 1 KB JSON body, with the same TLS setup
 * (certificate from the generated CA) as the API server. Run as its own process by bench/run.ts.
 */
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, port] = process.argv.slice(2) as [string, string];
const body = Buffer.from(JSON.stringify({ kind: 'Fixed', data: 'x'.repeat(1000) }).slice(0, 1024));
const server = createServer({ cert: readFileSync(join(dir, 'apiserver.crt')), key: readFileSync(join(dir, 'apiserver.key')) }, (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
});
server.listen(Number(port), '127.0.0.1', () => console.log('serving on bare'));
