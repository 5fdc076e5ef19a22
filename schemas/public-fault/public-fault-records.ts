/**
 * Public faults -> FaultRecords (source 'public'), docs/rules.md#ingest.public-faults: injected on `<devType>-<id>`
 * NPUs of each influenced node, or node-wide when no device ids are given.
 */
import { DEFAULT_PUBLIC_FAULT_CONFIG, publicFaultLevel, type PublicFaultConfig, type PublicFaultLevel } from './public-fault-config.ts';
import type { PubFaultAssertion, PubFaultInfo } from './public-fault.ts';

export interface PublicFaultItemOptions {
  readonly config?: PublicFaultConfig;
  /** Node name for a `product-serial-number`; used only when an influence has no nodeName. */
  readonly nodeBySn: (sn: string) => string | undefined;
}

/**
 * One (fault, influence) of a message, in message order: ClusterD's unit of work (fault_collector.go
 * PubFaultCollector calls dealFault once per influence of each fault, in order).
 */
export interface PublicFaultItem {
  readonly assertion: PubFaultAssertion;
  readonly node: string;
  readonly resource: string;
  readonly faultId: string;
  readonly faultType: string;
  readonly code: string;
  readonly level: PublicFaultLevel;
  /** Unix ms, as sent (ClusterD keeps it in seconds). */
  readonly faultTimeMs: number;
  /** Physical NPU ids (at least one: validation drops a fault with an influence without). */
  readonly devIds: readonly number[];
}

export interface PublicFaultItems {
  readonly items: readonly PublicFaultItem[];
  /** Faults left out because an influence names a serial number no Node has (ClusterD checkNodeNameOrSN). */
  readonly unresolved: readonly string[];
}

/** Expands a validated payload into its items; a fault with an unresolvable influence is left out whole. */
export function publicFaultItems(info: PubFaultInfo, opts: PublicFaultItemOptions): PublicFaultItems {
  const cfg = opts.config ?? DEFAULT_PUBLIC_FAULT_CONFIG;
  const items: PublicFaultItem[] = [];
  const unresolved: string[] = [];
  for (const f of info.faults) {
    const level = publicFaultLevel(cfg, f.faultCode);
    if (level === undefined) continue;
    const nodes = f.influence.map((inf) => (inf.nodeName !== '' ? inf.nodeName : opts.nodeBySn(inf.nodeSN) ?? ''));
    if (nodes.includes('')) { unresolved.push(f.faultId); continue; }
    f.influence.forEach((inf, i) => items.push({
      assertion: f.assertion, node: nodes[i]!, resource: info.resource, faultId: f.faultId, faultType: f.faultType,
      code: f.faultCode, level, faultTimeMs: f.faultTime, devIds: [...(inf.deviceIds ?? [])],
    }));
  }
  return { items, unresolved };
}
