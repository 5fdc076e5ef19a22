/**
 * Test helpers for the fault-policy unit tests: a manual clock (QueueClock) whose timers fire only
 * when the test advances time, a logger that records structured lines, and record builders.
 */
import type { QueueClock } from '../../runtime/work-queue.ts';
import { ConfigMapWriter } from '../../runtime/configmap-writer.ts';
import { ApiError, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import type { Logger } from '../../telemetry/logger.ts';
import type { FaultRecord, FaultSource, NpuFaultLevel } from '../../vocabulary/fault-types.ts';

export class ManualClock implements QueueClock {
  private t: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(startMs = 1_700_000_000_000) {
    this.t = startMs;
  }

  now(): number { return this.t; }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void { this.timers.delete(handle as number); }

  get pending(): number { return this.timers.size; }

  /** Moves time forward, firing due timers in order (each at its own instant). */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (next === undefined || e[1].at < next[1].at)) next = e;
      if (next === undefined) break;
      this.timers.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fn();
    }
    this.t = end;
  }

  /**
   * Moves time forward like `advance`, and lets the controller loops that own the fired keys run at
   * each timer's instant (runtime/timer-loop.ts hands a due key to its handler asynchronously), so a
   * deadline re-armed by its handler fires within the same call at its own time.
   */
  async run(ms: number): Promise<void> {
    const end = this.t + ms;
    await settle();
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (next === undefined || e[1].at < next[1].at)) next = e;
      if (next === undefined) break;
      this.timers.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fn();
      await settle();
    }
    this.t = end;
  }
}

export interface LogLine { readonly level: string; readonly msg: string; readonly [k: string]: unknown }

/** `now`: each line also records `nowMs`, the (virtual) time it was logged at. */
export function recordingLogger(lines: LogLine[], base: object = {}, now?: () => number): Logger {
  const put = (level: string) => (msg: string, fields?: object): void => { lines.push({ ...base, ...fields, ...(now === undefined ? {} : { nowMs: now() }), level, msg }); };
  return { debug: put('debug'), info: put('info'), warn: put('warn'), error: put('error'), child: (f) => recordingLogger(lines, { ...base, ...f }, now) };
}

export function rec(node: string, device: string, code: string, level: NpuFaultLevel, firstSeenMs: number, source: FaultSource = 'npu'): FaultRecord {
  return { node, device, source, code, level, reportedLevel: level, firstSeenMs };
}

/** Lets queued microtasks (the engine's change flush) run. */
export const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

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

