/**
 * Calls the server made to webhooks, by host, method and code (`<error>` for a network error,
 * `<timeout>` for a deadline), read by the metrics endpoint as upstream's rest_client_requests_total;
 * their durations go to whoever observes them (the metrics: rest_client_request_duration_seconds).
 * Plain numbers bumped in place.
 */
const calls = new Map<string, number>();

/** Observers of each call's duration by host and method (the server's metrics add one). */
export const webhookCallObservers = new Set<(host: string, method: string, seconds: number) => void>();

export function countWebhookCall(host: string, method: string, code: string, seconds: number): void {
  const key = `${code}\u0000${host}\u0000${method}`;
  calls.set(key, (calls.get(key) ?? 0) + 1);
  for (const observe of webhookCallObservers) observe(host, method, seconds);
}

/** [code, host, method, count] of every call made so far. */
export function* webhookCalls(): Iterable<[string, string, string, number]> {
  for (const [key, n] of calls) {
    const [code, host, method] = key.split('\u0000') as [string, string, string];
    yield [code, host, method, n];
  }
}
