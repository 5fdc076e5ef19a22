/**
 * `make demo`, the README's main command. With KUBECONFIG pointing at a real cluster it runs the
 * controller against it. Otherwise it starts the local control plane with 16 kwok nodes x 8 NPUs and
 * the real Volcano (vc-controller-manager, vc-scheduler), the device plugin simulator, a sample
 * Volcano Job, the controller, injects a fault and prints, step by step, what happened and the
 * commands to look yourself (each runs as printed from the repository root). Story 2 (tools/demo-a3.ts,
 * default topology only) follows on the same cluster: node-012..node-015 are an A3 super-pod, a
 * step-retry job there meets a UB switch link-down and an HCCL retry fault. Then it stays up until
 * Ctrl-C (SIGTERM too; DEMO_EXIT=1 stops at once).
 *
 * `--topology stock` (default, topology B): Volcano's own vc-scheduler, no ascend plugin, so
 * clusterd-ts holds the rescheduling role and its decision deletes the pods. `--topology mindcluster`
 * (topology A): vc-scheduler with Huawei's ascend plugin; clusterd-ts in ClusterD's role finds the
 * plugin and leaves the deleting to it (controllers/rescheduling-role.ts).
 * DEMO_HTTP_PORT / DEMO_GRPC_PORT move the controller's ports (default 11253 / 8899).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { join, resolve } from 'node:path';
import { clusterUp, clusterDown } from './cluster.ts';
import { HttpKubeClient, paths, type KubeObject } from '../runtime/kube-client.ts';
import { FaultInjector } from './simulator/injector.ts';
import { NpuAllocator, ASCEND_REAL_ANNOTATION } from './simulator/allocator.ts';
import { nodeNames } from './simulator/nodes.ts';
import { chipLists } from './simulator/npu-state.ts';
import { ensureVolcano } from './control-plane/volcano.ts';
import { DEMO_JOB, sampleVcJob } from './demo-jobs.ts';
import { a3Story, demoNodeSpecs, labelSuperPod } from './demo-a3.ts';
import { REPO, LOCAL_KUBECONFIG, KC, bold, step, say, cmd, until, controllerLog } from './demo-output.ts';

const NODES = 16;
/** node-012..node-015: one A3 super-pod (story 2). */
const SUPER_POD_NODES = 4;
const HTTP_PORT = Number(process.env.DEMO_HTTP_PORT ?? 11253);
const GRPC_PORT = Number(process.env.DEMO_GRPC_PORT ?? 8899);

function runAgainstRealCluster(kubeconfig: string): void {
  console.log(`KUBECONFIG=${kubeconfig}: running the controller against that cluster (Ctrl-C to stop).`);
  const child = spawn(process.execPath, [join(REPO, 'main.ts'), `--kubeconfig=${kubeconfig}`], { stdio: 'inherit' });
  child.on('exit', (code) => process.exit(code ?? 0));
}

/** Under the control plane's supervisor, so the controller dies with the demo even if it is killed. */
function startController(): ChildProcess {
  return spawn(process.execPath, [join(REPO, 'tools', 'control-plane', 'supervise.mjs'), String(process.pid), join(REPO, '.cluster', 'controller.log'), '--',
    process.execPath, join(REPO, 'main.ts'), `--kubeconfig=${LOCAL_KUBECONFIG}`, `--http-port=${HTTP_PORT}`, `--grpc-port=${GRPC_PORT}`, '--grpc-host=127.0.0.1', '--http-host=127.0.0.1'], { stdio: 'ignore' });
}

async function metricsLines(prefixes: string[]): Promise<string[]> {
  const text = await (await fetch(`http://127.0.0.1:${HTTP_PORT}/metrics`)).text();
  return text.split('\n').filter((l) => !l.startsWith('#') && prefixes.some((p) => l.startsWith(p)) && !/ 0$/.test(l));
}

