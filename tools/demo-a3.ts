/**
 * `make demo`'s story 2, an A3 super-pod (docs/rules.md#filter.step-retry, #job.relation-faults):
 * node-012..node-015 are super-pod 0 (device-info SuperPodID 0, ServerIndex 0-3, node label
 * accelerator-type). A 2-pod step-retry job runs there; a UB switch link-down on rank 1's node comes
 * and goes; then an HCCL retry fault on rank 1's chip. The step retry hides it 10 s; the link-down,
 * remembered for --link-down-memory-seconds, is forced back in; the relation rule 8C1F860B + switch
 * link-down separates the node: fault-type=Separate on the pod, reschedule reason RelationFaultSeparate.
 * Printed as the demo prints story 1: each step with its evidence and the commands to look yourself.
 */
import { paths, type KubeClient, type KubeObject } from '../runtime/kube-client.ts';
import type { FaultInjector } from './simulator/injector.ts';
import { ASCEND_REAL_ANNOTATION } from './simulator/allocator.ts';
import type { NpuNodeSpec } from './simulator/npu-state.ts';
import { CLUSTER_INFO_LABELS, CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_SWITCH_PREFIX, CLUSTER_INFO_DEVICE_PREFIX } from '../schemas/cluster-info/cluster-info.ts';
import { SWITCH_INFO_CM_PREFIX } from '../schemas/device-info/switch-info.ts';
import { deviceInfoCmName } from '../schemas/device-info/device-info.ts';
import { JOB_RESCHEDULE_REASON_CM_NAME, JOB_RESCHEDULE_REASON_NAMESPACE, RECENT_RESCHEDULE_RECORDS_KEY, parseRescheduleHistory, rescheduleJobKey } from '../schemas/job-reschedule-reason/job-reschedule-reason.ts';
import { A3_JOB, A3_SUPER_POD_TYPE, ACCELERATOR_TYPE_LABEL, sampleVcJob } from './demo-jobs.ts';
import { KC, step, say, cmd, until, controllerLog } from './demo-output.ts';

export const SWITCH_LINK_DOWN = '[0x08520003,na,L2,na]';
const HCCL_RETRY = '8C1F860B';
const NS = 'demo';
const P = 'huawei.com/Ascend910';

type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };
type ConfigMap = KubeObject & { data?: Record<string, string> };

/** Device plugin specs: the last `superPodSize` nodes are super-pod 0 at ServerIndex 0.., the rest plain servers. */
export function demoNodeSpecs(names: readonly string[], superPodSize: number): NpuNodeSpec[] {
  const first = names.length - superPodSize;
  return names.map((name, i) => (i < first ? { name } : { name, superPodId: 0, serverIndex: i - first }));
}

/** The super-pod nodes get the accelerator-type label of Huawei's A3 super-pod servers (the job's nodeSelector). */
export async function labelSuperPod(client: KubeClient, nodes: readonly string[]): Promise<void> {
  for (const n of nodes) await client.patch(paths.node(n), { metadata: { labels: { [ACCELERATOR_TYPE_LABEL]: A3_SUPER_POD_TYPE } } }, 'merge');
}

const rankOf = (p: Pod): string | undefined => p.metadata?.annotations?.['hccl/rankIndex'] ?? p.metadata?.annotations?.['volcano.sh/task-index'];
const live = (p: Pod): boolean => p.metadata?.deletionTimestamp === undefined;
const withNpus = (p: Pod): boolean => live(p) && p.status?.phase === 'Running' && (p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] ?? '') !== '';

/** The cluster-info entry (by its key) and the shard that holds it. */
async function clusterInfoEntry<T>(client: KubeClient, prefix: string, key: string): Promise<{ cm: string; entry: T } | undefined> {
  const list = await client.list<ConfigMap>(paths.configMaps(CLUSTER_INFO_NAMESPACE), { labelSelector: Object.entries(CLUSTER_INFO_LABELS).map(([k, v]) => `${k}=${v}`).join(',') });
  for (const cm of list.items) {
    const name = cm.metadata!.name!;
    if (!name.startsWith(prefix)) continue;
    const v = cm.data?.[name];
    if (v === undefined || !v.includes(key)) continue;
    const entry = (JSON.parse(v) as Record<string, T | undefined>)[key];
    if (entry !== undefined) return { cm: name, entry };
  }
  return undefined;
}

