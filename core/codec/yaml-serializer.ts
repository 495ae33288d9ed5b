/**
 * YAML: every form decodes once and writes the value as upstream's YAML printer does; no watch
 * streams. Bodies hold one document (YAML 1.1, as upstream's converter reads it); more is a 400.
 */
import { JsonSyntaxError } from './json.js';
import { listMetaValue } from './json-serializer.js';
import { BodyDecodeError, itemValue, objectValue, registerSerializer, type Serializer } from './serializer.js';
import { parseTextBody } from './text-body.js';
import { encodeYaml } from './yaml.js';

const yaml = (v: unknown): Buffer => Buffer.from(encodeYaml(v));

export const yamlSerializer: Serializer = {
  id: 'yaml',
  mediaType: 'application/yaml',
  streamMediaType: 'application/yaml',
  streams: false,
  needsMessages: false,
  encodeObject: (src, t) => yaml(objectValue(t, src.value())),
  encodeValue: (v) => yaml(v),
  *encodeList(t, meta, items) {
    const all: unknown[] = [];
    for (const it of items) all.push(itemValue(it.value()));
    yield yaml({ kind: t.kind, apiVersion: t.apiVersion, metadata: listMetaValue(meta), items: all });
  },
  encodeValueList: (t, meta, items) => yaml({ kind: t.kind, apiVersion: t.apiVersion, metadata: listMetaValue(meta), items }),
  encodeWatchFrame: () => {
    throw new Error('YAML has no watch stream framing');
  },
  decodeBody(body) {
    try {
      return parseTextBody(body, true);
    } catch (e) {
      if (e instanceof JsonSyntaxError) throw new BodyDecodeError(e.message);
      throw e;
    }
  },
};

registerSerializer(yamlSerializer);
