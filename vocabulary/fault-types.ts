/**
 * The shared fault vocabulary of the decision layer (docs/formats.md#fault-code-json, #level-vocabularies). Spelt as on the wire.
 * Every source (device-info, node-info, Node Ready, switch info, public faults, gRPC) is normalised by
 * its schema module into FaultRecords; policy/ works only on these.
 */

/** NPU fault levels, most serious first (getMostSeriousFaultType). */
export const NPU_LEVELS_BY_SEVERITY = [
  'ManuallySeparateNPU',
  'SeparateNPU',
  'PreSeparateNPU',
  'RestartNPU',
  'FreeRestartNPU',
  'RestartBusiness',
  'RestartRequest',
  'SubHealthFault',
  'NotHandleFault',
  'NormalNPU',
] as const;
export type NpuFaultLevel = (typeof NPU_LEVELS_BY_SEVERITY)[number];

/** Higher = more serious. Unknown strings rank below NormalNPU. */
export function severityRank(level: string): number {
  const i = (NPU_LEVELS_BY_SEVERITY as readonly string[]).indexOf(level);
  return i < 0 ? -1 : NPU_LEVELS_BY_SEVERITY.length - i;
}

export function mostSerious<L extends string>(levels: Iterable<L>): L | undefined {
  let best: L | undefined;
  for (const l of levels) if (best === undefined || severityRank(l) > severityRank(best)) best = l;
  return best;
}

/** Where a fault was observed. */
export type FaultSource =
  | 'npu' // device-info <P>-Fault, fault_type CardUnhealthy
  | 'network' // device-info <P>-Fault, fault_type CardNetworkUnhealthy (parameter plane)
  | 'switch' // device-info SwitchInfoCfg (UnifiedBus)
  | 'node' // NodeD node-info FaultDevList
  | 'node-ready' // Kubernetes Node Ready condition false/unknown, or node deleted
  | 'public'; // public-fault ConfigMap or gRPC PubFault

/**
 * One fault code on one device (or on the node when `device` is undefined), as the controller sees it
 * after splitting a source's merged entries (ClusterD splitDeviceFault). `level` is the level the
 * source reported, mapped into the NPU vocabulary (NodeD SeparateFault -> SeparateNPU etc.); policy
 * may re-level it.
 */
export interface FaultRecord {
  readonly node: string;
  /** Chip name as on the wire, e.g. `Ascend910-3`; undefined for node/switch-wide faults. */
  readonly device?: string;
  readonly source: FaultSource;
  /** Upper-case hex code as written (no 0x), or a pseudo code such as `ManuallySeparateNPU`, `heartbeatTimeOut`. */
  readonly code: string;
  readonly level: NpuFaultLevel;
  /** The level exactly as the source spelt it (e.g. `PreSeparateFault`, `Separate`), for explanations. */
  readonly reportedLevel: string;
  /** When the fault was first seen, Unix ms (from fault_time where present, else first observation). */
  readonly firstSeenMs: number;
  /** Free-form origin detail for explanations (e.g. `PSU#1`, switch port key, public fault id). */
  readonly detail?: string;
  /** Public faults: who sent it (the ConfigMap's `namespace/name`, `grpc-pubfault/<resource>`), for the breaker's accounting. */
  readonly origin?: string;
}

/** Stable identity of a fault record: one code on one device of one node from one source. */
export const faultKey = (f: Pick<FaultRecord, 'node' | 'device' | 'source' | 'code'>): string =>
  `${f.node}/${f.device ?? '-'}/${f.source}/${f.code}`;
