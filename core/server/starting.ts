/**
 * What the listener answers before the API is assembled (the store is still being waited for): the
 * health endpoints report the checks registered so far (so /readyz says the store is not there yet),
 * and every other request is 503 with Retry-After, as nothing can be served yet.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Endpoint, Health } from '../health/health.js';

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

const HEALTH = /^\/(livez|readyz|healthz)(?:\/([^/?]+))?$/;

export function startingHandler(health: Health): (req: Req, res: Res) => void {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'https://starting');
    const m = HEALTH.exec(url.pathname);
    if (m && (req.method === 'GET' || req.method === 'HEAD')) {
      void health.run(m[1] as Endpoint, m[2] ?? '', url.searchParams).then(({ code, body }) => {
        res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache, private' });
        res.end(body);
      });
      return;
    }
    const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the server is starting: its store is not ready yet', reason: 'ServiceUnavailable', code: 503 };
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', 'cache-control': 'no-cache, private' });
    res.end(`${JSON.stringify(status)}\n`);
  };
}
