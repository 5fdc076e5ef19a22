/**
 * `make bench` at toy sizes, so the benchmark cannot rot: every scenario runs end to end (its own
 * benchmark control plane, kwok nodes, the device plugin simulator, the controller process, the
 * in-process scale run) and every figure is produced. Nothing about speed is asserted.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const SCALE_SIZES = [100, 200];

function runBench(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO, 'tools', 'bench.ts'), ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_NO_WARNINGS: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Figures whose value needs the controller's jobs flow (n/a without it). */
const JOBS_ONLY = /^(single_fault_to_(vcjob_cm|pods_deleted)_(p50|p90|p99|max)_ms|cold_start_pods_deleted_s)$/;

describe('make bench (smoke: tiny sizes, short durations)', () => {
  const out = join(mkdtempSync(join(tmpdir(), 'bench-smoke-')), 'smoke.json');
  let run: { code: number | null; stdout: string; stderr: string };
  let figures: Map<string, { value: string; unit: string }>;

  beforeAll(async () => {
    run = await runBench([
      '--scenario', 'all', '--nodes', '40', '--faults', '6', '--storm-nodes', '16', '--domain-size', '8',
      '--steady-minutes', '0.25', '--dp-refresh-seconds', '6', '--scale-sizes', SCALE_SIZES.join(','),
      '--scale-update-seconds', '1', '--timeout-seconds', '30', '--out', out,
    ]);
    figures = new Map();
    for (const line of run.stdout.split('\n')) {
      const m = /^([a-z0-9_]+): (\S+) (\S+)$/.exec(line);
      if (m !== null) figures.set(m[1]!, { value: m[2]!, unit: m[3]! });
    }
  }, 170_000);

  it('finishes without a failed scenario', () => {
    if (run.code !== 0) throw new Error(`bench exited ${run.code}\n${run.stdout.slice(-4000)}\n${run.stderr.slice(-2000)}`);
    expect(run.stdout).not.toContain('FAILED');
  });

  it('prints every headline figure as `name: value unit`', () => {
    const headline = [
      'single_fault_to_decision_p50_ms', 'single_fault_to_decision_p99_ms', 'single_fault_to_pods_deleted_p50_ms',
      'single_fault_to_pods_deleted_p99_ms', 'storm_all_jobs_written_s', 'storm_writes_per_affected_job', 'steady_state_writes',
      'steady_state_rss_min_mib', 'steady_state_rss_median_mib', 'steady_state_rss_max_mib', 'steady_state_rss_band_percent',
      ...SCALE_SIZES.map((n) => `rss_mib_${n}_nodes`), 'cold_start_synced_s',
    ];
    for (const name of headline) expect([name, figures.has(name)]).toEqual([name, true]);
    for (const base of ['single_fault_to_decision', 'single_fault_to_cluster_info', 'single_fault_to_vcjob_cm', 'single_fault_to_pods_deleted']) {
      for (const p of ['p50', 'p90', 'p99', 'max']) expect(figures.has(`${base}_${p}_ms`)).toBe(true);
    }
    for (const n of SCALE_SIZES) {
      for (const f of ['heap_mib', 'scale_first_cluster_info_ms', 'scale_render_ms', 'scale_updates_per_s']) expect(figures.has(`${f}_${n}_nodes`)).toBe(true);
    }
    for (const f of ['storm_switch_domain_all_jobs_written_s', 'storm_switch_domain_writes_per_affected_job', 'steady_state_cpu_s', 'cold_start_first_decision_s']) {
      expect(figures.has(f)).toBe(true);
    }
  });

  it('measures every figure; only the jobs-flow figures may be n/a, and only without the jobs flow', () => {
    const jobsFlow = figures.get('bench_jobs_controller_present')?.value === '1';
    const na = [...figures].filter(([, f]) => f.value === 'n/a').map(([n]) => n);
    for (const name of na) expect([name, !jobsFlow && JOBS_ONLY.test(name)]).toEqual([name, true]);
    for (const [name, f] of figures) if (f.value !== 'n/a') expect([name, Number.isFinite(Number(f.value))]).toEqual([name, true]);
    if (!jobsFlow) expect(run.stdout).toMatch(/# .*no jobs flow/);
  });

  it('writes the JSON report with versions and machine facts', () => {
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      versions: Record<string, unknown>; machineAtStart: Record<string, unknown>; figures: Array<{ name: string; value: number | null; unit: string }>;
    };
    expect(report.versions.node).toBe(process.version);
    for (const k of ['kubeApiserver', 'etcd', 'kwok']) expect(String(report.versions[k])).not.toBe('unknown');
    expect(Object.keys(report.versions.packages as object)).toContain('@kubernetes/client-node');
    expect(report.machineAtStart.cores).toBeGreaterThan(0);
    expect(report.machineAtStart.memoryMiB).toBeGreaterThan(0);
    expect(report.figures.map((f) => f.name).sort()).toEqual([...figures.keys()].sort());
  });
});
