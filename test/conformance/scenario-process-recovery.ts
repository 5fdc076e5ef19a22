/**
 * Process-level recovery over gRPC, and PubFault as an input. A Volcano-like job of two
 * rank pods (node-a, node-b; 2 chips each) with what ClusterD needs for process recovery: PodGroup
 * label `process-recover-enable=on`, annotation `recover-strategy`, the device plugin's
 * `ascend.kubectl.kubernetes.io/ascend-910-configuration` and `huawei.com/AscendReal` on each pod,
 * `hccl/rankIndex`, a `reset-config-<job>` ConfigMap, pods Running. The job's UID is fixed (the
 * pods' and the PodGroup's ownerReference, so the job id is the same on both sides; nothing here
 * runs Volcano's garbage collection).
 *
 * On each side the real TaskD client (tools/taskd-client) inits, registers and subscribes, and
 * answers every signal as TaskD and MindIO do; a memory UCE (reported by MindIO first, then by the
 * device plugin: the step-retry path) and then a chip fault (the preExit / recover path) are
 * injected through device-info; the client's whole exchange (signals: type, uuid relations, actions, fault
 * ranks, change strategy; answer codes) is compared after every step (grpc-inputs.ts). Then a
 * public fault is sent through `PubFault.SendPublicFault` (the snapshot's pubfault.proto) to both
 * sides, and its recovery.
 *
 * Neither side runs Volcano, so nobody replaces a fault pod: clusterd-ts runs in ClusterD's role
 * (`--rescheduling=false`, the allow-listed flag of the rescheduling extension).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addChipCode, chipName, removeChipCodes } from '../../tools/simulator/npu-state.ts';
import { defaultChipLevel } from '../../tools/simulator/fault-codes.ts';
import { publicFaultPayload } from '../../tools/simulator/public-fault.ts';
import { encodeResetConfigData } from '../../schemas/reset-config/reset-config.ts';
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { buildTaskdClient, GoTaskdClient, type ClientEvent } from '../integration/recovery-real-client.ts';
import { exchangeRecord, publicFaultRequest, sendPublicFault } from './grpc-inputs.ts';
import type { Scenario, SideContext } from './runner.ts';
import type { World, Write } from './world.ts';

export const NS = 'training';
export const JOB = 'pr-job';
/**
 * The PodGroup's name: Volcano's `<job>-<uid>`, written with a fixed UID so the name is the same on
 * both sides. The ownerReferences carry the Job's real UID on each side (`ownerFrom`): a PodGroup
 * naming a UID its Job does not have is no job to clusterd-ts (policy/jobs/job-identity.ts), and the
 * TaskD client's job id is that UID too (ClusterD's job key, TaskD's MINDX_TASK_ID).
 */
export const PG = `${JOB}-7c1d2e3f-0a1b-4c5d-8e9f-0123456789ab`;
const OWNER = { apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: JOB, uid: '', controller: true, blockOwnerDeletion: true };
/** Rank pod r on RANK_NODES[r], chips 0 and 1: ranks 2r, 2r+1. */
const RANK_NODES = ['node-a', 'node-b'] as const;
const CHIPS = [0, 1];
export const CLIENT = 'taskd-client';
/**
 * The pods' addresses: 127.0.0.0/8 aliases, all loopback on Linux, so the TaskD client can call from
 * a pod's address for real (clusterd-ts serves a job's calls only from its pods' addresses).
 */
export const podIp = (rank: number): string => `127.16.0.${rank + 1}`;
const MARK = 'events seen';

const put = (collection: string, body: KubeObject): Write => ({ op: 'put', collection, body });
/** A put of an object the Job owns (its ownerReference gets the Job's UID on each side). */
const owned = (collection: string, body: KubeObject): Write => ({ op: 'put', collection, body, ownerFrom: paths.vcJob(NS, JOB) });

/** What the device plugin writes on a pod it allocated chips to (PodDevice of ClusterD's constant package). */
export function deviceAnnotation(pod: string, hostIp: string): string {
  return JSON.stringify({ pod_name: pod, server_id: hostIp, host_ip: hostIp, devices: CHIPS.map((c) => ({ device_id: String(c), device_ip: `192.168.${hostIp.split('.')[3]}.${c}` })) });
}

