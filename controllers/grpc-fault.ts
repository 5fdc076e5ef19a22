/**
 * The `fault.Fault` publisher (docs/grpc.md#fault-service, docs/rules.md#job.fault-subscription): registered clients of a job
 * get a `fault` FaultMsgSignal whenever the fault picture of the job's nodes changes, and one
 * `normal` message once it clears. A cluster-wide client (jobId `-1`) gets the same messages of
 * every job, each carrying that job's id (ClusterD's dealWithFaultInfoForClusterJob,
 * component/clusterd/pkg/application/fault/publish_fault_plugin.go): faults of nodes without a job
 * are not pushed. GetFaultMsgSignal answers the current picture: cluster-wide always a message
 * (`normal` and empty when nothing is faulty), for a job a message when the job is known, else null.
 *
 * A MindIE job id (the `jobID` label its instance jobs' PodGroups share) is a job id too: its
 * subscribers get the picture of the nodes of every instance job, under that id (ClusterD's
 * MultiInstanceJobId, component/clusterd/pkg/application/fault/publish_fault_plugin.go); GetFaultMsgSignal knows no such id, as ClusterD's.
 *
 * Picture: per node with faults (NotHandleFault dropped, docs/rules.md#job.subscriber-levels; hidden faults included, docs/rules.md#filter.two-views), the
 * node's level and one DeviceFaultInfo per chip (deviceId = chip index, deviceType `NPU`) or per
 * node-wide source (deviceId `-1`, deviceType `Node` / `Switch`); a NotReady node is an entry of its
 * own with no code and no level, as ClusterD's (its node-ready fault has no code). Levels: UnHealthy when any fault
 * is above SubHealth/NotHandle/PreSeparate, SubHealthy with a SubHealthFault, else Healthy.
 */
import { randomUUID } from 'node:crypto';
import type { SignalStream, StreamSubscription } from '../grpc/handlers.ts';
import type { DeviceFaultInfo, FaultMsgSignal, NodeFaultInfo } from '../grpc/messages.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { npuId } from '../policy/jobs/job-view.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Sources } from './sources/sources.ts';
import type { FaultSubscriptions } from './ports.ts';

export const CLUSTER_JOB = '-1';
type Level = 'Healthy' | 'SubHealthy' | 'UnHealthy';

const DROPPED: ReadonlySet<string> = new Set(['NotHandleFault', 'NormalNPU']);
const HEALTHY: ReadonlySet<string> = new Set(['SubHealthFault', 'NotHandleFault', 'PreSeparateNPU', 'NormalNPU']);

function levelOf(records: readonly FaultRecord[]): Level {
  if (records.some((r) => !HEALTHY.has(r.level))) return 'UnHealthy';
  return records.some((r) => r.level === 'SubHealthFault') ? 'SubHealthy' : 'Healthy';
}

const deviceTypeOf = (r: FaultRecord): string =>
  r.device !== undefined && r.source !== 'node' && r.source !== 'switch' ? 'NPU' : r.source === 'switch' ? 'Switch' : 'Node';

