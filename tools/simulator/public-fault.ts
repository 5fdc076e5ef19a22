/**
 * A simulated third-party public-fault sender (docs/formats.md#public-fault): a ConfigMap with label
 * mc-consumer-publicfault=true and key PublicFault holding a payload that passes validatePublicFault
 * (13-digit ms times, ids of 8-128 characters, a resource and 9-digit codes from the default config).
 * occur writes the fault; recover rewrites the same CM with the same faultId and assertion `recover`.
 */
import { randomBytes } from 'node:crypto';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import {
  PUBLIC_FAULT_DATA_KEY, PUBLIC_FAULT_LABELS, PUBLIC_FAULT_VERSION, encodePublicFault, parsePublicFaultData, validatePublicFault,
  type PubFault, type PubFaultAssertion, type PubFaultInfo,
} from '../../schemas/public-fault/public-fault.ts';
import { DEFAULT_PUBLIC_FAULT_CONFIG, publicFaultLevel, type PublicFaultConfig } from '../../schemas/public-fault/public-fault-config.ts';
import type { ConfigMap } from './device-plugin.ts';
import { InvalidFaultError, npuPhyId } from './fault-codes.ts';
import { writeConfigMap } from './noded.ts';

/** Where the simulated sender writes: a default sender namespace of clusterd-ts (`--public-fault-namespaces`). */
export const DEFAULT_PUBLIC_FAULT_NAMESPACE = 'mindx-dl';
/** Public code digit 1 -> faultType (T: 0 NPU, 1 node, 2 network, 3 storage; docs/formats.md#public-fault). */
const TYPE_BY_DIGIT = ['NPU', 'Node', 'Network', 'Storage'] as const;

export interface PublicFaultSpec {
  /** 9-digit code from publicFaultConfiguration.json, e.g. 220001001 (SeparateNPU). */
  readonly code: string;
  /** Influenced nodes; `npus` as `Ascend910-3` or `3`, none = node-wide. */
  readonly targets: ReadonlyArray<{ readonly node: string; readonly npus?: ReadonlyArray<string | number> }>;
  readonly assertion?: PubFaultAssertion;
  /** Default `sim-<random>`; recover with the same id. */
  readonly faultId?: string;
  /** Default CCAE. */
  readonly resource?: string;
  /** Default from the code's first digit. */
  readonly faultType?: string;
  readonly description?: string;
  /** Default `public-fault-<faultId>` (lower-cased) in namespace `mindx-dl`. */
  readonly name?: string;
  readonly namespace?: string;
  /** faultTime, Unix ms; default now. */
  readonly timeMs?: number;
}

export interface PublicFaultAck {
  readonly namespace: string;
  readonly name: string;
  readonly faultId: string;
  readonly payload: PubFaultInfo;
  readonly resourceVersion: string;
  readonly atMs: number;
}

const cmNameOf = (faultId: string): string => `public-fault-${faultId.toLowerCase().replace(/[^a-z0-9.-]/g, '-')}`.slice(0, 253).replace(/[^a-z0-9]+$/, '');

/** A fresh payload id per message (8-128 characters). */
const payloadId = (faultId: string, ms: number): string => `${faultId.slice(0, 100)}-${ms}`;

/** Builds and checks the payload; throws with validatePublicFault's reason when it is not valid. */
export function publicFaultPayload(spec: PublicFaultSpec, nowMs: number, config: PublicFaultConfig = DEFAULT_PUBLIC_FAULT_CONFIG): PubFaultInfo {
  if (publicFaultLevel(config, spec.code) === undefined) {
    throw new InvalidFaultError(`public fault code ${JSON.stringify(spec.code)} is not in publicFaultConfiguration (known: ${Object.values(config.publicFaultCode).flat().join(', ')})`);
  }
  const faultId = spec.faultId ?? `sim-${randomBytes(6).toString('hex')}`;
  const fault: PubFault = {
    faultId,
    faultType: spec.faultType ?? TYPE_BY_DIGIT[Number(spec.code[0])] ?? 'NPU',
    faultCode: spec.code,
    faultTime: spec.timeMs ?? nowMs,
    assertion: spec.assertion ?? 'occur',
    faultLocation: null,
    influence: spec.targets.map((t) => ({
      nodeName: t.node,
      nodeSN: '',
      deviceIds: t.npus === undefined || t.npus.length === 0 ? null : t.npus.map((n) => {
        const id = typeof n === 'number' ? n : npuPhyId(n);
        if (id === undefined) throw new InvalidFaultError(`bad NPU ${JSON.stringify(n)} (want Ascend910-<id> or <id>)`);
        return id;
      }),
    })),
    description: spec.description ?? 'simulated public fault',
  };
  const payload: PubFaultInfo = { id: payloadId(faultId, nowMs), timestamp: nowMs, version: PUBLIC_FAULT_VERSION, resource: spec.resource ?? 'CCAE', faults: [fault] };
  const checked = validatePublicFault(JSON.parse(encodePublicFault(payload)), config);
  if (!checked.ok) throw new InvalidFaultError(`invalid public fault: ${checked.reason}`);
  return payload;
}