interface SwitchEntry { FaultCode: string[] | null; FaultLevel: string; NodeStatus: string }
interface DeviceEntry { DeviceList: Record<string, string> }

/** Level of `code` on `chip` in a cluster-info-device entry's `-Fault` list; undefined when not listed. */
function levelIn(e: DeviceEntry | undefined, chip: string, code: string): string | undefined {
  const faults = JSON.parse(e?.DeviceList[`${P}-Fault`] ?? '[]') as Array<{ npu_name: string; fault_time_and_level_map: Record<string, { fault_level: string }> | null }>;
  return faults.find((x) => x.npu_name === chip)?.fault_time_and_level_map?.[code]?.fault_level;
}

export interface A3StoryDeps {
  readonly client: KubeClient;
  readonly injector: FaultInjector;
  /** `kubectl clusterd explain <ns/job>` output. */
  readonly explain: (job: string) => string;
}

export async function a3Story({ client, injector, explain }: A3StoryDeps, superPod: readonly string[]): Promise<void> {
  step(`Story 2, an A3 super-pod: ${superPod[0]}..${superPod.at(-1)} are super-pod 0; a step-retry job runs there`);
  say(`device-info SuperPodID 0, ServerIndex 0-${superPod.length - 1}; node label ${ACCELERATOR_TYPE_LABEL}=${A3_SUPER_POD_TYPE} (the job's nodeSelector; story 1 stays off it)`);
  say('job labels process-recover-enable=on, annotation recover-strategy=retry: an HCCL retry fault first waits for the job\'s own step retry;');
  say('no RestartJob policy: vc-controller-manager re-creates only the pods a decision deletes');
  const job = await client.create(paths.vcJobs(NS), sampleVcJob(NS, A3_JOB, {
    replicas: 2, superPod: true, restartJobOnEviction: false, labels: { 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': 'retry' },
  }));
  const jobKey = rescheduleJobKey(NS, A3_JOB, job.metadata!.uid!);
  const jobPods = async (): Promise<Pod[]> => (await client.list<Pod>(paths.pods(NS), { labelSelector: `volcano.sh/job-name=${A3_JOB}` })).items;
  const pods = await until('2 running pods of the A3 job', async () => { const ok = (await jobPods()).filter(withNpus); return ok.length === 2 ? ok : undefined; }, 120_000);
  for (const p of pods) say(`${p.metadata?.name}  rank ${rankOf(p)}  on ${p.spec?.nodeName}  NPUs ${p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION]}`);
  cmd(`kubectl ${KC} get nodes -l ${ACCELERATOR_TYPE_LABEL}=${A3_SUPER_POD_TYPE}`);
  cmd(`kubectl ${KC} -n kube-system get cm ${deviceInfoCmName(superPod[0]!)} -o jsonpath='{.data.DeviceInfoCfg}' | grep -o '"SuperPodID":[0-9-]*,"ServerIndex":[0-9-]*'`);

  const r1 = pods.find((p) => rankOf(p) === '1') ?? pods[1]!;
  const node = r1.spec!.nodeName!;
  const chip = r1.metadata!.annotations![ASCEND_REAL_ANNOTATION]!.split(',')[0]!;
  const r1Uid = r1.metadata!.uid!;
  const oldUids = new Set(pods.map((p) => p.metadata?.uid));

  // The fault-type label is on the pod only until the pod is deleted: watch, do not poll.
  const labelled: Array<{ pod: string; value: string }> = [];
  const watch = await client.watch(paths.pods(NS), { labelSelector: `volcano.sh/job-name=${A3_JOB}` }, (_type, obj) => {
    const v = obj.metadata?.labels?.['fault-type'];
    if (v !== undefined && !labelled.some((l) => l.pod === obj.metadata?.name && l.value === v)) labelled.push({ pod: obj.metadata!.name!, value: v });
  }, () => undefined);
  try {
    step(`Inject: UB switch link-down ${SWITCH_LINK_DOWN} (NotHandle) on ${node}, rank 1's node`);
    await injector.inject({ kind: 'switch', node, code: SWITCH_LINK_DOWN });
    const swKey = `${SWITCH_INFO_CM_PREFIX}${node}`;
    const switchEntry = () => clusterInfoEntry<SwitchEntry>(client, CLUSTER_INFO_SWITCH_PREFIX, swKey);
    const linkDownIn = (x: { entry: SwitchEntry } | undefined): boolean => (x?.entry.FaultCode ?? []).some((c) => c.includes('0x08520003'));
    const on = await until('the link-down in cluster-info-switch', async () => { const x = await switchEntry(); return linkDownIn(x) ? x : undefined; }, 15_000).catch(() => undefined);
    say(on === undefined
      ? `(no link-down in the ${swKey} entry of cluster-info-switch-* within 15 s: see .cluster/controller.log)`
      : `${on.cm} ${swKey}: FaultLevel=${on.entry.FaultLevel} NodeStatus=${on.entry.NodeStatus} FaultCode=${JSON.stringify(on.entry.FaultCode)}`);
    const remembered = await until('the controller remembering the link-down', async () => controllerLog((l) => l.message === 'switch link-down remembered for HCCL retries' && l.node === node).length > 0, on === undefined ? 1_000 : 15_000).catch(() => false);
    if (remembered) say('NotHandle on its own: the job keeps running; the controller remembers the link-down for HCCL retries (--link-down-memory-seconds, 180 s)');
    const shard = on?.cm ?? (await switchEntry())?.cm ?? 'cluster-info-switch-0';
    cmd(`kubectl ${KC} -n ${CLUSTER_INFO_NAMESPACE} get cm ${shard} -o jsonpath='{.data.${shard}}' | grep -o '"${swKey}":{[^}]*}'`);

    step(`The link-down clears on ${node} (the device plugin's SwitchInfoCfg is healthy again)`);
    await injector.recover({ kind: 'switch', node, code: SWITCH_LINK_DOWN });
    const clearedAt = Date.now();
    const off = await until('the link-down gone from cluster-info-switch', async () => { const x = await switchEntry(); return x !== undefined && !linkDownIn(x); }, 15_000).catch(() => false);
    say(off ? `${swKey}: no fault listed any more; the job's pods are untouched` : `(${swKey} still lists the link-down after 15 s)`);

    step(`Inject: HCCL retry fault ${HCCL_RETRY} (NotHandleFault) on ${chip} of ${node}, rank 1's chip`);
    const tf = Date.now();
    await injector.inject({ kind: 'npu', node, npu: chip, code: HCCL_RETRY, level: 'NotHandleFault', timeMs: tf });
    const devKey = `mindx-dl-deviceinfo-${node}`;
    let hiddenSeen = false;
    const shown = await until(`${HCCL_RETRY} in cluster-info-device`, async () => {
      const x = await clusterInfoEntry<DeviceEntry>(client, CLUSTER_INFO_DEVICE_PREFIX, devKey);
      const level = levelIn(x?.entry, chip, HCCL_RETRY);
      if (level === undefined) { hiddenSeen ||= x !== undefined; return undefined; }
      return { cm: x!.cm, level, afterMs: Date.now() - tf };
    }, 40_000);
    say(`hidden: ${hiddenSeen ? 'absent from' : 'not seen absent in'} ${shown.cm} for ${(shown.afterMs / 1000).toFixed(1)} s (step retry: a retry fault younger than 10 s waits for the job's own retry)`);
    say(`then reported at ${shown.level}${shown.level === 'RestartBusiness' ? '' : ', not re-levelled to RestartBusiness: a switch link-down was seen on the job\'s node within the link-down memory'}`);
    cmd(`kubectl ${KC} -n ${CLUSTER_INFO_NAMESPACE} get cm ${shown.cm} -o jsonpath='{.data.${shown.cm}}' | grep -o '${HCCL_RETRY}[^}]*}'`);

    step('The relation rule: HCCL retry + the remembered link-down, forced back in -> Separate on the link-down node');
    const strategy = await until('the relation strategy', async () => controllerLog((l) => l.message === 'relation fault strategy decided' && String(l.job).startsWith(`${NS}/${A3_JOB}`)).at(-1), 20_000).catch(() => undefined);
    // What follows comes of the strategy: without it, a short look is enough.
    const wait = (ms: number): number => (strategy === undefined ? 2_000 : ms);
    say(strategy === undefined ? '(no relation strategy logged: see .cluster/controller.log)' : `controller: relation fault strategy decided: node ${String(strategy.node)} strategy ${String(strategy.strategy)}`);
    if (strategy !== undefined) for (const r of [strategy.reasons].flat()) say(`  because ${typeof r === 'string' ? r : JSON.stringify(r)}`);
    if (strategy !== undefined) {
      const listedNow = (await switchEntry())?.entry.FaultCode?.length ?? 0;
      say(`the link-down in this rule cleared ${((tf - clearedAt) / 1000).toFixed(1)} s before the HCCL fault (${swKey} lists ${listedNow} switch faults now):`);
      say('  the controller\'s link-down memory forced it back into the job\'s fault view, as ClusterD does');
    }
    const label = await until('the fault-type label', async () => labelled.find((l) => l.value === 'Separate'), wait(20_000)).catch(() => undefined);
    say(label === undefined ? `(no fault-type label seen: labels seen ${JSON.stringify(labelled)})` : `pod ${label.pod}: label fault-type=${label.value} (rank 1${label.pod === r1.metadata?.name ? '' : '?'})`);
    cmd(`grep -E '"(switch link-down remembered for HCCL retries|relation fault strategy decided|pod labelled fault-type \\(relation fault\\))"' .cluster/controller.log`);

    step(`The reschedule: job-reschedule-reason for ${jobKey}`);
    const reason = await until('the reschedule reason', async () => {
      const cm = await client.getOrUndefined<ConfigMap>(paths.configMap(JOB_RESCHEDULE_REASON_NAMESPACE, JOB_RESCHEDULE_REASON_CM_NAME));
      const parsed = parseRescheduleHistory(cm?.data?.[RECENT_RESCHEDULE_RECORDS_KEY] ?? '');
      return parsed.ok ? parsed.value.get(jobKey) : undefined;
    }, wait(30_000)).catch(() => undefined);
    if (reason === undefined) say('(no reschedule record: see .cluster/controller.log)');
    else for (const t of reason.RescheduleRecords?.[0]?.ReasonOfTask ?? []) say(`${t.RescheduleReason}: pod ${t.PodName} on ${t.NodeName}`);
    cmd(`kubectl ${KC} -n ${JOB_RESCHEDULE_REASON_NAMESPACE} get cm ${JOB_RESCHEDULE_REASON_CM_NAME} -o jsonpath='{.data.${RECENT_RESCHEDULE_RECORDS_KEY}}' | grep -o '"JobID":"${NS}/${A3_JOB}-[^]]*'`);

    step('The replacement pod (re-created by vc-controller-manager, placed by vc-scheduler on the super-pod)');
    const fresh = await until('replacement pods running', async () => {
      const list = (await jobPods()).filter(live);
      return list.length === 2 && list.every(withNpus) && list.some((p) => !oldUids.has(p.metadata?.uid)) ? list : undefined;
    }, wait(90_000)).catch(() => undefined);
    if (fresh === undefined) say('(no pod replaced: see .cluster/controller.log)');
    else for (const p of fresh) say(`${p.metadata?.name}  ${oldUids.has(p.metadata?.uid) ? 'kept    ' : 'replaced'}  on ${p.spec?.nodeName}  NPUs ${p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION]}`);
    if (fresh?.some((p) => p.metadata?.uid === r1Uid) === true) say('(rank 1\'s pod was not replaced)');
    if (fresh?.some((p) => !oldUids.has(p.metadata?.uid) && p.spec?.nodeName === node) === true) {
      say(`stock vc-scheduler reads neither cluster-info nor the fault-type label, and ${node}'s chips are all allocatable again: it may pick ${node}`);
    }
    cmd(`kubectl ${KC} -n ${NS} get pods -l volcano.sh/job-name=${A3_JOB} -o wide`);

    step(`The decision history: kubectl clusterd explain ${NS}/${A3_JOB}`);
    const history = await until('the job\'s decision history', async () => { const h = explain(`${NS}/${A3_JOB}`); return h.includes('acted') ? h : undefined; }, wait(20_000)).catch(() => undefined);
    if (history === undefined) say('(no history yet: see .cluster/controller.log)');
    else for (const line of history.trimEnd().split('\n')) say(line);
    cmd(`PATH=$PWD/cli/bin:$PATH kubectl clusterd ${KC} explain ${NS}/${A3_JOB}`);
  } finally {
    watch.abort();
  }
}
