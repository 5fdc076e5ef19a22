/**
 * A3 super-pods against the real ClusterD (docs/rules.md#job.relation-faults, #ingest.pre-separate):
 * - `a3-switch-cqe`: a job of two pods on two nodes of super-pod 0 (device-info SuperPodID 0,
 *   ServerIndex 0/1, SwitchInfoCfg reported). A UB switch link-down on node-a held past its window
 *   (ClusterD: the node's pod gets `fault-type=SubHealth`); then a device link-down 81078603 on node-b
 *   and a CQE 8C1F8608 on node-a: on an A3 job the CQE is no immediate trigger (nothing at once), the
 *   link-down timing out with the CQE inside its window labels node-b's pod `fault-type=Separate`.
 *   Both sides read the same relationFaultCustomization.json (the shipped one) and a faultDuration.json
 *   of 20 s windows (ClusterD from /home/hwMindX, ours from --relation-fault-config-dir).
 * - `preseparate-chip`: a PreSeparateNPU chip fault on a chip the job's pod uses (out of the available
 *   list, not in -Unhealthy: the job keeps running), then the pod goes (the chip is listed Unhealthy).
 * The job (Volcano Job, PodGroup, pods with the device plugin's annotations) is the one ClusterD's job
 * cache reads; `--rescheduling=false` as in the other job scenarios (nobody replaces pods).
 */
import { addChipCode, chipName, removeChipCodes } from '../../tools/simulator/npu-state.ts';
import { addSwitchFault } from '../../tools/simulator/switch-state.ts';
import { defaultChipLevel, defaultNetworkLevel } from '../../tools/simulator/fault-codes.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { DEFAULT_RELATION_FAULT_CONFIG, SWITCH_LINK_DOWN } from '../../policy/faults/relation-fault-config.ts';
import type { Scenario } from './runner.ts';
import { podRunning, rankPod } from './scenario-process-recovery.ts';
import type { World, Write } from './world.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';

const NS = 'a3-team';
const OWNER = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', uid: '', controller: true, blockOwnerDeletion: true };
const CHIPS = [0, 1];
const WINDOW_S = 20;

const put = (collection: string, body: KubeObject, owner?: string): Write => ({ op: 'put', collection, body, ...(owner === undefined ? {} : { ownerFrom: owner }) });

/** A job of one pod per node on chips 0 and 1, running, as Volcano, the device plugin and kubelet leave it. */
function jobObjects(job: string, nodes: readonly string[]): Write[] {
  const owner = { ...OWNER, name: job };
  const pg = `${job}-pg`;
  const labels = { 'fault-scheduling': 'force' };
  const out: Write[] = [
    put(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }),
    put(paths.vcJobs(NS), {
      apiVersion: owner.apiVersion, kind: 'Job', metadata: { name: job, namespace: NS, labels },
      spec: { minAvailable: nodes.length, schedulerName: 'volcano', tasks: [{ name: 'worker', replicas: nodes.length }] },
    }),
    put(paths.podGroups(NS), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: { name: pg, namespace: NS, labels, ownerReferences: [owner] },
      spec: { minMember: nodes.length, minResources: { 'huawei.com/Ascend910': String(nodes.length * CHIPS.length) } },
      status: { phase: 'Running' },
    }, paths.vcJob(NS, job)),
  ];
  for (const [rank, node] of nodes.entries()) {
    const hostIp = `10.0.3.${rank + 1}`;
    out.push(put(paths.pods(NS), rankPod({ ns: NS, job, podGroup: pg, owner, rank, node, hostIp }), paths.vcJob(NS, job)));
    out.push(podRunning(NS, `${job}-worker-${rank}`, hostIp, `127.18.0.${rank + 1}`));
  }
  return out;
}

