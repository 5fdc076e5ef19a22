/**
 * The README's main command end to end: `node tools/demo.ts` (what `make demo` runs, default
 * topology: the real Volcano's stock vc-scheduler and vc-controller-manager, clusterd-ts
 * rescheduling) on its own control plane in .cluster, then every command it printed, run as printed
 * with `bash -c` from the repository root in a shell without the Makefile's PATH (no
 * node_modules/.bin), while the demo stays up; then SIGTERM, as Ctrl-C, tears it all down.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterDown } from '../../tools/cluster.ts';
import { freePort } from '../../tools/control-plane/control-plane.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** What a printed command's output must show, beyond exit 0 and some output. */
const EXPECT: Array<[RegExp, RegExp]> = [
  [/ get nodes$/, /node-015\s+Ready/],
  [/clusterd .* explain demo\/llama-pretrain$/, /job\/start \(decision\.job-level\) {2}outcome=acted[\s\S]*because \[fault\] 80E18402 SeparateNPU on node-\d+\/Ascend910-\d/],
  [/get decisionrecords/, /llama-pretrain\s+job\s+start\s+decision\.job-level\s+acted/],
  [/clusterd .* faults$/, /80E18402\s+SeparateNPU/],
  [/grep '"job decision"'/, /forceDeletePods\(llama-pretrain-worker-/],
  [/get vcjob llama-pretrain/, /^Running retries=1/],
  [/simulator\/cli\.ts inject/, /"written": true/],
  // story 2, the A3 super-pod
  [/get nodes -l accelerator-type=/, /node-012\s+Ready[\s\S]*node-015\s+Ready/],
  [/grep -o '"SuperPodID"/, /^"SuperPodID":0,"ServerIndex":0$/m],
  [/get cm cluster-info-switch-\d+ .*mindx-dl-switchinfo-node-01/, /^"mindx-dl-switchinfo-node-01[2-5]":\{"FaultCode":/],
  [/grep -o '8C1F860B/, /fault_level\\?":\\?"NotHandleFault/],
  [/relation fault strategy decided/, /^(?=[\s\S]*"message":"switch link-down remembered for HCCL retries")(?=[\s\S]*"message":"relation fault strategy decided"[^\n]*"strategy":"Separate")(?=[\s\S]*"message":"pod labelled fault-type \(relation fault\)")/],
  [/job-reschedule-reason .*a3-step-retry/, /"RescheduleReason":"RelationFaultSeparate","PodName":"a3-step-retry-worker-1"/],
  [/get pods -l volcano\.sh\/job-name=a3-step-retry/, /a3-step-retry-worker-0\s+1\/1\s+Running[\s\S]*a3-step-retry-worker-1\s+1\/1\s+Running/],
  [/clusterd .* explain demo\/a3-step-retry$/, /pod\/start \(decision\.process-level\) {2}outcome=acted[\s\S]*RelationFaultSeparate[\s\S]*force-delete a3-step-retry-worker-1/],
];

describe('make demo', () => {
  let demo: ChildProcess | undefined;
  afterAll(async () => {
    // After a failure the demo is still up: its own Ctrl-C path first, then by force.
    if (demo !== undefined && demo.exitCode === null) {
      const gone = new Promise((r) => demo!.once('exit', r));
      demo.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 30_000))]);
      if (demo.exitCode === null) demo.kill('SIGKILL');
    }
    if (existsSync(join(REPO, '.cluster', 'control-plane.json'))) await clusterDown();
  }, 90_000);

  it('handles a SeparateNPU fault on the real Volcano, and every command it prints runs as printed', async () => {
    const t0 = Date.now();
    const [http, grpc] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, ['tools/demo.ts'], { cwd: REPO, env: { ...process.env, KUBECONFIG: '', DEMO_HTTP_PORT: String(http), DEMO_GRPC_PORT: String(grpc) } });
    demo = child;
    let text = '';
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const up = new Promise<void>((resolve, reject) => {
      const onData = (b: Buffer): void => { text += b.toString(); if (text.includes('The cluster stays up')) resolve(); };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      void exited.then((code) => reject(new Error(`demo exited ${code}:\n${text}`)));
    });
    await up;
    await new Promise((r) => setTimeout(r, 500)); // the last lines after the banner
    process.stdout.write(`[demo] up in ${Date.now() - t0} ms\n${text.split('\n').filter((l) => /^\[\d+\]|replaced|acted|-> decided|lost seconds|hidden:|strategy decided/.test(l)).join('\n')}\n`);

    expect(text).toContain('topology stock (default)');
    expect(text).toMatch(/kind=job .*80E18402/);
    expect(text).toMatch(/replaced {2}on node-\d+/);
    expect(text).toMatch(/clusterd_decisions_total\{kind="job",outcome="acted"\} 1/);
    // The restart's completion observed on the real Volcano: every goodput stage has a figure.
    expect(text).toMatch(/demo\/llama-pretrain: fault -> decided \d+\.\d\d s, -> pods deleted \d+\.\d\d s, -> replacements Running \d+\.\d\d s/);

    // Story 2, the A3 super-pod: the link-down seen, then gone; the HCCL retry hidden its 10 s, then
    // kept at its level; the relation rule separates rank 1's node; only rank 1's pod is replaced.
    expect(text).toMatch(/\[\d+\] Story 2, an A3 super-pod: node-012\.\.node-015/);
    const ld = /Inject: UB switch link-down \S+ \(NotHandle\) on (node-01[2-5]), rank 1's node/.exec(text);
    expect(ld).not.toBeNull();
    const r1Node = ld![1]!;
    expect(text).toContain(`cluster-info-switch-0 mindx-dl-switchinfo-${r1Node}: FaultLevel=NotHandle`);
    expect(text).toContain(`mindx-dl-switchinfo-${r1Node}: no fault listed any more`);
    const hidden = /hidden: absent from cluster-info-device-\d+ for (\d+\.\d) s/.exec(text);
    expect(Number(hidden?.[1])).toBeGreaterThanOrEqual(10);
    expect(text).toContain('then reported at NotHandleFault, not re-levelled to RestartBusiness');
    expect(text).toContain(`relation fault strategy decided: node ${r1Node} strategy Separate`);
    expect(text).toMatch(/the controller's link-down memory forced it back/);
    expect(text).toContain('pod a3-step-retry-worker-1: label fault-type=Separate (rank 1)');
    expect(text).toContain(`RelationFaultSeparate: pod a3-step-retry-worker-1 on ${r1Node}`);
    expect(text).toMatch(/a3-step-retry-worker-0 {2}kept {6}on node-01[2-5]/);
    expect(text).toMatch(/a3-step-retry-worker-1 {2}replaced {2}on node-01[2-5]/);

    // As a user's shell has it: the Makefile's node_modules/.bin is not on PATH.
    const PATH = (process.env.PATH ?? '').split(delimiter).filter((d) => !d.includes('node_modules')).join(delimiter);
    const commands = [...text.matchAll(/^ {4}\$ (.+)$/gm)].map((m) => m[1]!);
    expect(commands.some((c) => / clusterd .*explain /.test(c))).toBe(true);
    const failures: string[] = [];
    for (const c of commands) {
      const r = spawnSync('bash', ['-c', c], { cwd: REPO, env: { HOME: process.env.HOME, PATH }, encoding: 'utf8', timeout: 60_000 });
      const want = EXPECT.find(([re]) => re.test(c))?.[1];
      if (r.status !== 0 || r.stdout.trim() === '' || (want !== undefined && !want.test(r.stdout))) {
        failures.push(`$ ${c}\nexit ${r.status}\n${r.stdout.slice(0, 400)}${r.stderr.slice(0, 400)}`);
      }
    }
    expect(failures).toEqual([]);
    expect(commands.filter((c) => EXPECT.some(([re]) => re.test(c)))).toHaveLength(EXPECT.length);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    process.stdout.write(`[demo] ${commands.length} printed commands run; wall ${Date.now() - t0} ms\n`);
  }, 600_000);
});
