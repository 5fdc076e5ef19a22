/**
 * A simulated Ascend Device Plugin (plus the kubelet half it drives) for a set of fake nodes:
 * holds per-node NPU state and writes `kube-system/mindx-dl-deviceinfo-<node>` the way the real DP
 * does (docs/formats.md#device-info): label mx-consumer-cim=true, Update then Create on NotFound, written on change
 * (fault_time ignored) and never more than once per second per node, optionally rewritten every
 * `refreshIntervalMs` (DP: 5 min). After a write that changes the number of available chips it merge-
 * patches the Node's `status.allocatable[<P>]` through nodes/status, as kubelet does after ListAndWatch.
 */
import type { FaultCodeTable } from '../../schemas/fault-code/fault-code.ts';
import { DEFAULT_FAULT_CODE_TABLE } from '../../schemas/fault-code/fault-code.ts';
import { encodeDeviceInfoData } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, DEVICE_INFO_NAMESPACE, deviceInfoCmName, parseDeviceInfoData } from '../../schemas/device-info/device-info.ts';
import type { SwitchFaultLevel } from '../../schemas/device-info/switch-info.ts';
import { isNotFound, paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { Coalescer, Limiter } from './coalescer.ts';
import { FAULT_CODE_RE } from '../../schemas/device-info/device-fault.ts';
import { InvalidFaultError, defaultChipLevel, defaultNetworkLevel, isParameterPlaneCode } from './fault-codes.ts';
import {
  addChipCode, chipLists, chipName, deviceInfoInput, newNodeState, nodeStateFromDeviceInfo, releaseManually, removeChipCodes,
  separateManually, setRecovering, type ChipFaultKind, type NpuNodeSpec, type NpuNodeState,
} from './npu-state.ts';
import { addSwitchFault, removeSwitchFaults } from './switch-state.ts';

export type ConfigMap = KubeObject & { data?: Record<string, string> };

export interface DevicePluginOptions {
  readonly nodes?: readonly NpuNodeSpec[];
  /** Default 1000 (MinCMReportInterval). */
  readonly minWriteIntervalMs?: number;
  /** Periodic unchanged rewrite of every node (real DP: 300_000). Default off. */
  readonly refreshIntervalMs?: number;
  /** Patch Node status.allocatable like kubelet. Default true. */
  readonly updateAllocatable?: boolean;
  /** Apiserver requests in flight at once. Default 32. */
  readonly maxInFlight?: number;
  readonly faultCodeTable?: FaultCodeTable;
  readonly now?: () => number;
}

export interface AllocatableAck {
  readonly count: number;
  readonly resourceVersion: string;
  readonly atMs: number;
}

export interface WriteAck {
  readonly node: string;
  readonly namespace: string;
  readonly name: string;
  /** resourceVersion the apiserver answered with. */
  readonly resourceVersion: string;
  /** Unix ms when the apiserver answered (the benchmark measures from here). */
  readonly atMs: number;
  /** false: nothing changed, no write; the fields are those of the last write. */
  readonly written: boolean;
  /** Present when this write changed the Node's allocatable count. */
  readonly allocatable?: AllocatableAck;
}

export interface ChipFaultSpec {
  readonly node: string;
  /** `Ascend910-3` or `3`. */
  readonly npu: string | number;
  /** Upper-case hex, e.g. 80E18402. */
  readonly code: string;
  /** Default from the fault code table; ManuallySeparateNPU also puts the chip in ManuallySeparateNPU. */
  readonly level?: NpuFaultLevel;
  /** Default: network for parameter-plane codes, else card. */
  readonly kind?: ChipFaultKind;
  /** fault_time, Unix ms; default now. */
  readonly timeMs?: number;
}

export interface ChipRecoverSpec {
  readonly node: string;
  /** Undefined: every chip of the node. */
  readonly npu?: string | number;
  /** Undefined: every code of that kind. */
  readonly code?: string;
  /** Undefined: both kinds. */
  readonly kind?: ChipFaultKind;
}

export interface SwitchInjectSpec {
  readonly node: string;
  readonly code: string;
  readonly level: SwitchFaultLevel;
  readonly switchChipId?: number;
  readonly switchPortId?: number;
  readonly timeMs?: number;
}

interface NodeRuntime {
  readonly state: NpuNodeState;
  lastSignature: string | undefined;
  lastAck: WriteAck | undefined;
  lastAllocatable: number | undefined;
  force: boolean;
}

/** What change detection compares: the data without fault_time, UpdateTime and CheckCode. */
export const changeSignature = (data: Readonly<Record<string, string>>): string =>
  Object.entries(data)
    .map(([k, v]) => `${k}=${v.replace(/\\*"fault_time\\*":-?\d+/g, '').replace(/\\*"UpdateTime\\*":\d+/g, '').replace(/"CheckCode":"[0-9a-f]*"/, '')}`)
    .join('\n');

export class DevicePluginSimulator {
  private readonly client: KubeClient;
  private readonly runtimes = new Map<string, NodeRuntime>();
  private readonly adopting = new Map<string, Promise<NpuNodeState>>();
  private readonly coalescer: Coalescer<WriteAck>;
  private readonly limiter: Limiter;
  private readonly now: () => number;
  private readonly table: FaultCodeTable;
  private readonly updateAllocatable: boolean;
  private readonly refreshTimer: ReturnType<typeof setInterval> | undefined;

  constructor(client: KubeClient, opts: DevicePluginOptions = {}) {
    this.client = client;
    this.now = opts.now ?? Date.now;
    this.table = opts.faultCodeTable ?? DEFAULT_FAULT_CODE_TABLE;
    this.updateAllocatable = opts.updateAllocatable ?? true;
    this.limiter = new Limiter(opts.maxInFlight ?? 32);
    this.coalescer = new Coalescer((node) => this.limiter.run(() => this.writeNow(node)), opts.minWriteIntervalMs ?? 1000, this.now);
    for (const spec of opts.nodes ?? []) this.addNode(spec);
    if (opts.refreshIntervalMs !== undefined && opts.refreshIntervalMs > 0) {
      this.refreshTimer = setInterval(() => void this.refreshAll().catch(() => undefined), opts.refreshIntervalMs);
      this.refreshTimer.unref();
    }
  }

  /** Adds a node with healthy NPUs (nothing is written until a change, init() or refreshAll()). */
  addNode(spec: NpuNodeSpec): NpuNodeState {
    const existing = this.runtimes.get(spec.name);
    if (existing !== undefined) return existing.state;
    const state = newNodeState(spec);
    this.runtimes.set(spec.name, { state, lastSignature: undefined, lastAck: undefined, lastAllocatable: undefined, force: true });
    return state;
  }

  /**
   * Takes over a node from what is in the cluster: its device-info CM (faults, manual separation,
   * switch info) and its Node (NPU count from capacity, current allocatable). For a fresh process (CLI).
   */
  adopt(name: string, defaults: Omit<NpuNodeSpec, 'name'> = {}): Promise<NpuNodeState> {
    const known = this.runtimes.get(name);
    if (known !== undefined) return Promise.resolve(known.state);
    let p = this.adopting.get(name);
    if (p === undefined) {
      p = this.load(name, defaults).finally(() => this.adopting.delete(name));
      this.adopting.set(name, p);
    }
    return p;
  }

  private async load(name: string, defaults: Omit<NpuNodeSpec, 'name'>): Promise<NpuNodeState> {
    const [node, cm] = await Promise.all([
      this.client.getOrUndefined<KubeObject & { status?: { capacity?: Record<string, string>; allocatable?: Record<string, string> } }>(paths.node(name)),
      this.client.getOrUndefined<ConfigMap>(paths.configMap(DEVICE_INFO_NAMESPACE, deviceInfoCmName(name))),
    ]);
    const base = newNodeState({ ...defaults, name });
    const cap = Number(node?.status?.capacity?.[base.prefix]);
    const npus = Number.isInteger(cap) && cap > 0 ? cap : base.npus;
    let state = newNodeState({ ...defaults, name, npus });
    if (cm !== undefined) {
      const parsed = parseDeviceInfoData(cm.data, this.now());
      if (!parsed.ok) throw new Error(`cannot take over ${deviceInfoCmName(name)}: ${parsed.reason}`);
      state = nodeStateFromDeviceInfo(name, npus, parsed.value);
      if (defaults.switchMode !== undefined && state.switch.mode !== 'enabled') state.switch.mode = defaults.switchMode;
    }
    const alloc = Number(node?.status?.allocatable?.[state.prefix]);
    const raced = this.runtimes.get(name);
    if (raced !== undefined) return raced.state; // addNode() while we were reading
    this.runtimes.set(name, { state, lastSignature: undefined, lastAck: undefined, lastAllocatable: Number.isInteger(alloc) ? alloc : undefined, force: true });
    return state;
  }

  nodeNames(): string[] {
    return [...this.runtimes.keys()];
  }

  /** The live state of a node (read it; change it only through the methods). */
  state(node: string): NpuNodeState {
    return this.rt(node).state;
  }

  /** The data map the simulator would write now. */
  dataOf(node: string): Record<string, string> {
    return encodeDeviceInfoData(deviceInfoInput(this.rt(node).state, Math.floor(this.now() / 1000)));
  }

  lastAck(node: string): WriteAck | undefined {
    return this.runtimes.get(node)?.lastAck;
  }

  /** Writes started for a node (coalesced and unchanged requests not counted). */
  writeCount(node: string): number {
    return this.coalescer.writes.get(node) ?? 0;
  }

  /** Writes every node (or the given ones) as it is now, healthy when nothing was injected. */
  init(nodes: readonly string[] = this.nodeNames()): Promise<WriteAck[]> {
    return Promise.all(nodes.map((n) => { this.rt(n).force = true; return this.coalescer.request(n); }));
  }

  /** The periodic rewrite: every node is written again (new UpdateTime) even when unchanged. */
  refreshAll(): Promise<WriteAck[]> {
    return this.init();
  }

  async injectChipFault(spec: ChipFaultSpec): Promise<WriteAck> {
    const st = this.rt(spec.node).state;
    const chip = chipName(st, spec.npu);
    if (!FAULT_CODE_RE.test(spec.code)) throw new InvalidFaultError(`chip fault code ${JSON.stringify(spec.code)} is not hex (e.g. 80E18402)`);
    const kind = spec.kind ?? (isParameterPlaneCode(spec.code) ? 'network' : 'card');
    const level = spec.level ?? (kind === 'network' ? defaultNetworkLevel(spec.code, this.table) : defaultChipLevel(spec.code, this.table));
    const timeMs = spec.timeMs ?? this.now();
    let changed = addChipCode(st, chip, kind, spec.code, level, timeMs, spec.timeMs !== undefined);
    if (level === 'ManuallySeparateNPU') changed = separateManually(st, chip, spec.code.toUpperCase(), timeMs) || changed;
    return this.changed(spec.node, changed);
  }

  async recoverChipFault(spec: ChipRecoverSpec): Promise<WriteAck> {
    const st = this.rt(spec.node).state;
    const chip = spec.npu === undefined ? undefined : chipName(st, spec.npu);
    let changed = false;
    for (const kind of spec.kind === undefined ? (['card', 'network'] as const) : [spec.kind]) changed = removeChipCodes(st, chip, kind, spec.code) || changed;
    return this.changed(spec.node, changed);
  }

  /** Puts a chip into ManuallySeparateNPU (as the DP frequency rule would), with an UpgradeFaultReason. */
  async separateManually(node: string, npu: string | number, code = 'AutofillFaultCode'): Promise<WriteAck> {
    const st = this.rt(node).state;
    return this.changed(node, separateManually(st, chipName(st, npu), code, this.now(), code === 'AutofillFaultCode' ? 'FaultAutofill' : 'FaultFrequency'));
  }

  /** An operator deleting the chip from the ManuallySeparateNPU key. */
  async releaseManualSeparation(node: string, npu: string | number): Promise<WriteAck> {
    const st = this.rt(node).state;
    return this.changed(node, releaseManually(st, chipName(st, npu)));
  }

  /** Hot reset in progress (`<P>-Recovering`) or finished. */
  async setRecovering(node: string, npu: string | number, on: boolean): Promise<WriteAck> {
    const st = this.rt(node).state;
    return this.changed(node, setRecovering(st, chipName(st, npu), on));
  }

  /** A3 switch fault; turns the node's SwitchInfoCfg from the zero struct into real reporting. */
  async injectSwitchFault(spec: SwitchInjectSpec): Promise<WriteAck> {
    const st = this.rt(spec.node).state;
    return this.changed(spec.node, addSwitchFault(st.switch, { ...spec, timeMs: spec.timeMs ?? this.now() }));
  }

  async recoverSwitchFault(node: string, code?: string, switchChipId?: number, switchPortId?: number): Promise<WriteAck> {
    return this.changed(node, removeSwitchFaults(this.rt(node).state.switch, code, switchChipId, switchPortId));
  }

  /** Waits for every pending write. */
  flush(): Promise<void> {
    return this.coalescer.flush();
  }

  /** Stops the refresh timer and drops writes not started yet. */
  close(): void {
    if (this.refreshTimer !== undefined) clearInterval(this.refreshTimer);
    this.coalescer.close();
  }

  private rt(node: string): NodeRuntime {
    const r = this.runtimes.get(node);
    if (r === undefined) throw new Error(`node ${node} is not simulated (add it with addNode/adopt)`);
    return r;
  }

  private changed(node: string, changed: boolean): Promise<WriteAck> {
    const r = this.rt(node);
    if (!changed && r.lastAck !== undefined && !this.coalescer.busy(node)) return Promise.resolve({ ...r.lastAck, written: false, allocatable: undefined });
    return this.coalescer.request(node);
  }

  private async writeNow(node: string): Promise<WriteAck> {
    const r = this.rt(node);
    const data = encodeDeviceInfoData(deviceInfoInput(r.state, Math.floor(this.now() / 1000)));
    const sig = changeSignature(data);
    if (!r.force && sig === r.lastSignature && r.lastAck !== undefined) return { ...r.lastAck, written: false, allocatable: undefined };
    const name = deviceInfoCmName(node);
    const cm: ConfigMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: DEVICE_INFO_NAMESPACE, labels: { ...DEVICE_INFO_LABELS } }, data };
    let saved: ConfigMap;
    try {
      saved = await this.client.replace(paths.configMap(DEVICE_INFO_NAMESPACE, name), cm);
    } catch (e) {
      if (!isNotFound(e)) throw e;
      saved = await this.client.create(paths.configMaps(DEVICE_INFO_NAMESPACE), cm);
    }
    const ack: WriteAck = { node, namespace: DEVICE_INFO_NAMESPACE, name, resourceVersion: saved.metadata?.resourceVersion ?? '', atMs: this.now(), written: true };
    r.lastAck = ack;
    r.lastSignature = sig;
    r.force = false;
    const allocatable = await this.syncAllocatable(r);
    return allocatable === undefined ? ack : { ...ack, allocatable };
  }

  /** kubelet: allocatable = healthy devices the DP reports; capacity stays. Skipped when the Node does not exist. */
  private async syncAllocatable(r: NodeRuntime): Promise<AllocatableAck | undefined> {
    if (!this.updateAllocatable) return undefined;
    const count = chipLists(r.state).available.length;
    if (count === r.lastAllocatable) return undefined;
    try {
      const node = await this.client.patch(paths.nodeStatus(r.state.name), { status: { allocatable: { [r.state.prefix]: String(count) } } }, 'merge');
      r.lastAllocatable = count;
      return { count, resourceVersion: node.metadata?.resourceVersion ?? '', atMs: this.now() };
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }
}
