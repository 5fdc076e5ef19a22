/**
 * One entry point for tests, the demo, the benchmark and chaos drills: `inject` / `recover` a fault of
 * any kind on a simulated node. Chip, network and switch faults go through the device plugin
 * simulator (device-info CM + Node allocatable), node hardware faults through the NodeD simulator
 * (node-info CM), public faults through a public-fault CM, not-ready through the Node's Ready condition.
 * Nodes the device plugin does not know yet are taken over from the cluster (adopt) on first use.
 */
import type { KubeClient } from '../../runtime/kube-client.ts';
import type { PublicFaultConfig } from '../../schemas/public-fault/public-fault-config.ts';
import { DevicePluginSimulator, type AllocatableAck, type DevicePluginOptions, type WriteAck } from './device-plugin.ts';
import { InvalidFaultError, npuLevel, switchLevel } from './fault-codes.ts';
import { setNodeNotReady, setNodeReady, type NotReadyOptions } from './node-ready.ts';
import { NodeDSimulator, type NodeDOptions } from './noded.ts';
import type { NpuNodeSpec } from './npu-state.ts';
import { PublicFaultSender } from './public-fault.ts';

export const FAULT_KINDS = ['npu', 'network', 'node', 'switch', 'public', 'not-ready'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface InjectSpec {
  readonly kind: FaultKind;
  readonly node: string;
  /** npu/network: required (`Ascend910-3` or `3`); public: influenced chip (none = node-wide). */
  readonly npu?: string | number;
  /** Required except for not-ready. */
  readonly code?: string;
  /**
   * npu/network: NPU level (default from faultCode.json; ManuallySeparateNPU also separates the chip);
   * node: NodeD or NPU spelling (default NodeD table); switch: switch or NPU spelling; public: ignored
   * (the level comes from publicFaultConfiguration.json); not-ready: `Unknown` for status Unknown.
   */
  readonly level?: string;
  /** fault_time / faultTime / AlarmRaisedTime, Unix ms; default now. */
  readonly timeMs?: number;
  /** node: IPMI device. */
  readonly deviceType?: string;
  readonly deviceId?: number;
  /** switch: port. */
  readonly switchChipId?: number;
  readonly switchPortId?: number;
  /** public: fault id (recover needs it), sender, CM place. */
  readonly faultId?: string;
  readonly resource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** not-ready: condition reason. */
  readonly reason?: string;
}

export type RecoverSpec = Omit<InjectSpec, 'level' | 'timeMs' | 'resource' | 'reason'> & {
  /** npu: also release the chip from ManuallySeparateNPU. */
  readonly releaseManual?: boolean;
};

export interface InjectResult {
  readonly kind: FaultKind;
  readonly node: string;
  /** The object written: the CM (device-info, node-info, public fault) or the Node (not-ready). */
  readonly namespace: string;
  readonly name: string;
  /** Apiserver-acknowledged resourceVersion; undefined when the CM was deleted. */
  readonly resourceVersion: string | undefined;
  /** Unix ms of the apiserver's answer. */
  readonly atMs: number;
  /** false: nothing changed, nothing written. */
  readonly written: boolean;
  readonly deleted?: boolean;
  readonly allocatable?: AllocatableAck;
  readonly faultId?: string;
}

export interface FaultInjectorOptions {
  readonly devicePlugin?: DevicePluginOptions;
  readonly nodeD?: NodeDOptions;
  readonly publicFaultConfig?: PublicFaultConfig;
  /** Defaults for nodes taken over from the cluster. */
  readonly adoptDefaults?: Omit<NpuNodeSpec, 'name'>;
  readonly now?: () => number;
}

const fromWrite = (kind: FaultKind, a: WriteAck): InjectResult => ({
  kind, node: a.node, namespace: a.namespace, name: a.name, resourceVersion: a.resourceVersion, atMs: a.atMs, written: a.written,
  ...(a.allocatable === undefined ? {} : { allocatable: a.allocatable }),
});

export class FaultInjector {
  readonly client: KubeClient;
  readonly devicePlugin: DevicePluginSimulator;
  readonly nodeD: NodeDSimulator;
  readonly publicFaults: PublicFaultSender;
  private readonly now: () => number;
  private readonly adoptDefaults: Omit<NpuNodeSpec, 'name'>;

  constructor(client: KubeClient, opts: FaultInjectorOptions = {}) {
    this.client = client;
    this.now = opts.now ?? Date.now;
    this.devicePlugin = new DevicePluginSimulator(client, { now: this.now, ...opts.devicePlugin });
    this.nodeD = new NodeDSimulator(client, { now: this.now, ...opts.nodeD });
    this.publicFaults = new PublicFaultSender(client, { now: this.now, ...(opts.publicFaultConfig === undefined ? {} : { config: opts.publicFaultConfig }) });
    this.adoptDefaults = opts.adoptDefaults ?? {};
  }

  /** Adds nodes to the device plugin simulator and writes their healthy device-info. */
  async addNodes(specs: readonly NpuNodeSpec[]): Promise<WriteAck[]> {
    for (const s of specs) this.devicePlugin.addNode(s);
    return this.devicePlugin.init(specs.map((s) => s.name));
  }

  async inject(spec: InjectSpec): Promise<InjectResult> {
    const { node } = spec;
    switch (spec.kind) {
      case 'npu':
      case 'network': {
        await this.ensureDp(node);
        const npu = need(spec.npu, spec.kind, 'npu');
        const code = need(spec.code, spec.kind, 'code');
        const level = spec.level === undefined ? undefined : npuLevel(spec.level);
        const a = await this.devicePlugin.injectChipFault({
          node, npu, code, kind: spec.kind === 'npu' ? 'card' : 'network',
          ...(level === undefined ? {} : { level }), ...(spec.timeMs === undefined ? {} : { timeMs: spec.timeMs }),
        });
        return fromWrite(spec.kind, a);
      }
      case 'switch': {
        await this.ensureDp(node);
        const code = need(spec.code, spec.kind, 'code');
        const a = await this.devicePlugin.injectSwitchFault({
          node, code, level: switchLevel(code, spec.level),
          ...(spec.switchChipId === undefined ? {} : { switchChipId: spec.switchChipId }),
          ...(spec.switchPortId === undefined ? {} : { switchPortId: spec.switchPortId }),
          ...(spec.timeMs === undefined ? {} : { timeMs: spec.timeMs }),
        });
        return fromWrite(spec.kind, a);
      }
      case 'node': {
        await this.nodeD.adopt(node);
        const a = await this.nodeD.inject({
          node, code: need(spec.code, spec.kind, 'code'),
          ...(spec.level === undefined ? {} : { level: spec.level }),
          ...(spec.deviceType === undefined ? {} : { deviceType: spec.deviceType }),
          ...(spec.deviceId === undefined ? {} : { deviceId: spec.deviceId }),
        });
        return { kind: 'node', node, namespace: a.namespace, name: a.name, resourceVersion: a.resourceVersion, atMs: a.atMs, written: true, deleted: a.deleted };
      }
      case 'public': {
        const a = await this.publicFaults.send({
          code: need(spec.code, spec.kind, 'code'),
          targets: [{ node, ...(spec.npu === undefined ? {} : { npus: [spec.npu] }) }],
          ...(spec.faultId === undefined ? {} : { faultId: spec.faultId }),
          ...(spec.resource === undefined ? {} : { resource: spec.resource }),
          ...(spec.namespace === undefined ? {} : { namespace: spec.namespace }),
          ...(spec.name === undefined ? {} : { name: spec.name }),
          ...(spec.timeMs === undefined ? {} : { timeMs: spec.timeMs }),
        });
        return { kind: 'public', node, namespace: a.namespace, name: a.name, resourceVersion: a.resourceVersion, atMs: a.atMs, written: true, faultId: a.faultId };
      }
      case 'not-ready': {
        const opts: NotReadyOptions = { now: this.now, ...(spec.level === 'Unknown' ? { status: 'Unknown' } : {}), ...(spec.reason === undefined ? {} : { reason: spec.reason }) };
        const a = await setNodeNotReady(this.client, node, opts);
        return { kind: 'not-ready', node, namespace: '', name: node, resourceVersion: a.resourceVersion, atMs: a.atMs, written: true };
      }
    }
  }

  async recover(spec: RecoverSpec): Promise<InjectResult> {
    const { node } = spec;
    switch (spec.kind) {
      case 'npu':
      case 'network': {
        await this.ensureDp(node);
        const npu = spec.npu;
        let a = await this.devicePlugin.recoverChipFault({ node, kind: spec.kind === 'npu' ? 'card' : 'network', ...(npu === undefined ? {} : { npu }), ...(spec.code === undefined ? {} : { code: spec.code }) });
        if (spec.releaseManual === true) {
          const chips = npu === undefined ? [...this.devicePlugin.state(node).manual] : [npu];
          for (const c of chips) a = await this.devicePlugin.releaseManualSeparation(node, c);
        }
        return fromWrite(spec.kind, a);
      }
      case 'switch': {
        await this.ensureDp(node);
        return fromWrite('switch', await this.devicePlugin.recoverSwitchFault(node, spec.code, spec.switchChipId, spec.switchPortId));
      }
      case 'node': {
        await this.nodeD.adopt(node);
        const a = await this.nodeD.recover(node, spec.code, spec.deviceType, spec.deviceId);
        return { kind: 'node', node, namespace: a.namespace, name: a.name, resourceVersion: a.resourceVersion, atMs: a.atMs, written: true, deleted: a.deleted };
      }
      case 'public': {
        const faultId = need(spec.faultId, spec.kind, 'faultId');
        const a = await this.publicFaults.recover(faultId, { ...(spec.name === undefined ? {} : { name: spec.name }), ...(spec.namespace === undefined ? {} : { namespace: spec.namespace }) });
        return { kind: 'public', node, namespace: a.namespace, name: a.name, resourceVersion: a.resourceVersion, atMs: a.atMs, written: true, faultId };
      }
      case 'not-ready': {
        const a = await setNodeReady(this.client, node, this.now);
        return { kind: 'not-ready', node, namespace: '', name: node, resourceVersion: a.resourceVersion, atMs: a.atMs, written: true };
      }
    }
  }

  /** Waits for every coalesced write. */
  async flush(): Promise<void> {
    await Promise.all([this.devicePlugin.flush(), this.nodeD.flush()]);
  }

  /** Flushes, then stops timers. */
  async close(): Promise<void> {
    await this.flush();
    this.devicePlugin.close();
    this.nodeD.close();
  }

  private async ensureDp(node: string): Promise<void> {
    if (!this.devicePlugin.nodeNames().includes(node)) await this.devicePlugin.adopt(node, this.adoptDefaults);
  }
}

function need<T>(v: T | undefined, kind: FaultKind, field: string): T {
  if (v === undefined || v === '') throw new InvalidFaultError(`a ${kind} fault needs ${field}`);
  return v;
}
