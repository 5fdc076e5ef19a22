/**
 * The three patch types the apiserver accepts (Kubernetes docs, "Update API Objects in Place Using
 * kubectl patch"): JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch, the
 * last only as far as the built-in fields the controller and its tools patch need it.
 */
import { copyJson } from './copy.ts';

type Json = unknown;
type JsonObject = Record<string, Json>;

/** A patch that cannot be applied (the apiserver answers 422, or 400 for a malformed one). */
export class PatchError extends Error {
  readonly status: number;
  constructor(message: string, status = 422) { super(message); this.status = status; }
}

const isObject = (v: Json): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const clone = copyJson;

export function deepEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/** RFC 7386: objects merge key by key, `null` removes, anything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

// ---- JSON patch ------------------------------------------------------------------------------------

interface Op { readonly op: string; readonly path: string; readonly from?: string; readonly value?: Json }

function pointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw new PatchError(`invalid JSON pointer "${p}"`);
  return p.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The container of the pointer's last token and that token. */
function parent(doc: Json, tokens: readonly string[], path: string): { container: JsonObject | Json[]; key: string } {
  let cur = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (isObject(cur)) cur = cur[t];
    else cur = undefined;
    if (cur === undefined) throw new PatchError(`doc is missing path: "${path}"`);
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw new PatchError(`doc is missing path: "${path}"`);
  return { container: cur, key: tokens[tokens.length - 1]! };
}

function index(arr: readonly Json[], key: string, path: string, forAdd: boolean): number {
  if (forAdd && key === '-') return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(key)) throw new PatchError(`invalid array index "${key}" in "${path}"`);
  const i = Number(key);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new PatchError(`array index out of bounds in "${path}"`);
  return i;
}

function get(doc: Json, path: string): Json {
  let cur = doc;
  for (const t of pointer(path)) {
    cur = Array.isArray(cur) ? cur[Number(t)] : isObject(cur) ? cur[t] : undefined;
    if (cur === undefined) throw new PatchError(`doc is missing path: "${path}"`);
  }
  return cur;
}

function add(doc: Json, path: string, value: Json): Json {
  const tokens = pointer(path);
  if (tokens.length === 0) return clone(value);
  const { container, key } = parent(doc, tokens, path);
  if (Array.isArray(container)) container.splice(index(container, key, path, true), 0, clone(value));
  else container[key] = clone(value);
  return doc;
}

function remove(doc: Json, path: string): Json {
  const tokens = pointer(path);
  if (tokens.length === 0) throw new PatchError('cannot remove the whole document');
  const { container, key } = parent(doc, tokens, path);
  if (Array.isArray(container)) container.splice(index(container, key, path, false), 1);
  else if (key in container) delete container[key];
  else throw new PatchError(`unable to remove nonexistent key: ${key}: missing value`);
  return doc;
}

/** RFC 6902 (add, remove, replace, move, copy, test), all or nothing. */
export function jsonPatch(target: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new PatchError('a JSON patch is an array of operations', 400);
  let doc = clone(target);
  for (const raw of ops as Op[]) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') throw new PatchError('invalid JSON patch operation', 400);
    switch (raw.op) {
      case 'add': doc = add(doc, raw.path, raw.value); break;
      case 'remove': doc = remove(doc, raw.path); break;
      case 'replace': get(doc, raw.path); doc = add(remove(doc, raw.path), raw.path, raw.value); break;
      case 'move': { const v = get(doc, raw.from ?? ''); doc = add(remove(doc, raw.from ?? ''), raw.path, v); break; }
      case 'copy': doc = add(doc, raw.path, get(doc, raw.from ?? '')); break;
      case 'test':
        if (!deepEqual(get(doc, raw.path), raw.value)) throw new PatchError(`testing value ${raw.path} failed: test failed`);
        break;
      default: throw new PatchError(`unexpected kind: ${raw.op}`, 400);
    }
  }
  return doc;
}

// ---- strategic merge patch -------------------------------------------------------------------------

/**
 * Lists whose items are merged by a key (`patchMergeKey` in k8s.io/api), by dotted path with array
 * levels left out, and lists of strings merged as sets. Every other list is replaced, as in a merge patch.
 */
const MERGE_KEYS: Record<string, string> = {
  'metadata.ownerReferences': 'uid',
  'spec.containers': 'name',
  'spec.initContainers': 'name',
  'spec.containers.env': 'name',
  'spec.containers.ports': 'containerPort',
  'spec.volumes': 'name',
  'spec.tolerations': 'key',
  'status.conditions': 'type',
  'status.addresses': 'type',
  'status.containerStatuses': 'name',
  'status.images': 'names',
};
const SET_LISTS = new Set(['metadata.finalizers']);

export function strategicMergePatch(target: Json, patch: Json, path = ''): Json {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue; // directives ($patch, $retainKeys, ...) are not used here
    const at = path === '' ? k : `${path}.${k}`;
    if (v === null) { delete out[k]; continue; }
    const mergeKey = MERGE_KEYS[at];
    if (Array.isArray(v) && mergeKey !== undefined) out[k] = mergeList(Array.isArray(out[k]) ? out[k] : [], v, mergeKey, at);
    else if (Array.isArray(v) && SET_LISTS.has(at)) out[k] = [...new Set([...(Array.isArray(out[k]) ? out[k] as Json[] : []), ...v])];
    else out[k] = strategicMergePatch(out[k], v, at);
  }
  return out;
}

function mergeList(current: readonly Json[], patch: readonly Json[], mergeKey: string, path: string): Json[] {
  const out = current.map(clone);
  for (const item of patch) {
    if (!isObject(item)) { out.push(clone(item)); continue; }
    const i = out.findIndex((c) => isObject(c) && deepEqual(c[mergeKey], item[mergeKey]));
    if (item.$patch === 'delete') { if (i >= 0) out.splice(i, 1); continue; }
    if (i >= 0) out[i] = strategicMergePatch(out[i], item, path);
    else out.push(strategicMergePatch({}, item, path));
  }
  return out;
}