/** A rank pod of a Volcano Job as Volcano and the device plugin leave it (chips 0 and 1 of its node). */
export function rankPod(o: { ns: string; job: string; podGroup: string; owner: object; rank: number; node: string; hostIp: string }): KubeObject {
  const name = `${o.job}-worker-${o.rank}`;
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name, namespace: o.ns, ownerReferences: [o.owner],
      labels: { app: o.job, 'volcano.sh/job-name': o.job, 'volcano.sh/task-spec': 'worker' },
      annotations: {
        'hccl/rankIndex': String(o.rank), 'scheduling.k8s.io/group-name': o.podGroup,
        'huawei.com/AscendReal': CHIPS.map((c) => `Ascend910-${c}`).join(','),
        'ascend.kubectl.kubernetes.io/ascend-910-configuration': deviceAnnotation(name, o.hostIp),
      },
    },
    spec: {
      nodeName: o.node, schedulerName: 'volcano', restartPolicy: 'Never', terminationGracePeriodSeconds: 0,
      containers: [{ name: 'train', image: 'training:latest', resources: { requests: { 'huawei.com/Ascend910': String(CHIPS.length) }, limits: { 'huawei.com/Ascend910': String(CHIPS.length) } } }],
    },
  } as KubeObject;
}

/** kubelet: the pod runs, Ready, on its host. */
export const podRunning = (ns: string, name: string, hostIp: string, podIp: string): Write =>
  ({ op: 'patch', path: paths.podStatus(ns, name), type: 'merge', body: { status: { phase: 'Running', hostIP: hostIp, podIP: podIp, conditions: [{ type: 'Ready', status: 'True' }] } } });

/**
 * The job's objects; `strategies` is the PodGroup's `recover-strategy` annotation, `annotations` more
 * PodGroup annotations, `extraLabels` more labels of the Job and its PodGroup.
 */
export function jobObjects(strategies = 'retry,recover,dump,exit', annotations: Record<string, string> = {}, extraLabels: Record<string, string> = {}): Write[] {
  const labels = { 'fault-scheduling': 'force', 'process-recover-enable': 'on', ...extraLabels };
  const out: Write[] = [
    put(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }),
    put(paths.vcJobs(NS), {
      apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', metadata: { name: JOB, namespace: NS, labels },
      spec: { minAvailable: RANK_NODES.length, schedulerName: 'volcano', tasks: [{ name: 'worker', replicas: RANK_NODES.length }] },
    }),
    owned(paths.podGroups(NS), {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: { name: PG, namespace: NS, labels, annotations: { 'recover-strategy': strategies, ...annotations }, ownerReferences: [OWNER] },
      spec: { minMember: RANK_NODES.length, minResources: { 'huawei.com/Ascend910': String(RANK_NODES.length * CHIPS.length) } },
      status: { phase: 'Running' },
    }),
    put(paths.configMaps(NS), {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `reset-config-${JOB}`, namespace: NS, labels: { reset: 'true' } },
      data: encodeResetConfigData({ RankList: [], UpdateTime: 0, RetryTime: 0, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false }),
    }),
  ];
  for (const [rank, node] of RANK_NODES.entries()) {
    const hostIp = `10.0.0.${rank + 1}`;
    out.push(owned(paths.pods(NS), rankPod({ ns: NS, job: JOB, podGroup: PG, owner: OWNER, rank, node, hostIp })));
    out.push(podRunning(NS, `${JOB}-worker-${rank}`, hostIp, podIp(rank)));
  }
  return out;
}

export const chipFault = (w: World, node: string, npu: number, code: string, now: number): Write => {
  const s = w.node(node);
  addChipCode(s, chipName(s, npu), 'card', code, defaultChipLevel(code), now);
  return w.deviceInfo(node, now);
};
export const recoverChip = (w: World, node: string, npu: number, now: number): Write => {
  const s = w.node(node);
  removeChipCodes(s, chipName(s, npu), 'card');
  return w.deviceInfo(node, now);
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const client = (ctx: SideContext): GoTaskdClient => ctx.state.get(CLIENT) as GoTaskdClient;

/**
 * Waits until `done` holds for the side's client events since the last exchange ended (the signals
 * start while the fault's own step settles), then 3 s more for stragglers; at most `maxMs`.
 */
export async function exchange(ctx: SideContext, done: (events: readonly ClientEvent[]) => boolean, maxMs: number): Promise<void> {
  const c = client(ctx);
  const from = (ctx.state.get(MARK) as number | undefined) ?? 0;
  const end = Date.now() + maxMs;
  while (Date.now() < end && !done(c.events.slice(from))) await sleep(250);
  await sleep(3000);
  ctx.state.set(MARK, c.events.length);
}

/** A changeStrategy came and its ReportRecoverStatus was answered. */
const strategyAnswered = (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && e.signalType === 'changeStrategy');
  return i >= 0 && ev.slice(i).some((e) => e.event === 'report' && e.rpc === 'ReportRecoverStatus');
};

