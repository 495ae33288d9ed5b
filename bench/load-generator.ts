/**
 * An autocannon load in a process of its own (`node dist/bench/load-generator.js '<options JSON>'`):
 * a flood that would otherwise share the bench's event loop with the requests it measures. Prints
 * the answers by status code, errors and timeouts as one JSON line.
 */
import autocannon from 'autocannon';

const opts = JSON.parse(process.argv[2] ?? '{}') as autocannon.Options;
const r = await autocannon(opts);
const codes = r.statusCodeStats as unknown as Record<string, { count: number }>;
process.stdout.write(`${JSON.stringify({ codes: Object.fromEntries(Object.entries(codes).map(([k, v]) => [k, v.count])), errors: r.errors, timeouts: r.timeouts })}\n`);