export class PublicFaultSender {
  private readonly client: KubeClient;
  private readonly now: () => number;
  private readonly config: PublicFaultConfig;
  /** faultId -> where its CM is and what it last said. */
  private readonly sent = new Map<string, { namespace: string; name: string; payload: PubFaultInfo }>();

  constructor(client: KubeClient, opts: { now?: () => number; config?: PublicFaultConfig } = {}) {
    this.client = client;
    this.now = opts.now ?? Date.now;
    this.config = opts.config ?? DEFAULT_PUBLIC_FAULT_CONFIG;
  }

  /** Writes (creates or replaces) the public-fault CM for spec. */
  async send(spec: PublicFaultSpec): Promise<PublicFaultAck> {
    const payload = publicFaultPayload(spec, this.now(), this.config);
    const faultId = payload.faults[0]!.faultId;
    const namespace = spec.namespace ?? DEFAULT_PUBLIC_FAULT_NAMESPACE;
    const name = spec.name ?? cmNameOf(faultId);
    return this.write(namespace, name, payload);
  }

  /**
   * Sends `recover` for a fault sent earlier: by faultId from memory, or by reading the CM (`name`,
   * `namespace`) a previous process wrote. Deleting the CM would not clear the fault in ClusterD.
   */
  async recover(faultId: string, where: { name?: string; namespace?: string } = {}): Promise<PublicFaultAck> {
    let prev = this.sent.get(faultId)?.payload;
    const namespace = where.namespace ?? this.sent.get(faultId)?.namespace ?? DEFAULT_PUBLIC_FAULT_NAMESPACE;
    const name = where.name ?? this.sent.get(faultId)?.name ?? cmNameOf(faultId);
    if (prev === undefined) {
      const cm = await this.client.getOrUndefined<ConfigMap>(paths.configMap(namespace, name));
      if (cm === undefined) throw new InvalidFaultError(`no public fault ${faultId}: ConfigMap ${namespace}/${name} not found`);
      const parsed = parsePublicFaultData(cm.data, this.config);
      if (!parsed.ok) throw new InvalidFaultError(`ConfigMap ${namespace}/${name}: ${parsed.reason}`);
      prev = parsed.value;
    }
    const fault = prev.faults.find((f) => f.faultId === faultId);
    if (fault === undefined) throw new InvalidFaultError(`ConfigMap ${namespace}/${name} has no fault ${faultId}`);
    const now = this.now();
    const payload: PubFaultInfo = { ...prev, id: payloadId(faultId, now), timestamp: now, faults: [{ ...fault, assertion: 'recover', faultTime: now }] };
    return this.write(namespace, name, payload);
  }

  private async write(namespace: string, name: string, payload: PubFaultInfo): Promise<PublicFaultAck> {
    const cm: ConfigMap = {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name, namespace, labels: { ...PUBLIC_FAULT_LABELS } },
      data: { [PUBLIC_FAULT_DATA_KEY]: encodePublicFault(payload) },
    };
    const saved = await writeConfigMap(this.client, cm);
    const faultId = payload.faults[0]!.faultId;
    this.sent.set(faultId, { namespace, name, payload });
    return { namespace, name, faultId, payload, resourceVersion: saved.metadata?.resourceVersion ?? '', atMs: this.now() };
  }
}