let taskdBin: string | undefined;
/**
 * Starts the real TaskD client on the side (from rank 0's address: TaskD runs in the job's pods and
 * clusterd-ts checks it), records its exchange, and waits for its subscription. `tag` names the
 * raw exchange file of the scenario.
 */
export async function startTaskdClient(ctx: SideContext, flags: readonly string[], tag = ''): Promise<void> {
  taskdBin ??= buildTaskdClient();
  const jobUid = (await ctx.admin.get<KubeObject>(paths.vcJob(NS, JOB))).metadata!.uid!;
  const c = new GoTaskdClient(taskdBin, ctx.grpcTarget, jobUid, [...flags, `-local-addr=${podIp(0)}`]);
  ctx.state.set(CLIENT, c);
  ctx.cleanups.push(async () => {
    await c.stop();
    // The raw exchange, for reading a divergence (times included).
    writeFileSync(join(process.env.CONFORMANCE_REPORT_DIR ?? tmpdir(), `clusterd-ts-conformance-taskd${tag}-${ctx.side}.jsonl`), c.events.map((e) => JSON.stringify(e)).join('\n'));
  });
  ctx.records.set(`gRPC Recover TaskD ${NS}/${JOB}`, () => exchangeRecord(c.events));
  await exchange(ctx, (ev) => ev.some((e) => e.event === 'subscribe'), 30_000);
}

let pubFaultOccur: Record<string, unknown> | undefined;
let pubFaultRecover: Record<string, unknown> | undefined;
const PUB_FAULT_ID = 'conformance-grpc-0001';

/** One PublicFaultRequest per assertion, built once: both sides get the same message. */
function pubFault(assertion: 'occur' | 'recover'): Record<string, unknown> {
  const now = Date.now();
  const make = () => publicFaultRequest(publicFaultPayload({ code: '220001001', targets: [{ node: 'node-c', npus: [0, 1] }], assertion, faultId: PUB_FAULT_ID, timeMs: now }, now));
  if (assertion === 'occur') return (pubFaultOccur ??= make());
  return (pubFaultRecover ??= make());
}

async function sendPub(ctx: SideContext, assertion: 'occur' | 'recover'): Promise<void> {
  const answer = await sendPublicFault(ctx.grpcTarget, pubFault(assertion));
  const prev = ctx.records.get('gRPC PubFault.SendPublicFault')?.() ?? {};
  ctx.records.set('gRPC PubFault.SendPublicFault', () => ({ ...prev, [assertion]: answer }));
}

export const PROCESS_RECOVERY: Scenario = {
  name: 'process-recovery',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }, { name: 'node-c' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects()],
  steps: [
    {
      name: 'TaskD client inits, registers, subscribes',
      perSide: async (ctx) => {
        pubFaultOccur = pubFaultRecover = undefined; // a new run: new messages
        // TaskD's MindIO supports every strategy the job allows.
        await startTaskdClient(ctx, ['-strategies=retry,recover,dump,exit']);
      },
    },
    // MindIO finds the UCE in the business plane and reports it before the device plugin does: the
    // step-retry path (without that report ClusterD treats a device-info UCE as a normal fault).
    { name: 'MindIO reports the UCE on rank 3 (ReportProcessFault 3:0)', perSide: async (ctx) => { client(ctx).reportProcessFault([{ rankId: '3', faultType: '0' }]); await sleep(500); } },
    { name: 'memory UCE 80E01801 on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80E01801', now)] },
    { name: 'exchange after the UCE', perSide: (ctx) => exchange(ctx, strategyAnswered, 60_000) },
    { name: 'UCE recovered', writes: (w, now) => [recoverChip(w, 'node-b', 1, now)] },
    { name: 'chip fault 80E18402 on node-a chip 0 (rank 0)', writes: (w, now) => [chipFault(w, 'node-a', 0, '80E18402', now)] },
    { name: 'exchange after the chip fault', perSide: (ctx) => exchange(ctx, strategyAnswered, 90_000) },
    { name: 'chip fault recovered', writes: (w, now) => [recoverChip(w, 'node-a', 0, now)] },
    { name: 'PubFault 220001001 occur on node-c chips 0,1 (gRPC)', perSide: (ctx) => sendPub(ctx, 'occur') },
    { name: 'PubFault recover (gRPC)', perSide: (ctx) => sendPub(ctx, 'recover') },
  ],
};
