/**
 * grpc.health.v1.Health: SERVING exactly when /readyz answers 200, for the server as a whole ("")
 * and for svc.api.v1.Resources; other names are unknown (NOT_FOUND for Check, SERVICE_UNKNOWN for
 * Watch, as the protocol says). Watch sends the status, then each change, found by asking /readyz
 * once a second while anyone watches.
 */
import { status as Code, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Health } from '../health/health.js';
import { RESOURCES_SERVICE } from './proto.js';

const SERVING = 'SERVING';
const NOT_SERVING = 'NOT_SERVING';
const SERVICE_UNKNOWN = 'SERVICE_UNKNOWN';
const POLL_MS = 1000;

interface CheckRequest {
  service: string;
}
interface CheckResponse {
  status: string;
}

const known = (service: string): boolean => service === '' || service === RESOURCES_SERVICE;

export function healthService(health: Health): UntypedServiceImplementation {
  const current = async (): Promise<string> => ((await health.run('readyz', '', new URLSearchParams())).code === 200 ? SERVING : NOT_SERVING);
  return {
    Check(call: ServerUnaryCall<CheckRequest, CheckResponse>, callback: sendUnaryData<CheckResponse>) {
      if (!known(call.request.service)) return callback({ code: Code.NOT_FOUND, details: `unknown service ${JSON.stringify(call.request.service)}` });
      current().then((status) => callback(null, { status }), (e: Error) => callback({ code: Code.INTERNAL, details: e.message }));
    },
    Watch(call: ServerWritableStream<CheckRequest, CheckResponse>) {
      if (!known(call.request.service)) {
        call.write({ status: SERVICE_UNKNOWN });
        return;
      }
      let last = '';
      let timer: NodeJS.Timeout | undefined;
      const tick = async (): Promise<void> => {
        const status = await current().catch(() => NOT_SERVING);
        if (call.cancelled || call.writableEnded) return;
        if (status !== last) call.write({ status: (last = status) });
        timer = setTimeout(() => void tick(), POLL_MS);
      };
      const stop = (): void => clearTimeout(timer);
      call.once('cancelled', stop);
      call.once('close', stop);
      void tick();
    },
  };
}
