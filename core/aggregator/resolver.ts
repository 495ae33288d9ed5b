/**
 * Where an APIService's service reference leads, as upstream's resolvers: by default the service's
 * DNS name `<name>.<namespace>.svc:<port>`; with --enable-aggregator-routing an address of the core v1
 * Endpoints object of the same name. This server has no Service objects to map the service port to a
 * target port, so the Endpoints port is the one whose number is the reference's port, else the one
 * named `https`, else the only port.
 */
import type { ServiceReference } from '../registry/apiregistration/apiservices.js';
import type { Endpoints, EndpointPort } from '../registry/core/endpoints.js';
import type { DeepReadonly, Lister } from '../registry/lister.js';

export interface ResolvedService {
  /** host:port (an IPv6 host in brackets). */
  host: string;
  hostname: string;
  port: number;
  /** The name the extension server's certificate must carry: `<name>.<namespace>.svc`. */
  serverName: string;
}

/** Why a reference does not resolve: upstream's availability reason and message. */
export class ResolveError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

const serverNameOf = (ref: ServiceReference): string => `${ref.name}.${ref.namespace}.svc`;

function pickPort(ports: readonly DeepReadonly<EndpointPort>[], want: number): number | undefined {
  return (ports.find((p) => p.port === want) ?? ports.find((p) => p.name === 'https') ?? (ports.length === 1 ? ports[0] : undefined))?.port;
}

export class ServiceResolver {
  private next = 0;

  constructor(
    /** Endpoints when aggregator routing is on. */
    private readonly endpoints: Lister<Endpoints> | undefined,
  ) {}

  resolve(ref: ServiceReference): ResolvedService {
    const port = ref.port ?? 443;
    const serverName = serverNameOf(ref);
    if (!this.endpoints) return { host: `${serverName}:${port}`, hostname: serverName, port, serverName };
    const ep = this.endpoints.get(ref.namespace ?? '', ref.name ?? '');
    if (!ep) throw new ResolveError('MissingEndpoints', `cannot find endpoints for service/${ref.name} in ${JSON.stringify(ref.namespace)}`);
    const candidates: { ip: string; port: number }[] = [];
    for (const ss of ep.subsets ?? []) {
      const p = pickPort(ss.ports ?? [], port);
      if (p === undefined) continue;
      for (const a of ss.addresses ?? []) candidates.push({ ip: a.ip, port: p });
    }
    if (!candidates.length) throw new ResolveError('MissingEndpoints', `endpoints for service/${ref.name} in ${JSON.stringify(ref.namespace)} have no addresses with port name ""`);
    // upstream picks an address at random; round robin spreads the same way and is reproducible
    const c = candidates[this.next++ % candidates.length]!;
    const host = c.ip.includes(':') ? `[${c.ip}]:${c.port}` : `${c.ip}:${c.port}`;
    return { host, hostname: c.ip, port: c.port, serverName };
  }
}
