/**
 * `make demo`, the README's main command. With KUBECONFIG pointing at a real cluster it runs the
 * controller against it. Otherwise it starts the local control plane with 16 kwok nodes x 8 NPUs,
 * the device plugin simulator, a sample Volcano Job and an AscendJob, the controller, injects a
 * fault and prints, step by step, what happened; then it stays up until Ctrl-C.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync, existsSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterUp, clusterDown } from './cluster.ts';
import { KubeClient, paths, type KubeObject } from '../runtime/kube-client.ts';
import { FaultInjector } from './simulator/injector.ts';
import { NpuAllocator, ASCEND_REAL_ANNOTATION } from './simulator/allocator.ts';
import { nodeNames } from './simulator/nodes.ts';
import { chipLists } from './simulator/npu-state.ts';
import { startSampleJobs, type SampleJobs } from './demo-jobs.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const LOCAL_KUBECONFIG = join(REPO, '.cluster', 'kubeconfig');
const NODES = 16;
const HTTP_PORT = 11253;

const bold = (s: string): string => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
let stepNo = 0;
const step = (title: string): void => { stepNo++; console.log(`\n${bold(`[${stepNo}] ${title}`)}`); };
const say = (s: string): void => console.log(`    ${s}`);
const cmd = (s: string): void => console.log(`    $ ${s}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try { const v = await fn(); if (v !== undefined && v !== false) return v; } catch { /* retry */ }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

function runAgainstRealCluster(kubeconfig: string): void {
  console.log(`KUBECONFIG=${kubeconfig}: running the controller against that cluster (Ctrl-C to stop).`);
  const child = spawn(process.execPath, [join(REPO, 'main.ts'), `--kubeconfig=${kubeconfig}`], { stdio: 'inherit' });
  child.on('exit', (code) => process.exit(code ?? 0));
}

function startController(): ChildProcess {
  const log = openSync(join(REPO, '.cluster', 'controller.log'), 'a');
  return spawn(process.execPath, [join(REPO, 'main.ts'), `--kubeconfig=${LOCAL_KUBECONFIG}`, `--http-port=${HTTP_PORT}`, '--grpc-host=127.0.0.1', '--http-host=127.0.0.1'], { stdio: ['ignore', log, log] });
}

