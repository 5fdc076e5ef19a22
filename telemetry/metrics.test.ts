import { execFileSync, spawnSync } from 'node:child_process';
import { Metrics, PREFIX } from './metrics.ts';

const promtool = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();

describe('metrics', () => {
  it('registers every metric under one prefix in its own registry', async () => {
    const m = new Metrics({ processMetrics: false });
    const names = (await m.registry.getMetricsAsJSON()).map((x) => x.name);
    expect(names.length).toBeGreaterThan(15);
    for (const n of names) expect(n.startsWith(PREFIX)).toBe(true);
    expect(new Metrics({ processMetrics: false }).registry).not.toBe(m.registry);
  });

  // promtool comes from Debian's `prometheus` package; `make test` installs it (CI runs as root).
  (promtool !== '' || process.env.CI === 'true' ? it : it.skip)('passes promtool check metrics, with samples of every metric', async () => {
    const m = new Metrics();
    m.watchHealthy.set({ source: 'pods' }, 1);
    m.apiRequests.inc({ method: 'GET', code: '200' });
    m.faults.set({ source: 'npu', level: 'SeparateNPU', code: '80E18402' }, 1);
    m.decisions.inc({ kind: 'job', outcome: 'acted' });
    m.faultToAction.observe({ action: 'delete_pods' }, 0.12);
    m.grpcRequests.inc({ method: '/Recover/Init', code: '0' });
    m.nodeFaults.set({ node: 'node-1', level: 'SeparateNPU' }, 1);
    m.npuFaults.set({ node: 'node-1', npu: 'Ascend910-3', level: 'SeparateNPU' }, 1);
    m.goodput.decided({ key: 'ns/job-uid', namespace: 'ns', name: 'job' }, { faultSinceMs: 1_000, atMs: 1_500, awaitResume: false, targets: ['a'], minRunning: 1 });
    m.goodput.podsObserved('ns/job-uid', [{ uid: 'b', phase: 'Running' }], 9_000);
    const text = await m.registry.metrics();
    const out = execFileSync(promtool || 'promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(out.trim()).toBe('');
  });
});
