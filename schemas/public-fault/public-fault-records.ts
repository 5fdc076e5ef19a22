/**
 * Public faults -> FaultRecords (source 'public'), behavior.md A.3 #19: injected on `<devType>-<id>`
 * NPUs of each influenced node, or node-wide when no device ids are given.
 */
import type { FaultRecord } from '../../vocabulary/fault-types.ts';
import { DEFAULT_PUBLIC_FAULT_CONFIG, publicFaultLevel, type PublicFaultConfig } from './public-fault-config.ts';
import type { PubFaultAssertion, PubFaultInfluence, PubFaultInfo } from './public-fault.ts';

/** A record plus what the assertion state machine (policy) needs. */
export interface PublicFaultRecord {
  readonly assertion: PubFaultAssertion;
  readonly resource: string;
  readonly faultId: string;
  /** NPU | Node | Network | Storage. */
  readonly faultType: string;
  readonly record: FaultRecord;
}

export interface PublicFaultRecordOptions {
  readonly config?: PublicFaultConfig;
  /** Node name for a `product-serial-number`; used only when an influence has no nodeName. */
  readonly nodeBySn: (sn: string) => string | undefined;
  /** Chip name prefix on a node (default `Ascend910`, giving `Ascend910-<id>`). */
  readonly npuNamePrefix?: (node: string) => string;
}

export interface PublicFaultRecords {
  readonly records: readonly PublicFaultRecord[];
  /** Influences whose node could not be resolved (nodeSN unknown), for logging. */
  readonly unresolved: readonly PubFaultInfluence[];
}

/** Expands a validated payload. Codes missing from the config are dropped (validation rejects them). */
export function publicFaultRecords(info: PubFaultInfo, opts: PublicFaultRecordOptions): PublicFaultRecords {
  const cfg = opts.config ?? DEFAULT_PUBLIC_FAULT_CONFIG;
  const prefixOf = opts.npuNamePrefix ?? ((): string => 'Ascend910');
  const records: PublicFaultRecord[] = [];
  const unresolved: PubFaultInfluence[] = [];
  for (const f of info.faults) {
    const level = publicFaultLevel(cfg, f.faultCode);
    if (level === undefined) continue;
    const base = { assertion: f.assertion, resource: info.resource, faultId: f.faultId, faultType: f.faultType };
    for (const inf of f.influence) {
      const node = inf.nodeName !== '' ? inf.nodeName : opts.nodeBySn(inf.nodeSN);
      if (node === undefined || node === '') {
        unresolved.push(inf);
        continue;
      }
      const common = { node, source: 'public', code: f.faultCode, level, reportedLevel: level, firstSeenMs: f.faultTime, detail: `${info.resource}/${f.faultId}` } as const;
      const ids = inf.deviceIds ?? [];
      if (ids.length === 0) records.push({ ...base, record: common });
      for (const id of ids) records.push({ ...base, record: { ...common, device: `${prefixOf(node)}-${id}` } });
    }
  }
  return { records, unresolved };
}
