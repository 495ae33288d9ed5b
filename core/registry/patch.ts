/**
 * patch (PATCH): JSON patch, merge patch, strategic merge patch and server-side apply. Wired to the
 * merge library in core/merge (being built for the patch/apply issue); until then every patch type is
 * answered 415 with the accepted list empty.
 */
import { errors } from '../api/status.js';
import type { OpRequest, OpResult, RegistryContext } from './context.js';

export async function patch(_ctx: RegistryContext, req: OpRequest): Promise<OpResult> {
  throw errors.unsupportedMediaType(req.contentType, []);
}
