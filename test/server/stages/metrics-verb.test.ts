import t from 'tap';
import { requestInfoFor } from '../../../core/request/request-info.js';
import { reportedVerb } from '../../../core/server/stages/metrics.js';

const scope = (method: string, path: string, contentType?: string) => ({
  method,
  info: requestInfoFor(method, path, new URLSearchParams()),
  headers: contentType ? { 'content-type': contentType } : {},
});

t.test("the verb label of a PATCH is APPLY only for exactly the apply Content-Type, as upstream's cleanVerb compares it", async (t) => {
  const cm = '/api/v1/namespaces/a/configmaps/x';
  const rows: [string | undefined, string][] = [
    ['application/apply-patch+yaml', 'APPLY'],
    ['application/apply-patch+yaml; charset=utf-8', 'PATCH'],
    ['application/apply-patch+yamlx', 'PATCH'],
    ['application/merge-patch+json', 'PATCH'],
    [undefined, 'PATCH'],
  ];
  for (const [ct, want] of rows) t.equal(reportedVerb(scope('PATCH', cm, ct) as never), want, String(ct));
});
