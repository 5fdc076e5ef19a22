/**
 * `volcano-system/vcjob-fault-npu-cm` (docs/formats.md#vcjob-fault-npu-cm, docs/rules.md#resched.fault-nodes, #resched.retry-budget): `fault-node` and
 * `remain-retry-times`, merged into the existing ConfigMap (keys we do not own are kept).
 *
 * fault-node (docs/rules.md#resched.fault-nodes), from the effective fault records of every node:
 * - Node NotReady/missing -> NodeUnhealthy, one device entry `fault_code: heartbeatTimeOut` with empty
 *   npu name and levels (Volcano's reason code `heartbeatTimeOut`, `component/ascend-for-volcano/internal/rescheduling/type.go`);
 * - NodeD or UB-switch faults that make the node UnHealthy (any level but NotHandle, PreSeparate,
 *   SubHealth) -> NodeUnhealthy, one entry per code (npu name and levels empty: "left empty for node faults");
 * - chips not usable for new work (policy/faults/job-isolation.ts unusableNpus: the chip left `<P>`) ->
 *   `UnhealthyNPU` / `NetworkUnhealthyNPU`, one entry per chip with the most serious level and its codes.
 * NodeHealthState = NodeUnhealthy > CardUnhealthy > CardNetworkUnhealthy; healthy nodes are not listed.
 * Volcano stamps `UpdateTime` with its session time; to keep the bytes stable we use the newest
 * first-seen time of the node's listed faults (seconds). Nodes sorted by name.
 *
 * remain-retry-times (docs/rules.md#resched.retry-budget): every job in the session with `fault-retry-times` > 0, keyed
 * `<ns>/<jobName>-<uid>`, from the persisted budget (or N when the job has not restarted yet).
 */
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { unusableNpus } from '../policy/faults/job-isolation.ts';
import { HEARTBEAT_TIMEOUT_CODE } from '../policy/jobs/job-aggregation.ts';
import { syncRetryBudget, type RetryBudget } from '../policy/jobs/job-retry-budget.ts';
import {
  VCJOB_FAULT_NPU_CM_NAME, VCJOB_FAULT_NPU_NAMESPACE, encodeVcjobFaultNpuData,
  type FaultDeviceList, type FaultNode, type RemainRetryTimes,
} from '../schemas/vcjob-fault-npu/vcjob-fault-npu.ts';

export const VCJOB_FAULT_NPU_KEY = 'vcjob-fault-npu-cm';

const NODE_OK_LEVELS: ReadonlySet<string> = new Set(['NotHandleFault', 'NormalNPU', 'PreSeparateNPU', 'SubHealthFault']);

const nodeEntry = (code: string): FaultDeviceList => ({
  fault_type: 'NodeUnhealthy', npu_name: '', fault_level: '', fault_handling: '', large_model_fault_level: '', fault_code: code,
});

/** The fault-node entry of one node, or undefined when Volcano would not call it a fault node (pure). */
export function faultNodeOf(node: string, records: readonly FaultRecord[]): FaultNode | undefined {
  const devices: FaultDeviceList[] = [];
  const used: number[] = [];
  let nodeUnhealthy = false;
  for (const r of records) {
    if (r.source === 'node-ready') {
      nodeUnhealthy = true;
      devices.push(nodeEntry(HEARTBEAT_TIMEOUT_CODE));
      used.push(r.firstSeenMs);
    } else if ((r.source === 'node' || r.source === 'switch') && !NODE_OK_LEVELS.has(r.level)) {
      nodeUnhealthy = true;
      devices.push(nodeEntry(r.code));
      used.push(r.firstSeenMs);
    }
  }
  const chips = unusableNpus(records).get(node) ?? [];
  const unhealthy: string[] = [];
  const network: string[] = [];
  for (const c of chips) {
    (c.faultType === 'CardUnhealthy' ? unhealthy : network).push(c.npu);
    devices.push({
      fault_type: c.faultType, npu_name: c.npu, fault_level: c.level, fault_handling: c.level, large_model_fault_level: c.level, fault_code: c.codes.join(','),
    });
    for (const r of records) if (r.device === c.npu) used.push(r.firstSeenMs);
  }
  if (!nodeUnhealthy && chips.length === 0) return undefined;
  const state = nodeUnhealthy ? 'NodeUnhealthy' : unhealthy.length > 0 ? 'CardUnhealthy' : 'CardNetworkUnhealthy';
  const uniq = [...new Map(devices.map((d) => [`${d.fault_type}|${d.npu_name}|${d.fault_code}`, d])).values()];
  return {
    FaultDeviceList: uniq, NodeName: node, UnhealthyNPU: unhealthy, NetworkUnhealthyNPU: network,
    NodeHealthState: state, UpdateTime: Math.floor(Math.max(0, ...used) / 1000),
  };
}

export interface RetryJob {
  readonly key: string;
  readonly uid: string;
  readonly faultRetryTimes: number;
  /** The persisted budget, if any. */
  readonly budget?: RetryBudget;
}

/** remain-retry-times entries (pure). */
export function remainRetryTimesOf(jobs: readonly RetryJob[]): Map<string, RemainRetryTimes> {
  const out = new Map<string, RemainRetryTimes>();
  for (const j of [...jobs].sort((a, b) => a.key.localeCompare(b.key))) {
    const b = syncRetryBudget(j.budget, j.uid, j.faultRetryTimes);
    if (b !== undefined) out.set(j.key, { UUID: b.uid, Times: b.times });
  }
  return out;
}

export interface VcjobFaultNpuDeps {
  readonly nodes: () => readonly string[];
  readonly faultsOf: (node: string) => readonly FaultRecord[];
  readonly retryJobs: () => readonly RetryJob[];
  readonly cached: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
}

export function vcjobFaultNpuReconciler(d: VcjobFaultNpuDeps): Reconciler {
  return {
    name: 'vcjob_fault_npu',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const faultNodes = [...d.nodes()].sort().flatMap((n) => faultNodeOf(n, d.faultsOf(n)) ?? []);
      const remainRetryTimes = remainRetryTimesOf(d.retryJobs());
      const actual = d.cached();
      if (actual === undefined && faultNodes.length === 0 && remainRetryTimes.size === 0) return {};
      const data = encodeVcjobFaultNpuData({ faultNodes, remainRetryTimes }, actual?.data);
      const res = await d.writer.ensure('vcjob_fault_npu', { namespace: VCJOB_FAULT_NPU_NAMESPACE, name: VCJOB_FAULT_NPU_CM_NAME, data }, actual);
      if (res.written) ctx.log.info('vcjob-fault-npu-cm written', { faultNodes: faultNodes.map((n) => n.NodeName), jobsWithBudget: remainRetryTimes.size });
      return {};
    },
  };
}
