/**
 * Conversion by webhook against a real HTTPS webhook the test starts (trusted through the
 * definition's caBundle): objects written in one version are stored in the storage version and read
 * in any served version, each conversion a ConversionReview (a converted object version is kept
 * with the cached object, so it is converted once); a webhook that answers garbage or a failure makes
 * reads that need it and writes in the other version a 500 naming the webhook, with nothing stored;
 * one that does not answer fails the request within the 30 s webhook timeout; the server keeps serving.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import t from 'tap';
import { createCrd, widgetSchema } from '../helpers/crd.js';
import { sharedLoopbackPki } from '../helpers/pki.js';
import { startServer, type TestServer } from '../helpers/server.js';

type Json = Record<string, unknown>;
type Mode = 'convert' | 'garbage' | 'failure' | 'hang';

/** v1 has spec.color, v2 spells it spec.colour; everything else is the same. */
function convert(o: Json, to: string): Json {
  const spec = { ...(o.spec as Json | undefined) };
  if (to === 'example.com/v2' && 'color' in spec) {
    spec.colour = spec.color;
    delete spec.color;
  }
  if (to === 'example.com/v1' && 'colour' in spec) {
    spec.color = spec.colour;
    delete spec.colour;
  }
  return { ...o, apiVersion: to, spec };
}

class ConversionWebhook {
  mode: Mode = 'convert';
  readonly reviews: Json[] = [];
  url = '';
  private server!: Server;
  private readonly sockets = new Set<Socket>();

  static async start(): Promise<ConversionWebhook> {
    const w = new ConversionWebhook();
    const { serving } = sharedLoopbackPki();
    w.server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => w.handle(req, res));
    w.server.on('connection', (s: Socket) => {
      w.sockets.add(s);
      s.on('close', () => w.sockets.delete(s));
    });
    await new Promise<void>((r) => w.server.listen(0, '127.0.0.1', r));
    w.url = `https://127.0.0.1:${(w.server.address() as { port: number }).port}/convert`;
    return w;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
      this.reviews.push(review);
      const request = review.request as { uid: string; desiredAPIVersion: string; objects: Json[] };
      if (this.mode === 'hang') return;
      res.setHeader('content-type', 'application/json');
      if (this.mode === 'garbage') return void res.end('{"kind": not json');
      const response =
        this.mode === 'failure'
          ? { uid: request.uid, result: { status: 'Failure', message: 'colour is not a colour' } }
          : { uid: request.uid, result: { status: 'Success' }, convertedObjects: request.objects.map((o) => convert(o, request.desiredAPIVersion)) };
      res.end(JSON.stringify({ kind: 'ConversionReview', apiVersion: review.apiVersion, response }));
    });
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

let s: TestServer;
let hook: ConversionWebhook;
const V1 = '/apis/example.com/v1/namespaces/default/widgets';
const V2 = '/apis/example.com/v2/namespaces/default/widgets';

t.before(async () => {
  hook = await ConversionWebhook.start();
  s = await startServer();
  const props = (widgetSchema.properties.spec as { properties: Json }).properties;
  const { color, ...rest } = props;
  const v2Schema = { ...widgetSchema, properties: { ...widgetSchema.properties, spec: { type: 'object', properties: { ...rest, colour: color } } } };
  await createCrd(s.admin, {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
      scope: 'Namespaced',
      versions: [
        { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: widgetSchema } },
        { name: 'v2', served: true, storage: false, schema: { openAPIV3Schema: v2Schema } },
      ],
      conversion: {
        strategy: 'Webhook',
        webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: hook.url, caBundle: Buffer.from(sharedLoopbackPki().ca.cert).toString('base64') } },
      },
    },
  });
});
t.teardown(async () => {
  await s?.stop();
  await hook?.stop();
});

t.test('written in v2, stored in v1, read in either: each conversion is a ConversionReview to the webhook', async (t) => {
  hook.mode = 'convert';
  const created = await s.admin.post(V2, { apiVersion: 'example.com/v2', kind: 'Widget', metadata: { name: 'w2' }, spec: { size: 2, colour: 'blue' } });
  t.equal(created.status, 201, created.text);
  t.match(created.json, { apiVersion: 'example.com/v2', spec: { size: 2, colour: 'blue' } }, 'answered in the version written');
  t.match((await s.admin.get(`${V1}/w2`)).json, { apiVersion: 'example.com/v1', spec: { size: 2, color: 'blue' } }, 'stored as v1');
  t.match((await s.admin.get(`${V2}/w2`)).json, { apiVersion: 'example.com/v2', spec: { colour: 'blue' } });
  const list = await s.admin.get(V2);
  t.same(list.json.items.map((i: Json) => (i.spec as Json).colour), ['blue'], 'lists are converted too');
  const review = hook.reviews.at(-1)!;
  t.match(review, { kind: 'ConversionReview', apiVersion: 'apiextensions.svc.io/v1', request: { desiredAPIVersion: 'example.com/v2' } });
  t.match((review.request as { uid: string }).uid, /^[0-9a-f-]{36}$/);
});

for (const [mode, message] of [
  ['garbage', /conversion webhook for example\.com\/v\d, Kind=Widget failed: unable to decode the response/],
  ['failure', /conversion webhook for example\.com\/v\d, Kind=Widget failed: colour is not a colour/],
] as const) {
  t.test(`a webhook that answers ${mode}: 500 naming the webhook for reads and writes in v2, nothing stored, v1 still served`, async (t) => {
    // written in the storage version (no conversion), so its first read in v2 needs the webhook
    hook.mode = 'convert';
    t.equal((await s.admin.post(V1, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: `fresh-${mode}` }, spec: { size: 1, color: 'red' } })).status, 201);
    hook.mode = mode;
    const read = await s.admin.get(`${V2}/fresh-${mode}`);
    t.equal(read.status, 500, read.text);
    t.match(read.json.message, message);
    const write = await s.admin.post(V2, { apiVersion: 'example.com/v2', kind: 'Widget', metadata: { name: `bad-${mode}` }, spec: { size: 1 } });
    t.equal(write.status, 500, write.text);
    t.equal((await s.admin.get(`${V1}/bad-${mode}`)).status, 404, 'nothing stored');
    t.equal((await s.admin.get(`${V1}/w2`)).status, 200, 'the storage version needs no webhook');
  });
}

t.test('a webhook that does not answer fails the request within its timeout; the server keeps serving', async (t) => {
  t.equal((await s.admin.post(V1, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'fresh-hang' }, spec: { size: 1 } })).status, 201);
  hook.mode = 'hang';
  const read = await s.admin.get(`${V2}/fresh-hang`);
  t.equal(read.status, 500, read.text);
  t.match(read.json.message, /context deadline exceeded/);
  hook.mode = 'convert';
  t.equal((await s.admin.get(`${V2}/fresh-hang`)).status, 200, 'served again once the webhook answers');
});
