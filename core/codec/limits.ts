/**
 * How deep a request body may nest, checked while it is parsed so a hostile body is refused before
 * anything walks it recursively.
 *
 * JSON: upstream's decoders (Go's encoding/json and sigs.k8s.io/json) stop at 10000 nested arrays
 * and objects; so do we, with their message. Nothing in this server walks an unparsed value deeper
 * than its schema before typing drops or rejects what the schema does not know, and the raw-value
 * walks that run before typing (duplicate keys, patches, JSON equality and copies) keep their own
 * stacks, so 10000 levels fit on any thread.
 *
 * YAML: upstream's go-yaml also stops at 10000 (flow levels, and block indents). The yaml package
 * composes documents recursively, and a Node thread's stack holds only about 800 nested flow
 * collections (on the main thread, which serves writes with --workers=0), so YAML that is not JSON
 * stops at MAX_YAML_DEPTH, with go-yaml's message naming that limit.
 */

/** Nested arrays and objects a JSON body may hold (Go's maxNestingDepth). */
export const MAX_JSON_DEPTH = 10000;

/** Nested collections a YAML body may hold before the yaml package composes it. */
export const MAX_YAML_DEPTH = 500;

/**
 * Tokens a YAML body (one that is not JSON) may hold. The yaml package spends microseconds per token
 * (a 3 MiB body of short tokens takes tens of seconds of a worker), so YAML is bounded by what it
 * costs rather than by its bytes alone: 100,000 tokens is a YAML document of several hundred KB
 * (a ConfigMap with some 15,000 entries) and a few hundred milliseconds. Larger objects go as JSON,
 * which parses natively at any size up to the body limit. Upstream has no such limit (go-yaml is
 * faster); this one keeps a hostile YAML body from holding a worker for seconds.
 */
export const MAX_YAML_TOKENS = 100_000;
