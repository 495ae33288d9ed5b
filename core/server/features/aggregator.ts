/**
 * The aggregation layer (upstream's kube-aggregator in front of the API server): APIServices
 * (core/registry/apiregistration/), requests of remote group versions proxied to extension API
 * servers (core/aggregator/proxy.ts), Local APIServices registered for the served group versions
 * (autoregister.ts), their Available condition kept (availability.ts), discovery and OpenAPI merged
 * (documents.ts), and the ConfigMap svc-system/extension-apiserver-authentication published for
 * extension servers (authentication-configmap.ts). The controllers run in the process that does the
 * server's housekeeping; every process proxies, reading APIServices through its listers.
 */
import { randomUUID } from 'node:crypto';
import { rbacEnabled } from '../../authz/factory.js';
import { AuthenticationConfigMapPublisher, readerRoleObjects } from '../../aggregator/authentication-configmap.js';
import { aggregatorIdentity, AvailabilityController, availabilityMetrics } from '../../aggregator/availability.js';
import { AutoRegisterController } from '../../aggregator/autoregister.js';
import { RemoteDocuments } from '../../aggregator/documents.js';
import { AggregatedDiscoveryReader, DiscoveryUnavailableError } from '../../aggregator/discovery-reader.js';
import { AggregatorProxy } from '../../aggregator/proxy.js';
import { ServiceResolver } from '../../aggregator/resolver.js';
import { fetchFrom, HOP_HEADER, type IdentityHeaderNames, identityHeaders, readProxyClientCertificate, Transports } from '../../aggregator/transport.js';
import { StatusError } from '../../api/status.js';
import { CA_FILE_CHECK_MS, onClientCAChange } from '../../authn/dynamic-ca-file.js';
import { FollowedKeyPair } from '../followed-key-pair.js';
import { type APIService, isAvailable } from '../../registry/apiregistration/apiservices.js';
import type { Endpoints } from '../../registry/core/endpoints.js';
import type { DeepReadonly } from '../../registry/lister.js';
import type { Aggregation, ServerFeature } from '../feature.js';

const APISERVICES = 'apiregistration.svc.io/v1/apiservices';
const ENDPOINTS = '/v1/endpoints';
const CONFIGMAPS = '/v1/configmaps';
const RECHECK_MS = 30_000;