const chipFault = (w: World, node: string, npu: number, kind: 'card' | 'network', code: string, now: number, level?: NpuFaultLevel): Write => {
  const s = w.node(node);
  addChipCode(s, chipName(s, npu), kind, code, level ?? (kind === 'card' ? defaultChipLevel(code) : defaultNetworkLevel(code)), now);
  return w.deviceInfo(node, now);
};
const recoverChip = (w: World, node: string, npu: number, kind: 'card' | 'network', now: number): Write => {
  const s = w.node(node);
  removeChipCodes(s, chipName(s, npu), kind);
  return w.deviceInfo(node, now);
};

/** The shipped relation rules, every window WINDOW_S long. */
const RELATION_FILES = {
  'relationFaultCustomization.json': JSON.stringify(DEFAULT_RELATION_FAULT_CONFIG.rules, null, 2),
  'faultDuration.json': JSON.stringify(DEFAULT_RELATION_FAULT_CONFIG.durations.map((d) => ({ ...d, TimeOutInterval: WINDOW_S })), null, 2),
};

const A3_NODES = [
  { name: 'node-a', switchMode: 'zero' as const, superPodId: 0, serverIndex: 0 },
  { name: 'node-b', switchMode: 'zero' as const, superPodId: 0, serverIndex: 1 },
];
const SWITCH_DOWN = 'UB switch link-down on node-a (rank 0)';
const DEVICE_DOWN = '81078603 link-down on node-b chip 0 (rank 1)';

export const A3_SWITCH_CQE: Scenario = {
  name: 'a3-switch-cqe',
  nodes: A3_NODES,
  ourFlags: ['--rescheduling=false'],
  relationFiles: RELATION_FILES,
  setup: (w, now) => [...A3_NODES.flatMap((n) => [...w.createNode(n.name, now), w.deviceInfo(n.name, now)]), ...jobObjects('sp-job', ['node-a', 'node-b'])],
  steps: [
    {
      name: SWITCH_DOWN, writes: (w, now) => {
        addSwitchFault(w.node('node-a').switch, { code: SWITCH_LINK_DOWN, level: 'NotHandle', timeMs: now });
        return [w.deviceInfo('node-a', now)];
      },
    },
    // The switch link-down's window ends without a trigger: its node is sub-healthy for the job.
    { name: 'switch link-down held past its 20 s window', waitSince: SWITCH_DOWN, ms: (WINDOW_S + 4) * 1000 },
    { name: DEVICE_DOWN, writes: (w, now) => [chipFault(w, 'node-b', 0, 'network', '81078603', now)] },
    { name: 'CQE 8C1F8608 on node-a chip 1 (A3 job: no immediate trigger)', writes: (w, now) => [chipFault(w, 'node-a', 1, 'card', '8C1F8608', now)] },
    // The device link-down times out with the CQE inside its window: the A3 late trigger separates node-b's pod.
    { name: '81078603 held past its 20 s window', waitSince: DEVICE_DOWN, ms: (WINDOW_S + 4) * 1000 },
    { name: 'recover the CQE and the link-down', writes: (w, now) => [recoverChip(w, 'node-a', 1, 'card', now), recoverChip(w, 'node-b', 0, 'network', now)] },
  ],
};

/** In the device plugin's faultCode.json PreSeparateNPUCodes only (the simulator's own table lacks that list). */
const PRE_CODE = '8118043C';

export const PRESEPARATE_CHIP: Scenario = {
  name: 'preseparate-chip',
  nodes: [{ name: 'node-a' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...w.createNode('node-a', now), w.deviceInfo('node-a', now), ...jobObjects('pre-job', ['node-a'])],
  steps: [
    { name: `PreSeparateNPU ${PRE_CODE} on node-a chip 1 (the job's pod uses it)`, writes: (w, now) => [chipFault(w, 'node-a', 1, 'card', PRE_CODE, now, 'PreSeparateNPU')] },
    { name: 'the job\'s pod is deleted (the chip is idle)', writes: () => [{ op: 'delete', path: paths.pod(NS, 'pre-job-worker-0') }] },
    { name: `${PRE_CODE} recovered`, writes: (w, now) => [recoverChip(w, 'node-a', 1, 'card', now)] },
  ],
};
