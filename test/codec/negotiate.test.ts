import t from 'tap';
import { negotiateOutput, type OutputOffer } from '../../core/codec/negotiate.js';

const GET: OutputOffer = { stream: false, protobuf: true, cbor: false, transforms: 'object' };
const LIST: OutputOffer = { ...GET, transforms: 'list' };
const WATCH: OutputOffer = { ...GET, stream: true };
const CUSTOM: OutputOffer = { ...GET, protobuf: false };
const WRITE: OutputOffer = { ...GET, transforms: 'none' };
const CBOR_GET: OutputOffer = { ...GET, cbor: true };
const CBOR_LIST: OutputOffer = { ...LIST, cbor: true };
const CBOR_WATCH: OutputOffer = { ...WATCH, cbor: true };

// [rule, Accept, offer, expected serializer id, expected Content-Type, expected transform] (undefined: 406)
const rows: [string, string | undefined, OutputOffer, string | undefined, string?, string?][] = [
  ['no Accept is JSON', undefined, GET, 'json', 'application/json'],
  ['*/* is JSON', '*/*', GET, 'json', 'application/json'],
  ['application/* is JSON', 'application/*', GET, 'json', 'application/json'],
  ['YAML', 'application/yaml', GET, 'yaml', 'application/yaml'],
  ['our protobuf spelling', 'application/vnd.svc.protobuf', GET, 'protobuf', 'application/vnd.svc.protobuf'],
  ['upstream\'s protobuf spelling is answered in it', 'application/vnd.kubernetes.protobuf', GET, 'protobuf', 'application/vnd.kubernetes.protobuf'],
  ['the first supported type wins', 'text/html, application/vnd.kubernetes.protobuf, application/json', GET, 'protobuf', 'application/vnd.kubernetes.protobuf'],
  ['q-values order the ranges', 'application/json;q=0.5, application/yaml', GET, 'yaml', 'application/yaml'],
  ['q=0 refuses a type', 'application/yaml;q=0, application/json', GET, 'json', 'application/json'],
  ['equal q keeps the order given', 'application/yaml;q=0.9, application/json;q=0.9', GET, 'yaml', 'application/yaml'],
  ['charset and pretty are neutral', 'application/json;charset=utf-8;pretty=true', GET, 'json', 'application/json'],
  ['an unknown parameter makes a range unacceptable', 'application/json;foo=bar', GET, undefined],
  ['nothing supported: 406', 'text/html, image/png', GET, undefined],
  ['protobuf is not offered for custom resources', 'application/vnd.kubernetes.protobuf', CUSTOM, undefined],
  ['custom resources fall back to the next range', 'application/vnd.kubernetes.protobuf, application/json', CUSTOM, 'json', 'application/json'],
  ['a Table in our meta group', 'application/json;as=Table;v=v1;g=meta.svc.io', GET, 'json', 'application/json;as=Table;v=v1;g=meta.svc.io', 'Table'],
  ['a Table in upstream\'s meta group, answered in it', 'application/json;as=Table;v=v1;g=meta.k8s.io', LIST, 'json', 'application/json;as=Table;v=v1;g=meta.k8s.io', 'Table'],
  ['a Table needs as, g and v', 'application/json;as=Table;v=v1, application/json', GET, 'json', 'application/json'],
  ['an unknown Table version falls through', 'application/json;as=Table;v=v1beta9;g=meta.k8s.io, application/json', GET, 'json', 'application/json'],
  ['another group\'s Table falls through', 'application/json;as=Table;v=v1;g=example.com, application/json', GET, 'json', 'application/json'],
  ['kubectl\'s get Accept', 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json', LIST, 'json', 'application/json;as=Table;v=v1;g=meta.k8s.io', 'Table'],
  ['PartialObjectMetadata for a get', 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', GET, 'protobuf', 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io', 'PartialObjectMetadata'],
  ['PartialObjectMetadataList for a list', 'application/json;as=PartialObjectMetadataList;g=meta.svc.io;v=v1', LIST, 'json', 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.svc.io', 'PartialObjectMetadataList'],
  ['PartialObjectMetadataList is not a get\'s form', 'application/json;as=PartialObjectMetadataList;g=meta.svc.io;v=v1', GET, undefined],
  ['PartialObjectMetadata is not a list\'s form', 'application/json;as=PartialObjectMetadata;g=meta.svc.io;v=v1', LIST, undefined],
  ['writes are never transformed', 'application/json;as=Table;v=v1;g=meta.k8s.io', WRITE, undefined],
  ['a watch in JSON', 'application/json', WATCH, 'json', 'application/json'],
  ['a watch in protobuf is its stream form', 'application/vnd.kubernetes.protobuf', WATCH, 'protobuf', 'application/vnd.kubernetes.protobuf;stream=watch'],
  ['stream=watch is accepted on a watch', 'application/vnd.svc.protobuf;stream=watch', WATCH, 'protobuf', 'application/vnd.svc.protobuf;stream=watch'],
  ['YAML has no watch form', 'application/yaml', WATCH, undefined],
  ['a watch of Tables', 'application/json;as=Table;v=v1;g=meta.k8s.io', WATCH, 'json', 'application/json;as=Table;v=v1;g=meta.k8s.io', 'Table'],
  ['CBOR is not offered while its gate is off', 'application/cbor', GET, undefined],
  ['CBOR under its gate', 'application/cbor', CBOR_GET, 'cbor', 'application/cbor'],
  ['the next range when CBOR is off', 'application/cbor, application/json', GET, 'json', 'application/json'],
  ['a CBOR watch is a CBOR sequence', 'application/cbor', CBOR_WATCH, 'cbor', 'application/cbor-seq'],
  ['cbor-seq names a CBOR watch', 'application/cbor-seq', CBOR_WATCH, 'cbor', 'application/cbor-seq'],
  ['cbor-seq is no single answer', 'application/cbor-seq', CBOR_GET, undefined],
  ['cbor-seq is nothing while the gate is off', 'application/cbor-seq', WATCH, undefined],
  ['a Table has no protobuf form: the next range is used', 'application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json', LIST, 'json', 'application/json'],
  ['a Table in protobuf alone is 406', 'application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io', LIST, undefined],
  ['a Table has no CBOR form', 'application/cbor;as=Table;v=v1;g=meta.k8s.io, application/cbor', CBOR_LIST, 'cbor', 'application/cbor'],
  ['a Table in YAML', 'application/yaml;as=Table;v=v1;g=meta.k8s.io', LIST, 'yaml', 'application/yaml;as=Table;v=v1;g=meta.k8s.io', 'Table'],
  ['PartialObjectMetadataList in CBOR', 'application/cbor;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io', CBOR_LIST, 'cbor', 'application/cbor;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io', 'PartialObjectMetadataList'],
  ['PartialObjectMetadata on a CBOR watch', 'application/cbor;as=PartialObjectMetadata;v=v1;g=meta.k8s.io', CBOR_WATCH, 'cbor', 'application/cbor-seq;as=PartialObjectMetadata;v=v1;g=meta.k8s.io', 'PartialObjectMetadata'],
];

t.test('output negotiation: Accept ranges to serializer, Content-Type and transform', async (t) => {
  for (const [rule, accept, offer, id, contentType, transform] of rows) {
    const c = negotiateOutput(accept, offer);
    if (id === undefined) {
      t.equal(c, undefined, rule);
      continue;
    }
    t.same({ id: c?.serializer.id, contentType: c?.contentType, transform: c?.transform?.as }, { id, contentType, transform }, rule);
  }
});