/** Seconds from the fault to each recovery stage (histogram sums: the demo job has one episode) and the lost seconds of one job. */
function goodputOf(text: string, jobName: string): Record<string, number | undefined> {
  const out: Record<string, number | undefined> = {};
  for (const l of text.split('\n')) {
    if (!l.includes(`job_name="${jobName}"`)) continue;
    const v = Number(l.slice(l.lastIndexOf(' ') + 1));
    const stage = /stage="(\w+)"/.exec(l)?.[1];
    if (l.startsWith('clusterd_job_recovery_seconds_sum{') && stage !== undefined) out[stage] = v;
    if (l.startsWith('clusterd_job_lost_seconds_total{')) out.lost = v;
  }
  return out;
}

/** Undo what the demo started (the controller, the cluster); set as soon as each part is up. */
const cleanups: Array<() => Promise<void> | void> = [];
async function cleanup(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) { try { await c(); } catch { /* best effort */ } }
}

/** `kubectl clusterd explain <ns/job>`: the job's DecisionRecords. */
const explain = (job: string): string => execFileSync(process.execPath, [join(REPO, 'cli', 'kubectl-clusterd.ts'), 'explain', job], {
  env: { ...process.env, KUBECONFIG: LOCAL_KUBECONFIG }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
});

type Pod = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };

/** The pod's rank: Huawei's hccl/rankIndex when set, else Volcano's task index. */
const rankOf = (p: Pod): string | undefined => p.metadata?.annotations?.['hccl/rankIndex'] ?? p.metadata?.annotations?.['volcano.sh/task-index'];

