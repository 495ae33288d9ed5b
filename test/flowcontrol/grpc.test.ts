/**
 * Over gRPC the priority-and-fairness headers travel as metadata: a unary answer's trailing metadata,
 * a watch's initial metadata, a refusal's error metadata (raw grpc-js calls, to read the metadata).
 */
import t from 'tap';
import { Client as RawClient, credentials, Metadata, status as Code } from '@grpc/grpc-js';
import { methodOf, RESOURCES_SERVICE, type RequestMessage } from '../../core/grpc/proto.js';
import { startGrpcServer } from '../helpers/grpc.js';
import { ADMIN_TOKEN, ALICE_TOKEN } from '../helpers/server.js';

const FS_UID = 'x-kubernetes-pf-flowschema-uid';
const PL_UID = 'x-kubernetes-pf-prioritylevel-uid';
const request: RequestMessage = { ref: { group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: '', subresource: '' }, options: {}, body: Buffer.alloc(0), content_type: '', accept: 'application/json' };

t.test('gRPC answers carry the FlowSchema and priority level UIDs in their metadata', async (t) => {
  const s = await startGrpcServer();
  t.teardown(() => s.stop());
  const uid = async (path: string) => (await s.admin.get(path)).json.metadata.uid as string;
  const exempt = { fs: await uid('/apis/flowcontrol.apiserver.svc.io/v1/flowschemas/exempt'), pl: await uid('/apis/flowcontrol.apiserver.svc.io/v1/prioritylevelconfigurations/exempt') };
  const global = { fs: await uid('/apis/flowcontrol.apiserver.svc.io/v1/flowschemas/global-default'), pl: await uid('/apis/flowcontrol.apiserver.svc.io/v1/prioritylevelconfigurations/global-default') };
  const raw = new RawClient(`127.0.0.1:${s.grpcPort}`, credentials.createSsl(Buffer.from(s.ca)));
  t.teardown(() => raw.close());
  const list = methodOf<RequestMessage, unknown>(RESOURCES_SERVICE, 'List');
  const call = (token: string): Promise<{ code: number; md: Metadata }> =>
    new Promise((resolve) => {
      const md = new Metadata();
      md.set('authorization', `Bearer ${token}`);
      const c = raw.makeUnaryRequest(`/${RESOURCES_SERVICE}/List`, list.requestSerialize, (b: Buffer) => b, request, md, () => undefined);
      c.on('status', (st) => resolve({ code: st.code, md: st.metadata }));
    });
  const ok = await call(ADMIN_TOKEN);
  t.equal(ok.code, Code.OK);
  t.same([ok.md.get(FS_UID)[0], ok.md.get(PL_UID)[0]], [exempt.fs, exempt.pl], 'an answer: the exempt schema and level');
  const denied = await call(ALICE_TOKEN);
  t.equal(denied.code, Code.PERMISSION_DENIED, 'an ordinary user is refused by RBAC, after priority and fairness');
  t.same([denied.md.get(FS_UID)[0], denied.md.get(PL_UID)[0]], [global.fs, global.pl], 'a refusal: global-default');
  const watch = methodOf<RequestMessage, unknown>(RESOURCES_SERVICE, 'Watch');
  const md = new Metadata();
  md.set('authorization', `Bearer ${ADMIN_TOKEN}`);
  const stream = raw.makeServerStreamRequest(`/${RESOURCES_SERVICE}/Watch`, watch.requestSerialize, (b: Buffer) => b, request, md);
  const initial = await new Promise<Metadata>((resolve) => stream.on('metadata', resolve));
  stream.on('error', () => undefined);
  stream.cancel();
  t.equal(initial.get(FS_UID)[0], exempt.fs, "a watch: in the stream's initial metadata");
});
