/**
 * The README's main command, end to end: `node tools/demo.ts` (what `make demo` runs) on its own
 * local control plane, with DEMO_EXIT=1 so it tears down instead of waiting for Ctrl-C.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

describe('make demo', () => {
  it('shows a SeparateNPU fault handled end to end: level, decision, ConfigMaps, replaced pods, metrics, decision history', async () => {
    const out = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const child = spawn(process.execPath, [join(REPO, 'tools', 'demo.ts')], { cwd: REPO, env: { ...process.env, DEMO_EXIT: '1', KUBECONFIG: '' } });
      let text = '';
      child.stdout.on('data', (b: Buffer) => { text += b.toString(); });
      child.stderr.on('data', (b: Buffer) => { text += b.toString(); });
      child.on('exit', (code) => resolve({ code, text }));
    });
    process.stdout.write(out.text.split('\n').filter((l) => /^\[\d+\]|replaced|decisions_total|-> decided|lost seconds/.test(l)).join('\n') + '\n');
    expect(out.code).toBe(0);
    expect(out.text).toMatch(/Unhealthy=Ascend910-\d/);
    expect(out.text).toMatch(/kind=job .*80E18402/);
    expect(out.text).toContain('vcjob-fault-npu-cm: {"fault-node"');
    expect(out.text).toMatch(/replaced {2}on node-\d+/);
    expect(out.text).toMatch(/clusterd_decisions_total\{kind="job",outcome="acted"\} 1/);
    // Goodput: the faulted job's episode, fault -> decided <= pods deleted <= replacements Running = lost seconds.
    const g = /fault -> decided ([\d.]+) s, -> pods deleted ([\d.]+) s, -> replacements Running ([\d.]+) s\n\s+lost seconds: ([\d.]+)/.exec(out.text);
    expect(g).not.toBeNull();
    const [decided, deleted, running, lost] = g!.slice(1).map(Number) as [number, number, number, number];
    expect(decided).toBeLessThanOrEqual(deleted);
    expect(deleted).toBeLessThanOrEqual(running);
    expect(lost).toBeCloseTo(running, 1);
    expect(running).toBeGreaterThan(0);
    expect(out.text).toMatch(/clusterd_job_recovery_seconds_count\{job_namespace="demo",job_name="[\w-]+",stage="pods_running"\} 1/);
    // It ends with `kubectl clusterd explain` of its job: the acted decision and its reason chain.
    expect(out.text).toMatch(/Decision history of demo\/llama-pretrain \(\d+ records?, newest first\)/);
    expect(out.text).toMatch(/job\/start \(B6 row 11\) {2}outcome=acted/);
    expect(out.text).toMatch(/because \[fault\] 80E18402 SeparateNPU on node-\d+\/Ascend910-\d/);
  }, 300_000);
});
