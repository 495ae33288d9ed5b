/**
 * RFC 6902 JSON Patch with the behaviour the API server has through evanphx/json-patch v4: the
 * operations run in order on a copy of the document and the first failing one fails the whole patch
 * (MergeError 422 with upstream's message, e.g. `testing value /spec/x failed: test failed`). Also
 * kept from upstream: negative array indices count from the end, `replace` of a missing object member
 * adds it, and a patch that is not a list of objects is a 400 with Go's JSON decoding message.
 */
import { MergeError } from './errors.js';
import { goJson, goJsonKind } from './go-format.js';
import { jsonEqual } from '../api/validation.js';
import { type JsonValue, cloneJson, isObject } from './json-values.js';
import { isLookupError, locate } from './json-pointer.js';

export const MAX_JSON_PATCH_OPERATIONS = 10000;

/** Growth `copy` operations may cause in one patch (the API server's JSONPatchMaxCopyBytes default). */
export const JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024;

export type JsonPatchOperation = Record<string, JsonValue | undefined>;

/** Checks a decoded patch body is a list of operations, as decoding into jsonpatch.Patch does. */
export function decodeJsonPatch(patch: unknown): JsonPatchOperation[] {
  if (patch === null) return [];
  if (!Array.isArray(patch)) throw new MergeError(`json: cannot unmarshal ${goJsonKind(patch as JsonValue)} into Go value of type jsonpatch.Patch`, 400);
  for (const op of patch) {
    if (op !== null && !isObject(op)) throw new MergeError(`json: cannot unmarshal ${goJsonKind(op as JsonValue)} into Go value of type jsonpatch.Operation`, 400);
  }
  if (patch.length > MAX_JSON_PATCH_OPERATIONS) {
    throw new MergeError(`The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${patch.length}`, 413);
  }
  return patch.map((op) => (op ?? {}) as JsonPatchOperation);
}

/** Applies `patch` (the decoded request body) to `doc`; `doc` is not modified. */
export function applyJsonPatch(doc: JsonValue, patch: unknown): JsonValue {
  const ops = decodeJsonPatch(patch);
  const state: DocState = { doc: cloneJson(doc), copiedBytes: 0 };
  for (const op of ops) applyOperation(state, op);
  return state.doc;
}

interface DocState {
  doc: JsonValue;
  /** Bytes added by copy operations so far. */
  copiedBytes: number;
}

const fail = (message: string): never => {
  throw new MergeError(message);
};

function applyOperation(state: DocState, op: JsonPatchOperation): void {
  const kind = typeof op.op === 'string' ? op.op : 'unknown';
  switch (kind) {
    case 'add':
      return opAdd(state, op);
    case 'remove':
      return opRemove(state, op);
    case 'replace':
      return opReplace(state, op);
    case 'move':
      return opMove(state, op);
    case 'test':
      return opTest(state, op);
    case 'copy':
      return opCopy(state, op);
    default:
      fail(`Unexpected kind: ${kind}`);
  }
}

/** The operation's value; a missing value acts as null, as the Go library writes it. */
const valueOf = (op: JsonPatchOperation): JsonValue => cloneJson(op.value ?? null);

/** A string member of the operation, or the Go library's message for why it has none. */
function member(op: JsonPatchOperation, name: 'path' | 'from'): string | { error: string } {
  const v = op[name];
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return { error: name === 'path' ? 'operation missing path field: missing value' : 'operation, missing from field: missing value' };
  return { error: `json: cannot unmarshal ${goJsonKind(v)} into Go value of type string` };
}

function opAdd(state: DocState, op: JsonPatchOperation): void {
  const path = member(op, 'path');
  if (typeof path !== 'string') return fail('add operation failed to decode path: missing value');
  const at = locate(state.doc, path);
  if (!at) return fail(`add operation does not apply: doc is missing path: "${path}": missing value`);
  const err = at.add(valueOf(op));
  if (err) fail(`error in add for path: '${path}': ${err}`);
}