async function main(): Promise<void> {
  const kc = process.env.KUBECONFIG;
  if (kc !== undefined && kc !== '' && resolve(kc) !== LOCAL_KUBECONFIG) { runAgainstRealCluster(kc); return; }
  const { values } = parseArgs({ options: { topology: { type: 'string', default: 'stock' } } });
  if (values.topology !== 'stock' && values.topology !== 'mindcluster') throw new Error(`--topology ${values.topology}: stock (default) or mindcluster`);
  const plugin = values.topology === 'mindcluster';
  const volcanoDir = ensureVolcano();
  if (volcanoDir === undefined) throw new Error('no Volcano source on this machine (tools/volcano/build.sh exit 3): see tools/volcano/README.md');

  step(`Local control plane: etcd + kube-apiserver + kwok with ${NODES} nodes x 8 NPUs, and the real Volcano`);
  say(plugin
    ? 'topology mindcluster: vc-scheduler with Huawei\'s ascend plugin (Huawei\'s configuration); clusterd-ts in ClusterD\'s role, the plugin deletes fault pods'
    : 'topology stock (default): Volcano\'s own vc-scheduler, no ascend plugin; clusterd-ts reschedules (make demo TOPOLOGY=mindcluster for the ascend plugin)');
  say('real: etcd, kube-apiserver, vc-controller-manager (creates and re-creates the Job\'s pods), vc-scheduler (places them), kubectl, the controller as main.ts runs it');
  say('stand-ins: kwok nodes (no kubelet: kwok marks bound pods Running); the device plugin simulator (device-info ConfigMaps,');
  say('  faults injected into them: no NPUs here); the NPU allocator playing the device plugin\'s Allocate (needs a kubelet)');
  await clusterUp(NODES, { volcano: { dir: volcanoDir, scheduler: plugin ? 'ascend' : 'stock' }, watchPid: process.pid });
  cleanups.push(() => clusterDown());
  const client = HttpKubeClient.fromFile(LOCAL_KUBECONFIG);
  for (const ns of ['mindx-dl', 'volcano-system', 'cluster-system', 'demo']) {
    if ((await client.getOrUndefined(`/api/v1/namespaces/${ns}`)) === undefined) await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  }
  cmd(`kubectl ${KC} get nodes`);
  cmd(`kubectl ${KC} -n volcano-system get cm volcano-scheduler-configmap -o jsonpath='{.data.volcano-scheduler\\.conf}'`);

  step('Device plugin simulator: healthy device-info ConfigMaps for every node (CheckCode included)');
  const injector = new FaultInjector(client);
  await labelSuperPod(client, nodeNames(NODES).slice(-SUPER_POD_NODES));
  await injector.addNodes(demoNodeSpecs(nodeNames(NODES), SUPER_POD_NODES));
  // Allocate: the plugin's choice when it made one (huawei.com/Ascend910), else healthy free chips.
  const allocator = new NpuAllocator(client, {
    namespace: 'demo',
    unhealthy: (node) => { try { return chipLists(injector.devicePlugin.state(node)).unhealthy; } catch { return []; } },
  });
  await allocator.start();
  cleanups.push(() => allocator.stop());
  cmd(`kubectl ${KC} -n kube-system get cm -l mx-consumer-cim=true`);

  step('The controller (node main.ts), logs in .cluster/controller.log');
  const controller = startController();
  cleanups.push(() => { controller.kill('SIGTERM'); });
  await until('controller ready', async () => (await fetch(`http://127.0.0.1:${HTTP_PORT}/readyz`)).ok, 60_000);
  say(`ready: http://127.0.0.1:${HTTP_PORT}/readyz, metrics on /metrics, gRPC on 127.0.0.1:${GRPC_PORT}`);
  const yielded = (await metricsLines(['clusterd_rescheduling_yielded'])).length > 0;
  say(yielded
    ? 'rescheduling role: the ascend plugin is in volcano-scheduler-configmap, so clusterd-ts leaves deleting fault pods to it (clusterd_rescheduling_yielded 1)'
    : 'rescheduling role: no ascend plugin in volcano-scheduler-configmap, so clusterd-ts deletes fault pods itself (clusterd_rescheduling_yielded 0)');

  step('Sample job: a Volcano Job (4 pods x 8 NPUs, fault-scheduling=force, off the super-pod); vc-controller-manager creates the pods, vc-scheduler binds them');
  await client.create(paths.vcJobs('demo'), sampleVcJob('demo'));
  const runningPods = async (): Promise<Pod[]> => (await client.list<Pod>(paths.pods('demo'), { labelSelector: `volcano.sh/job-name=${DEMO_JOB}` })).items
    .filter((p) => p.metadata?.deletionTimestamp === undefined);
  const pods = await until('4 running pods with NPUs', async () => {
    const ok = (await runningPods()).filter((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] !== undefined);
    return ok.length === 4 ? ok : undefined;
  }, 180_000);
  for (const p of pods) say(`${p.metadata?.name}  rank ${rankOf(p)}  on ${p.spec?.nodeName}  NPUs ${p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION]}`);
  cmd(`kubectl ${KC} -n demo get pods -o wide`);
  cmd(`kubectl ${KC} -n demo get podgroups`);

  const victim = pods.find((p) => rankOf(p) === '2') ?? pods[0]!;
  const node = victim.spec!.nodeName!;
  const npu = (victim.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] ?? 'Ascend910-3').split(',')[3] ?? 'Ascend910-3';
  const oldUids = new Set(pods.map((p) => p.metadata?.uid));

  step(`Inject: code 80E18402 (SeparateNPU) on ${npu} of ${node}, used by rank ${rankOf(victim)} (${victim.metadata?.name})`);
  const ack = await injector.inject({ kind: 'npu', node, npu, code: '80E18402' });
  say(`device plugin wrote kube-system/${ack.name} (resourceVersion ${ack.resourceVersion})`);
  cmd(`kubectl ${KC} -n kube-system get cm ${ack.name} -o jsonpath='{.data.DeviceInfoCfg}'`);

  step(`The level Volcano sees: cluster-info-device-* (written by the controller${plugin ? ', read by the ascend plugin' : ''})`);
  const entry = await until('cluster-info updated', async () => {
    const list = await client.list<KubeObject & { data?: Record<string, string> }>(paths.configMaps('mindx-dl'), { labelSelector: 'mx-consumer-volcano=true' });
    for (const cm of list.items) {
      const v = cm.data?.[cm.metadata!.name!] ?? '';
      if (!v.includes(`mindx-dl-deviceinfo-${node}`)) continue;
      const e = (JSON.parse(v) as Record<string, { DeviceList: Record<string, string> }>)[`mindx-dl-deviceinfo-${node}`];
      if (e?.DeviceList['huawei.com/Ascend910-Unhealthy']?.includes(npu)) return { cm: cm.metadata!.name!, e };
    }
    return undefined;
  });
  say(`${entry.cm}: ${node} Unhealthy=${entry.e.DeviceList['huawei.com/Ascend910-Unhealthy']}`);
  say(`fault list: ${entry.e.DeviceList['huawei.com/Ascend910-Fault']}`);
  cmd(`kubectl ${KC} -n mindx-dl get cm ${entry.cm} -o jsonpath='{.data.${entry.cm}}'`);

  if (yielded) {
    step('The decision is the ascend plugin\'s (clusterd-ts, in ClusterD\'s role, only published the level)');
    const line = await until('the plugin deleting the pod', async () => {
      const log = readFileSync(join(REPO, '.cluster', 'vc-scheduler.log'), 'utf8');
      return log.split('\n').find((l) => /delete job .*ReScheduleKey|ForceDeleteFaultPod|delete pods:/.test(l));
    }, 60_000).catch(() => undefined);
    say(line === undefined ? '(no deletion logged by vc-scheduler yet: see .cluster/vc-scheduler.log)' : `vc-scheduler: ${line.trim().slice(0, 240)}`);
    if (line !== undefined) cmd(`grep -E 'ReScheduleKey|ForceDeleteFaultPod|delete pods:' .cluster/vc-scheduler.log`);
  } else {
    step('The decision (controller log: one structured line per decision, the same chain as an Event on the PodGroup)');
    await until('a job decision', async () => controllerLog((l) => l.message === 'job decision' && Array.isArray(l.actions) && l.actions.length > 0).length > 0, 30_000).catch(() => undefined);
    const decisions = controllerLog((l) => l.message === 'job decision' && Array.isArray(l.actions) && l.actions.length > 0);
    if (decisions.length === 0) say('(no job decision logged yet: see .cluster/controller.log)');
    for (const d of decisions.slice(-3)) {
      say(`job ${String(d.job)}: kind=${String(d.kind)} codes=${JSON.stringify(d.codes)} levels=${JSON.stringify(d.levels)}`);
      say(`  actions: ${(d.actions as string[]).join('; ')}`);
      say(`  reasons: ${String(d.reasons)}`);
    }
    cmd(`kubectl ${KC} -n demo get events --field-selector involvedObject.kind=PodGroup`);
    cmd(`grep '"job decision"' .cluster/controller.log`);
  }

  step(`The job ConfigMaps (written by ${yielded ? 'the ascend plugin' : 'clusterd-ts'})`);
  for (const [ns, name] of [['volcano-system', 'vcjob-fault-npu-cm'], ['mindx-dl', 'job-reschedule-reason']] as const) {
    // The decision is logged before it is carried out; the reason record follows the pod deletions.
    const cm = await until(name, () => client.getOrUndefined<KubeObject & { data?: Record<string, string> }>(paths.configMap(ns, name)), 30_000).catch(() => undefined);
    say(`${ns}/${name}: ${cm === undefined ? '(not written)' : JSON.stringify(cm.data).slice(0, 500)}`);
    if (cm !== undefined) cmd(`kubectl ${KC} -n ${ns} get cm ${name} -o yaml`);
  }

  step('The rescheduled pods (re-created by vc-controller-manager, placed by vc-scheduler)');
  try {
    const fresh = await until('replacement pods running', async () => {
      const list = await runningPods();
      const settled = list.filter((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] !== undefined);
      const replaced = list.filter((p) => !oldUids.has(p.metadata?.uid));
      return replaced.length > 0 && settled.length === list.length && list.length === 4 ? list : undefined;
    }, 120_000);
    for (const p of fresh) say(`${p.metadata?.name}  ${oldUids.has(p.metadata?.uid) ? 'kept    ' : 'replaced'}  on ${p.spec?.nodeName}  NPUs ${p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] ?? '-'}`);
  } catch {
    say('(no pod replaced within 120 s: see the decision above and .cluster/controller.log)');
  }
  cmd(`kubectl ${KC} -n demo get vcjob ${DEMO_JOB} -o jsonpath='{.status.state.phase} retries={.status.retryCount}{"\\n"}'`);

  step('Goodput: what the fault cost the job (clusterd_job_recovery_seconds, clusterd_job_lost_seconds_total)');
  try {
    const text = await until('the goodput histogram', async () => {
      const t = await (await fetch(`http://127.0.0.1:${HTTP_PORT}/metrics`)).text();
      return goodputOf(t, DEMO_JOB).pods_running !== undefined ? t : undefined;
    }, yielded ? 3_000 : 30_000);
    const g = goodputOf(text, DEMO_JOB);
    const at = (stage: string): string => (g[stage] === undefined ? '-' : `${g[stage]!.toFixed(2)} s`);
    say(`demo/${DEMO_JOB}: fault -> decided ${at('decided')}, -> pods deleted ${at('pods_deleted')}, -> replacements Running ${at('pods_running')}`);
    say(`lost seconds: ${g.lost === undefined ? '-' : g.lost.toFixed(2)} (first fault observed -> replacements Running; no process-level recovery, so no "resumed" report)`);
    cmd(`curl -s http://127.0.0.1:${HTTP_PORT}/metrics | grep -E 'clusterd_job_(recovery_seconds_(sum|count)|lost_seconds_total)'`);
  } catch {
    // An episode opens with a decision of ours that acts (telemetry/goodput.ts).
    say(yielded ? '(none: the ascend plugin, not clusterd-ts, decided this reschedule)' : '(no goodput figure within 30 s: see .cluster/controller.log)');
  }

  step('Metrics');
  for (const l of await metricsLines(['clusterd_decisions_total', 'clusterd_job_reschedules_total', 'clusterd_api_writes_total', 'clusterd_fault_to_action_seconds_count', 'clusterd_job_recovery_seconds_count', 'clusterd_job_lost_seconds_total', 'clusterd_npu_faults', 'clusterd_escalations_total', 'clusterd_invalid_input_total', 'clusterd_rescheduling_yielded'])) say(l);
  cmd(`curl -s http://127.0.0.1:${HTTP_PORT}/metrics | grep clusterd_`);

  step(`The decision history: kubectl clusterd explain demo/${DEMO_JOB} (DecisionRecords, the kubectl plugin in cli/)`);
  const history = await until('the job\'s decision history', async () => explain(`demo/${DEMO_JOB}`), yielded ? 5_000 : 20_000).catch(() => undefined);
  if (history === undefined) {
    say(yielded ? '(none: clusterd-ts left this decision to the ascend plugin, so it recorded none)' : '(no history yet: see .cluster/controller.log)');
  } else {
    for (const line of history.trimEnd().split('\n')) say(line);
    // kubectl takes no flags before a plugin's name: the plugin reads --kubeconfig itself.
    cmd(`PATH=$PWD/cli/bin:$PATH kubectl clusterd ${KC} explain demo/${DEMO_JOB}`);
    cmd(`kubectl ${KC} get decisionrecords -A -o wide`);
  }
  cmd(`PATH=$PWD/cli/bin:$PATH kubectl clusterd ${KC} faults`);

  if (plugin) {
    step('Story 2 (an A3 super-pod, a UB switch link-down, an HCCL retry) is skipped in --topology mindcluster');
    say('there the ascend plugin would place and reschedule the A3 job by its own super-pod rules (sp-block, accelerator-type),');
    say('which this demo does not set up; story 2 shows clusterd-ts rescheduling: make demo (default topology)');
  } else {
    await a3Story({ client, injector, explain }, nodeNames(NODES).slice(-SUPER_POD_NODES));
  }

  console.log(`\n${bold('The cluster stays up for exploration. Ctrl-C stops the controller and the cluster.')}`);
  say('inject more faults (the simulator CLI; the Node the Makefile pins runs the TypeScript sources):');
  cmd(`node_modules/.bin/node tools/simulator/cli.ts inject ${KC} --node node-001 --npu Ascend910-0 --code 80E01801`);
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log('\nstopping…');
    await cleanup();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  if (process.env.DEMO_EXIT === '1') await stop();
  setInterval(() => undefined, 1 << 30);
}

main().catch(async (e: unknown) => {
  console.error(`demo failed: ${e instanceof Error ? e.message : String(e)}`);
  try { execFileSync('tail', ['-20', join(REPO, '.cluster', 'controller.log')], { stdio: 'inherit' }); } catch { /* no log */ }
  await cleanup();
  process.exit(1);
});
