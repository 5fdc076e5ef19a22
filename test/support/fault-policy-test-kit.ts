/**
 * Test helpers for the fault-policy unit tests: the manual clock (test/support/manual-clock.ts, here
 * for the tests that import it from this kit), a logger that records structured lines, and record builders.
 */
import { ConfigMapWriter } from '../../runtime/configmap-writer.ts';
import { ApiError, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import type { Logger } from '../../telemetry/logger.ts';
import type { FaultRecord, FaultSource, NpuFaultLevel } from '../../vocabulary/fault-types.ts';

export { ManualClock, settle } from './manual-clock.ts';

export interface LogLine { readonly level: string; readonly msg: string; readonly [k: string]: unknown }

/** `now`: each line also records `nowMs`, the (virtual) time it was logged at. */
export function recordingLogger(lines: LogLine[], base: object = {}, now?: () => number): Logger {
  const put = (level: string) => (msg: string, fields?: object): void => { lines.push({ ...base, ...fields, ...(now === undefined ? {} : { nowMs: now() }), level, msg }); };
  return { debug: put('debug'), info: put('info'), warn: put('warn'), error: put('error'), child: (f) => recordingLogger(lines, { ...base, ...f }, now) };
}

export function rec(node: string, device: string, code: string, level: NpuFaultLevel, firstSeenMs: number, source: FaultSource = 'npu'): FaultRecord {
  return { node, device, source, code, level, reportedLevel: level, firstSeenMs };
}


/** An in-memory apiserver for ConfigMaps: records every write. */
export function fakeConfigMaps() {
  const objects = new Map<string, ConfigMap>();
  const writes: Array<{ verb: string; path: string }> = [];
  let rv = 0;
  const put = (path: string, verb: string, obj: KubeObject): ConfigMap => {
    const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++rv) } } as ConfigMap;
    writes.push({ verb, path });
    objects.set(`${stored.metadata?.namespace}/${stored.metadata?.name}`, stored);
    return stored;
  };
  const client = {
    create: async (path: string, obj: KubeObject) => put(path, 'create', obj),
    replace: async (path: string, obj: KubeObject) => put(path, 'update', obj),
    delete: async (path: string, opts?: { preconditions?: { resourceVersion?: string } }) => {
      const key = path.replace(/^\/api\/v1\/namespaces\/([^/]+)\/configmaps\//, '$1/');
      const cur = objects.get(key);
      if (cur === undefined) throw new ApiError('DELETE', path, 404, {});
      if (opts?.preconditions?.resourceVersion !== undefined && opts.preconditions.resourceVersion !== cur.metadata?.resourceVersion) throw new ApiError('DELETE', path, 409, {});
      writes.push({ verb: 'delete', path });
      objects.delete(key);
      return {};
    },
  } as unknown as KubeClient;
  // JSON bodies: this stand-in stores objects, it does not decode protobuf (runtime/configmap-protobuf.ts).
  return { objects, writes, writer: new ConfigMapWriter(client, { protobuf: false }) };
}

