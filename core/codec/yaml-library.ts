/**
 * The yaml package, loaded on first use rather than at import: it costs every process (each pool
 * thread too) 20-60 ms of its start, for a media type and config format most requests never use.
 */
import { createRequire } from 'node:module';

type Yaml = typeof import('yaml');
let loaded: Yaml | undefined;

export const yamlLibrary = (): Yaml => (loaded ??= createRequire(import.meta.url)('yaml') as Yaml);
