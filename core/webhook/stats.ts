/**
 * Calls the server made to webhooks, by host, method and code (`<error>` for a network error,
 * `<timeout>` for a deadline), read by the metrics endpoint as upstream's rest_client_requests_total.
 * Plain numbers bumped in place.
 */
const calls = new Map<string, number>();

export function countWebhookCall(host: string, method: string, code: string): void {
  const key = `${code}\u0000${host}\u0000${method}`;
  calls.set(key, (calls.get(key) ?? 0) + 1);
}

/** [code, host, method, count] of every call made so far. */
export function* webhookCalls(): Iterable<[string, string, string, number]> {
  for (const [key, n] of calls) {
    const [code, host, method] = key.split('\u0000') as [string, string, string];
    yield [code, host, method, n];
  }
}