/** One node's entry (pure). */
export function nodeFaultInfo(node: string, records: readonly FaultRecord[], meta: { ip: string; sn: string }): NodeFaultInfo | undefined {
  const coded = (r: FaultRecord): boolean => r.source !== 'node-ready';
  const kept = records.filter((r) => !DROPPED.has(r.level));
  if (kept.length === 0) return undefined;
  const groups = new Map<string, FaultRecord[]>();
  for (const r of kept) {
    const type = deviceTypeOf(r);
    const id = type === 'NPU' ? npuId(r.device!) : '-1';
    const k = `${type}/${id}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const faultDevice: DeviceFaultInfo[] = [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, rs]) => {
    const [deviceType = 'Node', deviceId = '-1'] = k.split('/');
    const sorted = rs.filter(coded).sort((a, b) => a.code.localeCompare(b.code));
    return {
      deviceId, deviceType, faultCodes: sorted.map((r) => r.code), faultLevel: levelOf(rs),
      faultType: [], faultReason: [], switchFaultInfos: [], faultLevels: sorted.map((r) => r.level),
    };
  });
  return { nodeName: node, nodeIP: meta.ip, nodeSN: meta.sn, faultLevel: levelOf(kept), faultDevice };
}

export interface FaultPublisherDeps {
  readonly sources: Pick<Sources, 'nodes'>;
  readonly faultsOf: (node: string) => readonly FaultRecord[];
  /** Every node with records (cluster-wide view). */
  readonly faultNodes: () => Iterable<string>;
  /** The nodes of a job's pods; undefined when the job is unknown. */
  readonly jobNodes: (jobId: string) => readonly string[] | undefined;
  /** The ids of every known job (what a cluster-wide subscriber is told about). */
  readonly jobIds: () => Iterable<string>;
  /**
   * A job's node -> the host IP its pod there was allocated (the device plugin's annotation
   * `host_ip`): a job's messages carry it as nodeIP, as ClusterD's (its FaultDevice.HostIp comes from
   * the job's server list, component/clusterd/pkg/domain/pod/pod_util.go getServerInfo).
   */
  readonly jobHostIps?: (jobId: string) => ReadonlyMap<string, string>;
  /** The nodes and host IPs of the instance jobs a MindIE job id names; undefined when it names none. */
  readonly multiInstance?: (jobId: string) => { readonly nodes: readonly string[]; readonly hostIps: ReadonlyMap<string, string> } | undefined;
  /**
   * A job gained its first or lost its last subscriber. The MindIE hold (docs/rules.md#filter.mindie-hold) depends on it, so
   * the scheduler view of the job's nodes may change with no new fault.
   */
  readonly subscriptionChanged?: (jobId: string, nodes: readonly string[]) => void;
  readonly log: Logger;
}

/** What a subscriber was last sent about one job: the picture's text, and whether it was a fault. */
interface Sent { last: string; faulty: boolean }
/** Per job it was told about (one entry, its own job, for a job's subscriber). */
interface Subscriber { readonly stream: SignalStream<FaultMsgSignal>; readonly sent: Map<string, Sent> }

export class FaultPublisher implements FaultSubscriptions {
  private readonly d: FaultPublisherDeps;
  private readonly subscribers = new Map<number, Subscriber>();

  constructor(d: FaultPublisherDeps) {
    this.d = d;
  }

  private meta(node: string): { ip: string; sn: string } {
    const n = this.d.sources.nodes.get(node);
    const addrs = n?.status?.addresses ?? [];
    return { ip: addrs.find((a) => a.type === 'InternalIP')?.address ?? '', sn: n?.metadata?.annotations?.['product-serial-number'] ?? '' };
  }

  /** The fault entries of a job's nodes (all nodes for `-1`). */
  picture(jobId: string): NodeFaultInfo[] {
    if (jobId === CLUSTER_JOB) return [...new Set(this.d.faultNodes())].sort().flatMap((n) => nodeFaultInfo(n, this.d.faultsOf(n), this.meta(n)) ?? []);
    const own = this.d.jobNodes(jobId);
    const multi = own === undefined ? this.d.multiInstance?.(jobId) : undefined;
    const ips = multi?.hostIps ?? this.d.jobHostIps?.(jobId);
    return [...new Set(own ?? multi?.nodes ?? [])].sort().flatMap((n) => nodeFaultInfo(n, this.d.faultsOf(n), { ...this.meta(n), ...(ips === undefined ? {} : { ip: ips.get(n) ?? '' }) }) ?? []);
  }

  query(jobId: string): FaultMsgSignal | null {
    if (jobId !== CLUSTER_JOB && this.d.jobNodes(jobId) === undefined) return null;
    const nodes = this.picture(jobId);
    return { uuid: randomUUID(), jobId, signalType: nodes.length > 0 ? 'fault' : 'normal', nodeFaultInfo: nodes };
  }

  subscribe(stream: SignalStream<FaultMsgSignal>): StreamSubscription {
    const sub: Subscriber = { stream, sent: new Map() };
    const jobId = stream.client.jobId;
    const first = !this.subscribed(jobId);
    this.subscribers.set(stream.id, sub);
    if (first) this.announce(jobId);
    this.push(sub);
    return {
      onClose: () => {
        if (this.subscribers.delete(stream.id) && !this.subscribed(jobId)) this.announce(jobId);
      },
    };
  }

  private announce(jobId: string): void {
    if (jobId === CLUSTER_JOB || this.d.subscriptionChanged === undefined) return;
    this.d.subscriptionChanged(jobId, this.d.jobNodes(jobId) ?? this.d.multiInstance?.(jobId)?.nodes ?? []);
  }

  /** A client of this job (not the cluster-wide `-1`) holds a subscription (the MindIE hold, docs/rules.md#filter.mindie-hold). */
  subscribed(jobId: string, role?: string): boolean {
    for (const s of this.subscribers.values()) if (s.stream.client.jobId === jobId && (role === undefined || s.stream.client.role === role)) return true;
    return false;
  }

  /** Node faults or job membership changed: push what changed to each subscriber. */
  changed(): void {
    for (const sub of this.subscribers.values()) this.push(sub);
  }

  private push(sub: Subscriber): void {
    const own = sub.stream.client.jobId;
    if (own !== CLUSTER_JOB) {
      this.pushJob(sub, own);
      return;
    }
    const jobs = new Set(this.d.jobIds());
    for (const jobId of sub.sent.keys()) if (!jobs.has(jobId)) sub.sent.delete(jobId); // a job gone: no message
    for (const jobId of jobs) this.pushJob(sub, jobId);
  }

  /** The picture of one job, to a subscriber of that job or a cluster-wide one, when it changed. */
  private pushJob(sub: Subscriber, jobId: string): void {
    const nodes = this.picture(jobId);
    const text = JSON.stringify(nodes);
    const sent = sub.sent.get(jobId) ?? { last: '', faulty: false };
    if (text === sent.last) return;
    sub.sent.set(jobId, { last: text, faulty: nodes.length > 0 });
    if (nodes.length === 0 && !sent.faulty) return;
    const msg: FaultMsgSignal = { uuid: randomUUID(), jobId, signalType: nodes.length > 0 ? 'fault' : 'normal', nodeFaultInfo: nodes };
    void sub.stream.send(msg).then((ok) => {
      if (!ok) this.d.log.debug('fault message not delivered', { jobId, streamId: sub.stream.id });
    });
  }
}