function opRemove(state: DocState, op: JsonPatchOperation): void {
  const path = member(op, 'path');
  if (typeof path !== 'string') return fail('remove operation failed to decode path: missing value');
  const at = locate(state.doc, path);
  if (!at) return fail(`remove operation does not apply: doc is missing path: "${path}": missing value`);
  const err = at.remove();
  if (err) fail(`error in remove for path: '${path}': ${err}`);
}

function opReplace(state: DocState, op: JsonPatchOperation): void {
  const path = member(op, 'path');
  if (typeof path !== 'string') return fail(`replace operation failed to decode path: ${path.error}`);
  if (path === '') {
    // Only an object or array can replace the whole document; upstream ignores anything else.
    const v = op.value;
    if (isObject(v) || Array.isArray(v)) state.doc = cloneJson(v);
    return;
  }
  const at = locate(state.doc, path);
  if (!at) return fail(`replace operation does not apply: doc is missing path: ${path}: missing value`);
  if (isLookupError(at.get())) return fail(`replace operation does not apply: doc is missing key: ${path}: missing value`);
  at.set(valueOf(op));
}

function opMove(state: DocState, op: JsonPatchOperation): void {
  const from = member(op, 'from');
  if (typeof from !== 'string') return fail(`move operation failed to decode from: ${from.error}`);
  const src = locate(state.doc, from);
  if (!src) return fail(`move operation does not apply: doc is missing from path: ${from}: missing value`);
  const got = src.get();
  if (isLookupError(got)) return fail(`error in move for path: '${src.key}': ${got.error}`);
  const removeErr = src.remove();
  if (removeErr) return fail(`error in move for path: '${src.key}': ${removeErr}`);
  const path = member(op, 'path');
  if (typeof path !== 'string') return fail(`move operation failed to decode path: ${path.error}`);
  const dst = locate(state.doc, path);
  if (!dst) return fail(`move operation does not apply: doc is missing destination path: ${path}: missing value`);
  const err = dst.add(got ?? null);
  if (err) fail(`error in move for path: '${path}': ${err}`);
}

function opTest(state: DocState, op: JsonPatchOperation): void {
  const path = member(op, 'path');
  if (typeof path !== 'string') return fail(`test operation failed to decode path: ${path.error}`);
  const failed = (): never => fail(`testing value ${path} failed: test failed`);
  if (path === '') return void (jsonEqual(state.doc, op.value ?? null) || failed());
  const at = locate(state.doc, path);
  if (!at) return fail(`test operation does not apply: is missing path: ${path}: missing value`);
  const got = at.get();
  if (isLookupError(got)) return fail(`error in test for path: '${path}': ${got.error}`);
  // A missing member and a null one both match a null (or absent) value.
  if (got === undefined || got === null) return void ((op.value ?? null) === null || failed());
  if (op.value === undefined || !jsonEqual(got, op.value)) failed();
}

function opCopy(state: DocState, op: JsonPatchOperation): void {
  const from = member(op, 'from');
  if (typeof from !== 'string') return fail(`copy operation failed to decode from: ${from.error}`);
  const src = locate(state.doc, from);
  if (!src) return fail(`copy operation does not apply: doc is missing from path: ${from}: missing value`);
  const got = src.get();
  if (isLookupError(got)) return fail(`error in copy for from: '${from}': ${got.error}`);
  const path = member(op, 'path');
  if (typeof path !== 'string') return fail('copy operation failed to decode path: missing value');
  const dst = locate(state.doc, path);
  if (!dst) return fail(`copy operation does not apply: doc is missing destination path: ${path}: missing value`);
  state.copiedBytes += Buffer.byteLength(goJson(got ?? null));
  if (state.copiedBytes > JSON_PATCH_MAX_COPY_BYTES) {
    return fail(`Unable to complete the copy, the accumulated size increase of copy is ${state.copiedBytes}, exceeding the limit ${JSON_PATCH_MAX_COPY_BYTES}`);
  }
  const err = dst.add(cloneJson(got ?? null));
  if (err) fail(`error while adding value during copy: ${err}`);
}