/** A JSON object, or undefined for anything else (an extension's document that is not one is left out). */
function parseObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(body.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function aggregatorFeature(): ServerFeature {
  let client: FollowedKeyPair | undefined;
  let aggregation: Aggregation | undefined;
  const stops: (() => void)[] = [];
  return {
    name: 'aggregator',
    configure(c) {
      const o = c.opts;
      const first = readProxyClientCertificate(o.proxyClientCertFile, o.proxyClientKeyFile);
      client = first && new FollowedKeyPair('proxy client certificate', first, { cert: o.proxyClientCertFile, key: o.proxyClientKeyFile });
    },
    async start(c) {
      const rt = c.types.get(APISERVICES);
      if (!rt) return;
      const o = c.opts;
      const apiServices = c.lister().for<APIService>(rt);
      const endpointsType = c.types.get(ENDPOINTS);
      const endpoints = o.enableAggregatorRouting && endpointsType ? c.lister().for<Endpoints>(endpointsType) : undefined;
      const resolver = new ServiceResolver(endpoints);
      const transports = new Transports(() => client);
      stops.push(() => transports.close());
      if (client) {
        const pair = client;
        stops.push(pair.onChange(() => transports.clientChanged()), () => pair.stop());
        pair.start(o.certificateFileCheckMs ?? CA_FILE_CHECK_MS);
      }
      const names: IdentityHeaderNames = {
        user: o.requestheaderUsernameHeaders[0]?.toLowerCase() ?? 'x-remote-user',
        uid: o.requestheaderUidHeaders[0]?.toLowerCase(),
        group: o.requestheaderGroupHeaders[0]?.toLowerCase() ?? 'x-remote-group',
        extraPrefix: o.requestheaderExtraHeadersPrefix[0]?.toLowerCase() ?? 'x-remote-extra-',
      };
      const instanceId = randomUUID();
      const documents = new RemoteDocuments(apiServices);
      let availability: AvailabilityController | undefined;
      const proxy = new AggregatorProxy({
        apiServices,
        resolver,
        transports,
        names,
        identityHeaderPrefixes: ['x-remote-', ...o.requestheaderUsernameHeaders, ...o.requestheaderUidHeaders, ...o.requestheaderGroupHeaders, ...o.requestheaderExtraHeadersPrefix].map((h) => h.toLowerCase()),
        instanceId,
        maxRequestBodyBytes: o.maxRequestBodyBytes,
        onBackendError: (name) => availability?.recheck(name),
      });
      aggregation = {
        intercept: (s) => proxy.intercept(s),
        get generation() {
          return documents.generation;
        },
        discovery: (d) => documents.mergeDiscovery(d),
        openApi: (d) => documents.mergeOpenApi(d),
      };
      const informers = c.lister().whenReady(rt);
      c.addPostStartHook('start-kube-aggregator-informers', informers);
      await informers;
      // the OpenAPI documents (v2 and v3) of a remote group version, each read once it passes a check
      const readOpenApi = async (a: DeepReadonly<APIService>): Promise<void> => {
        const name = a.metadata.name!;
        const wantsV2 = documents.wantsOpenApi(name, 'v2');
        if (!wantsV2 && !documents.wantsOpenApi(name, 'v3')) return;
        const target = resolver.resolve(a.spec.service!);
        const agent = transports.agentFor(a, target.serverName);
        const headers = [['accept', 'application/json'] as [string, string], ...identityHeaders(names, { username: 'system:kube-aggregator', groups: ['system:masters'] }), [HOP_HEADER, instanceId] as [string, string]];
        if (wantsV2) {
          // as upstream's downloader: the JSON form; an extension without one (404) is left out
          const v2 = await fetchFrom(agent, target, '/openapi/v2', headers, 5000);
          const doc = v2.status === 200 ? parseObject(v2.body) : undefined;
          if (doc) documents.swaggerRead(name, doc);
        }
        if (!documents.wantsOpenApi(name, 'v3')) return;
        const index = await fetchFrom(agent, target, '/openapi/v3', headers, 5000);
        if (index.status !== 200) return;
        const gv = `apis/${a.spec.group}/${a.spec.version}`;
        const url = (JSON.parse(index.body.toString('utf8')) as { paths?: Record<string, { serverRelativeURL?: string }> }).paths?.[gv]?.serverRelativeURL;
        if (!url) return;
        const doc = await fetchFrom(agent, target, url, headers, 5000);
        if (doc.status === 200) documents.openApiRead(name, JSON.parse(doc.body.toString('utf8')) as Record<string, unknown>);
      };
      // a remote group version's discovery: its aggregated discovery when it serves it, else the legacy
      // list the check read; then its OpenAPI. One update at a time per APIService, in the order of the checks.
      const reader = new AggregatedDiscoveryReader();
      const readAggregated = async (a: DeepReadonly<APIService>): Promise<Record<string, unknown>[] | undefined> => {
        const target = resolver.resolve(a.spec.service!);
        const agent = transports.agentFor(a, target.serverName);
        const as: [string, string][] = [...identityHeaders(names, { username: 'system:kube-aggregator', groups: ['system:masters'] }), [HOP_HEADER, instanceId]];
        return reader.read(a, (path, headers) => fetchFrom(agent, target, path, [...headers, ...as], 5000));
      };
      const discovering = new Map<string, Promise<void>>();
      const discover = (a: DeepReadonly<APIService>, body: Buffer | undefined): void => {
        const name = a.metadata.name!;
        const next = (discovering.get(name) ?? Promise.resolve()).then(async () => {
          let resources: Record<string, unknown>[] | undefined;
          let read = body;
          try {
            if (body) resources = await readAggregated(a);
          } catch (e) {
            // a 503: a failed read, what was read before goes Stale (any other failure: the legacy list)
            if (e instanceof DiscoveryUnavailableError) read = undefined;
          }
          // deleted meanwhile: nothing to add back
          if (!apiServices.get('', name)) return;
          documents.discovered(a, read, resources);
          if (body) await readOpenApi(a).catch((e: Error) => c.log.info(`aggregator: OpenAPI of ${name}: ${e.message}`, undefined, 2));
        });
        discovering.set(name, next);
        void next.finally(() => {
          if (discovering.get(name) === next) discovering.delete(name);
        });
      };
      if (!c.housekeeping) {
        // another acceptor: the controllers run in the first one; this one reads the remote documents itself
        const refresh = async (a: DeepReadonly<APIService>): Promise<void> => {
          if (!a.spec.service || !isAvailable(a as APIService)) return discover(a, undefined);
          const path = `/apis/${a.spec.group}/${a.spec.version}`;
          try {
            const target = resolver.resolve(a.spec.service);
            const headers = [['accept', 'application/json'] as [string, string], ...identityHeaders(names, { username: 'system:kube-aggregator', groups: ['system:masters'] }), [HOP_HEADER, instanceId] as [string, string]];
            const r = await fetchFrom(transports.agentFor(a, target.serverName), target, path, headers, 5000);
            discover(a, r.status >= 200 && r.status < 300 ? r.body : undefined);
          } catch {
            discover(a, undefined);
          }
        };
        const refreshAll = () => {
          for (const a of apiServices.list()) if (a.spec.service) void refresh(a);
        };
        stops.push(
          apiServices.onChange((ev) => {
            if (ev.type !== 'DELETED') return void refresh(ev.object);
            documents.forget(ev.object.metadata.name!);
            transports.drop(ev.object.metadata.name!);
            reader.retain(apiServices.list());
          }),
        );
        const timer = setInterval(refreshAll, o.aggregatorRecheckMs ?? RECHECK_MS);
        timer.unref();
        stops.push(() => clearInterval(timer));
        refreshAll();
        return;
      }
      const writer = c.client.as(aggregatorIdentity);
      availability = new AvailabilityController({
        client: writer,
        rt,
        apiServices,
        endpoints,
        resolver,
        transports,
        names,
        instanceId,
        recheckMs: o.aggregatorRecheckMs ?? RECHECK_MS,
        metrics: availabilityMetrics(c.metrics),
        onDiscovery: (name, body) => {
          const a = apiServices.get('', name);
          if (a) discover(a, body);
        },
        onDeleted: (name) => {
          documents.forget(name);
          transports.drop(name);
          reader.retain(apiServices.list());
        },
      });
      const autoregister = new AutoRegisterController(writer, rt, apiServices, c.types);
      stops.push(() => autoregister.stop(), () => availability?.stop());
      const registered = autoregister.start();
      c.addPostStartHook('apiservice-registration-controller', registered);
      c.addPostStartHook('kube-apiserver-autoregistration', registered);
      await registered;
      const settled = availability.start();
      c.addPostStartHook('apiservice-status-available-controller', settled);
      await settled;
      // the ConfigMap extension servers read to trust this server's proxy, and who may read it
      const cmType = c.types.get(CONFIGMAPS);
      if (cmType) {
        const publisher = new AuthenticationConfigMapPublisher(
          writer,
          cmType,
          c.lister().for(cmType),
          () => ({
            // the bundles client certificates are verified against now (--client-ca-file, or the generated CA)
            clientCA: c.clientCAs.client?.pem ?? '',
            requestHeaderCA: c.clientCAs.requestHeader?.pem ?? '',
            usernameHeaders: o.requestheaderUsernameHeaders,
            uidHeaders: o.requestheaderUidHeaders,
            groupHeaders: o.requestheaderGroupHeaders,
            extraHeaderPrefixes: o.requestheaderExtraHeadersPrefix,
            allowedNames: o.requestheaderAllowedNames,
          }),
        );
        stops.push(() => publisher.stop(), onClientCAChange(c.clientCAs, () => publisher.changed()));
        const published = publisher.start();
        c.addPostStartHook('start-cluster-authentication-info-controller', published);
        await published;
      }
      const roleType = c.types.get('rbac.authorization.svc.io/v1/roles');
      const bindingType = c.types.get('rbac.authorization.svc.io/v1/rolebindings');
      if (roleType && bindingType && rbacEnabled(o)) {
        const { role, binding } = readerRoleObjects('rbac.authorization.svc.io');
        for (const [t, obj] of [[roleType, role], [bindingType, binding]] as const) {
          if (c.lister().for(t).get(obj.metadata.namespace!, obj.metadata.name!)) continue;
          await writer.create(t, obj).catch((e: unknown) => {
            if (!(e instanceof StatusError && e.code === 409)) throw e;
          });
        }
      }
    },
    aggregation: () => aggregation,
    stop() {
      for (const fn of stops.splice(0).reverse()) fn();
    },
  };
}