/** Controller log lines (JSON) that match a predicate. */
function controllerLog(match: (l: Record<string, unknown>) => boolean): Array<Record<string, unknown>> {
  const file = join(REPO, '.cluster', 'controller.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').flatMap((line) => {
    try { const l = JSON.parse(line) as Record<string, unknown>; return match(l) ? [l] : []; } catch { return []; }
  });
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

async function main(): Promise<void> {
  const kc = process.env.KUBECONFIG;
  if (kc !== undefined && kc !== '' && resolve(kc) !== LOCAL_KUBECONFIG) { runAgainstRealCluster(kc); return; }

  step(`Local control plane: etcd + kube-apiserver + kube-scheduler + kwok with ${NODES} nodes x 8 NPUs`);
  await clusterUp(NODES);
  cleanups.push(() => clusterDown());
  const client = KubeClient.fromFile(LOCAL_KUBECONFIG);
  for (const ns of ['mindx-dl', 'volcano-system', 'cluster-system', 'demo']) {
    if ((await client.getOrUndefined(`/api/v1/namespaces/${ns}`)) === undefined) await client.create(paths.namespaces(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  }
  cmd('kubectl --kubeconfig .cluster/kubeconfig get nodes');

  step('Device plugin simulator: healthy device-info ConfigMaps for every node (CheckCode included)');
  const injector = new FaultInjector(client);
  await injector.addNodes(nodeNames(NODES).map((name) => ({ name })));
  const allocator = new NpuAllocator(client, {
    namespace: 'demo',
    unhealthy: (node) => { try { return chipLists(injector.devicePlugin.state(node)).unhealthy; } catch { return []; } },
  });
  await allocator.start();
  cleanups.push(() => allocator.stop());
  cmd('kubectl --kubeconfig .cluster/kubeconfig -n kube-system get cm -l mx-consumer-cim=true');

  step('The controller (node main.ts), logs in .cluster/controller.log');
  const controller = startController();
  cleanups.push(() => { controller.kill('SIGTERM'); });
  await until('controller ready', async () => (await fetch(`http://127.0.0.1:${HTTP_PORT}/readyz`)).ok, 60_000);
  say(`ready: http://127.0.0.1:${HTTP_PORT}/readyz, metrics on /metrics, gRPC on 127.0.0.1:8899`);

  step('Sample jobs: a Volcano Job (4 pods x 8 NPUs, fault-scheduling=force) and an AscendJob');
  const jobs: SampleJobs = await startSampleJobs(client, 'demo');
  cleanups.push(() => jobs.stop());
  const pods = await until('4 running pods with NPUs', async () => {
    const list = await client.list<KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } }>(paths.pods('demo'), { labelSelector: `volcano.sh/job-name=${jobs.vcjobName}` });
    const ok = list.items.filter((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] !== undefined);
    return ok.length === 4 ? ok : undefined;
  }, 120_000);
  for (const p of pods) say(`${p.metadata?.name}  rank ${p.metadata?.annotations?.['hccl/rankIndex']}  on ${p.spec?.nodeName}  NPUs ${p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION]}`);
  cmd('kubectl --kubeconfig .cluster/kubeconfig -n demo get pods -o wide');

  const victim = pods.find((p) => p.metadata?.annotations?.['hccl/rankIndex'] === '2') ?? pods[0]!;
  const node = victim.spec!.nodeName!;
  const npu = (victim.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] ?? 'Ascend910-3').split(',')[3] ?? 'Ascend910-3';
  const oldUids = new Set(pods.map((p) => p.metadata?.uid));

  step(`Inject: code 80E18402 (SeparateNPU) on ${npu} of ${node}, used by rank 2 (${victim.metadata?.name})`);
  const ack = await injector.inject({ kind: 'npu', node, npu, code: '80E18402' });
  say(`device plugin wrote kube-system/${ack.name} (resourceVersion ${ack.resourceVersion})`);
  cmd(`kubectl --kubeconfig .cluster/kubeconfig -n kube-system get cm ${ack.name} -o jsonpath='{.data.DeviceInfoCfg}'`);

  step('The level Volcano sees: cluster-info-device-* (written by the controller)');
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
  cmd(`kubectl --kubeconfig .cluster/kubeconfig -n mindx-dl get cm ${entry.cm} -o jsonpath='{.data.${entry.cm}}'`);

  step('The decision (controller log: one structured line per decision, the same chain as an Event on the PodGroup)');
  await until('a job decision', async () => controllerLog((l) => l.message === 'job decision' && Array.isArray(l.actions) && l.actions.length > 0).length > 0, 30_000).catch(() => undefined);
  const decisions = controllerLog((l) => l.message === 'job decision' && Array.isArray(l.actions) && l.actions.length > 0);
  if (decisions.length === 0) say('(no job decision logged yet: see .cluster/controller.log)');
  for (const d of decisions.slice(-3)) {
    say(`job ${String(d.job)}: kind=${String(d.kind)} codes=${JSON.stringify(d.codes)} levels=${JSON.stringify(d.levels)}`);
    say(`  actions: ${(d.actions as string[]).join('; ')}`);
    say(`  reasons: ${String(d.reasons)}`);
  }
  cmd(`kubectl --kubeconfig .cluster/kubeconfig -n demo get events --field-selector involvedObject.kind=PodGroup`);
  cmd(`grep '"job decision"' .cluster/controller.log`);

  step('The job ConfigMaps');
  for (const [ns, name] of [['volcano-system', 'vcjob-fault-npu-cm'], ['mindx-dl', 'job-reschedule-reason']] as const) {
    // The decision is logged before it is carried out; the reason record follows the pod deletions.
    const cm = await until(name, () => client.getOrUndefined<KubeObject & { data?: Record<string, string> }>(paths.configMap(ns, name)), 15_000).catch(() => undefined);
    say(`${ns}/${name}: ${cm === undefined ? '(not written)' : JSON.stringify(cm.data).slice(0, 500)}`);
    cmd(`kubectl --kubeconfig .cluster/kubeconfig -n ${ns} get cm ${name} -o yaml`);
  }

  step('The rescheduled pods');
  try {
    const fresh = await until('replacement pods running', async () => {
      const list = await client.list<KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } }>(paths.pods('demo'), { labelSelector: `volcano.sh/job-name=${jobs.vcjobName}` });
      const settled = list.items.filter((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] !== undefined);
      const replaced = list.items.filter((p) => !oldUids.has(p.metadata?.uid));
      return replaced.length > 0 && settled.length === list.items.length && list.items.length === 4 ? list.items : undefined;
    }, 60_000);
    for (const p of fresh) say(`${p.metadata?.name}  ${oldUids.has(p.metadata?.uid) ? 'kept    ' : 'replaced'}  on ${p.spec?.nodeName}  NPUs ${p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] ?? '-'}`);
  } catch {
    say('(no pod replaced within 60 s: see the decision above and .cluster/controller.log)');
  }

  step('Goodput: what the fault cost the job (clusterd_job_recovery_seconds, clusterd_job_lost_seconds_total)');
  try {
    const text = await until('the goodput histogram', async () => {
      const t = await (await fetch(`http://127.0.0.1:${HTTP_PORT}/metrics`)).text();
      return goodputOf(t, jobs.vcjobName).pods_running !== undefined ? t : undefined;
    }, 30_000);
    const g = goodputOf(text, jobs.vcjobName);
    const at = (stage: string): string => (g[stage] === undefined ? '-' : `${g[stage]!.toFixed(2)} s`);
    say(`demo/${jobs.vcjobName}: fault -> decided ${at('decided')}, -> pods deleted ${at('pods_deleted')}, -> replacements Running ${at('pods_running')}`);
    say(`lost seconds: ${g.lost === undefined ? '-' : g.lost.toFixed(2)} (first fault observed -> replacements Running; no process-level recovery, so no "resumed" report)`);
  } catch {
    say('(no goodput figure within 30 s: see .cluster/controller.log)');
  }
  cmd(`curl -s http://127.0.0.1:${HTTP_PORT}/metrics | grep -E 'clusterd_job_(recovery_seconds_(sum|count)|lost_seconds_total)'`);

  step('Metrics');
  for (const l of await metricsLines(['clusterd_decisions_total', 'clusterd_job_reschedules_total', 'clusterd_api_writes_total', 'clusterd_fault_to_action_seconds_count', 'clusterd_job_recovery_seconds_count', 'clusterd_job_lost_seconds_total', 'clusterd_npu_faults', 'clusterd_escalations_total', 'clusterd_invalid_input_total'])) say(l);
  cmd(`curl -s http://127.0.0.1:${HTTP_PORT}/metrics | grep clusterd_`);

  step(`The decision history: kubectl clusterd explain demo/${jobs.vcjobName} (DecisionRecords, the kubectl plugin in cli/)`);
  const explain = (): string => execFileSync(process.execPath, [join(REPO, 'cli', 'kubectl-clusterd.ts'), 'explain', `demo/${jobs.vcjobName}`], {
    env: { ...process.env, KUBECONFIG: LOCAL_KUBECONFIG }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
  const history = await until('the job\'s decision history', async () => explain(), 20_000).catch((e: unknown) => `(no history yet: ${String((e as { stderr?: string }).stderr ?? e)})`);
  for (const line of history.trimEnd().split('\n')) say(line);
  cmd(`PATH=$PWD/cli/bin:$PATH kubectl --kubeconfig .cluster/kubeconfig clusterd explain demo/${jobs.vcjobName}`);
  cmd('kubectl --kubeconfig .cluster/kubeconfig get decisionrecords -A -o wide');

  console.log(`\n${bold('The cluster stays up for exploration. Ctrl-C stops the controller and the cluster.')}`);
  console.log('    node tools/simulator/cli.ts inject --node node-001 --npu Ascend910-0 --code 80E01801   # inject more faults');
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
