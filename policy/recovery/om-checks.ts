/**
 * The checks of StressTest and SwitchNicTrack and what they resolve the request to
 * (docs/rules.md#recover.stress-test, #recover.switch-nic): ClusterD's checkStressTestParam / getNodeRankOpsMap and
 * checkNicsParam / getGlobalRankIDAndOp (CD/application/recover/om_service.go), over the job's rank
 * table. Messages are ClusterD's, word for word (typos included). Go iterates maps in random
 * order; we go by sorted node name, so with several bad nodes the one named may differ.
 */
import type { JobView } from '../jobs/job-view.ts';
import type { OmStart } from './recovery-types.ts';

/** One server of the job's rank table: node name, its devices and their global ranks. */
export interface RankServer {
  readonly node: string;
  readonly devices: ReadonlyArray<{ readonly deviceId: string; readonly rankId: string }>;
}

/** Supported stress ops: 0 AIC, 1 P2P (om_service.go stressOps). */
export const STRESS_OPS: readonly number[] = [0, 1];

const deviceNumber = (npu: string): string => /(\d+)$/.exec(npu)?.[1] ?? npu;

/**
 * The rank table ClusterD builds for a running job: per rank pod (by `hccl/rankIndex`), its node and
 * chips in device order, global rank = pod rank x chips per pod + index.
 */
export function rankTable(view: Pick<JobView, 'pods'>, ranksPerPod: number): RankServer[] {
  const pods = view.pods.filter((p) => p.rank !== undefined && p.node !== undefined && p.terminating !== true && p.backup !== true)
    .sort((a, b) => a.rank! - b.rank!);
  return pods.map((p) => ({
    node: p.node!,
    devices: [...p.npus].map(deviceNumber).sort((a, b) => Number(a) - Number(b))
      .map((deviceId, i) => ({ deviceId, rankId: String(p.rank! * ranksPerPod + i) })),
  }));
}

/** Rank -> node and rank -> device of a rank table. */
export function rankMaps(servers: readonly RankServer[]): Pick<OmStart, 'rankNode' | 'rankDevice'> {
  const rankNode: Record<string, string> = {};
  const rankDevice: Record<string, string> = {};
  for (const s of servers) for (const d of s.devices) {
    rankNode[d.rankId] = s.node;
    rankDevice[d.rankId] = d.deviceId;
  }
  return { rankNode, rankDevice };
}

/** Go's `%v` of an []int64. */
const goInts = (xs: readonly number[]): string => `[${xs.join(' ')}]`;

export type OmCheck = { readonly ok: true; readonly start: OmStart } | { readonly ok: false; readonly info: string };

export interface OmJobFacts {
  /** The job is known (ClusterD's job cache). */
  readonly exists: boolean;
  /** The job registered over gRPC (has its controller). */
  readonly registered: boolean;
  readonly servers: readonly RankServer[];
}

function validateOps(ops: readonly number[], node: string): string | undefined {
  for (const op of ops) if (!STRESS_OPS.includes(op)) return `op:${op} not exist in support operation:${goInts(STRESS_OPS)}`;
  if (new Set(ops).size !== ops.length) return `node:${node} stress test ops should not repeat`;
  return undefined;
}

/** checkStressTestParam, then getNodeRankOpsMap. */
export function checkStressTest(
  req: { readonly jobId: string; readonly stressParam: Readonly<Record<string, readonly number[] | null>>; readonly allNodesOps: readonly number[] },
  job: OmJobFacts,
): OmCheck {
  if (!job.exists) return { ok: false, info: `job:${req.jobId} not exist` };
  if (!job.registered) return { ok: false, info: `job:${req.jobId} is not registered` };
  const stress: Record<string, Record<string, number[]>> = {};
  const base = { kind: 'stressTest' as const, switchRanks: [], switchOps: [], ...rankMaps(job.servers) };
  if (req.allNodesOps.length > 0) {
    const bad = validateOps(req.allNodesOps, 'AllNodes');
    if (bad !== undefined) return { ok: false, info: bad };
    for (const s of job.servers) stress[s.node] = Object.fromEntries(s.devices.map((d) => [d.rankId, [...req.allNodesOps]]));
    return { ok: true, start: { ...base, stress } };
  }
  const nodes = Object.keys(req.stressParam).sort();
  if (nodes.length === 0) return { ok: false, info: 'stress test node is nil' };
  for (const node of nodes) {
    const ops = req.stressParam[node];
    if (ops === null || ops === undefined) return { ok: false, info: `node:${node} stress test ops is nil` };
    if (ops.length === 0) return { ok: false, info: `node:${node} stress test ops is 0` };
    const server = job.servers.find((s) => s.node === node);
    if (server === undefined) return { ok: false, info: `node:${node} not exist in job:${req.jobId}` };
    const bad = validateOps(ops, node);
    if (bad !== undefined) return { ok: false, info: bad };
    stress[node] = Object.fromEntries(server.devices.map((d) => [d.rankId, [...ops]]));
  }
  return { ok: true, start: { ...base, stress } };
}

/** checkNicsParam, then getGlobalRankIDAndOp. */
export function checkSwitchNic(
  req: { readonly jobId: string; readonly nicOps: Readonly<Record<string, { readonly dev: readonly string[]; readonly op: readonly boolean[] }>> },
  job: OmJobFacts & {
    /** ClusterD's job status is Running. */
    readonly running: boolean;
    /** The node's device-info `SuperPodID`; undefined without a device-info of the node. */
    readonly superPodId: (node: string) => number | undefined;
  },
): OmCheck {
  if (!job.exists) return { ok: false, info: `job:${req.jobId} not exist` };
  if (!job.registered) return { ok: false, info: `job:${req.jobId} is not registered` };
  if (!job.running) return { ok: false, info: `job:${req.jobId} is not running` };
  const switchRanks: string[] = [];
  const switchOps: boolean[] = [];
  for (const node of Object.keys(req.nicOps).sort()) {
    const devs = req.nicOps[node]!;
    const server = job.servers.find((s) => s.node === node);
    const superPod = job.superPodId(node);
    if (server === undefined || superPod === undefined) return { ok: false, info: `node:${node} not exist in job:${req.jobId}` };
    if (devs.dev.length !== devs.op.length) return { ok: false, info: 'dev and op length is not equal' };
    if (devs.dev.length === 0) return { ok: false, info: 'dev or op is empty' };
    const missing = devs.dev.find((d) => !server.devices.some((x) => x.deviceId === d));
    if (missing !== undefined) return { ok: false, info: `device:${missing} not exist in node:${node}` };
    if (superPod < 0) return { ok: false, info: `node:${node} should operate in superPodID` };
    for (const d of devs.dev) switchRanks.push(server.devices.find((x) => x.deviceId === d)!.rankId);
    switchOps.push(...devs.op);
  }
  return { ok: true, start: { kind: 'switchNic', stress: {}, switchRanks, switchOps, ...rankMaps(job.servers) } };
}
