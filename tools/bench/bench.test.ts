import { parseBenchArgs } from '../bench.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diffCounts, imageEnv, imageNodeArgs, parseMetrics, sumOf, writesByKind } from './controller-process.ts';
import { percentile, planJobs } from './fixtures.ts';
import { Figures } from './report.ts';
import { rssBand } from './steady.ts';
import { bootstrapMedianRatio } from './peer.ts';
import { prng } from '../prng.ts';

describe('bench helpers', () => {
  it('the controller is measured with the environment of the image\'s runtime stage', () => {
    const env = imageEnv();
    expect(env['NODE_OPTIONS']).toMatch(/--max-old-space-size=\d+/);
    // The allocator settings that keep the steady RSS band narrow (docs/benchmarks.md).
    expect(env['GLIBC_TUNABLES']).toMatch(/glibc\.malloc\.arena_max=\d+/);
    const dir = mkdtempSync(join(tmpdir(), 'bench-env-'));
    writeFileSync(join(dir, 'Dockerfile'), [
      'FROM node AS build', 'ENV BUILD_ONLY=1', 'FROM node AS runtime', 'ENV A=1 \\', '    B="x y" \\', '    C=', 'RUN true', 'ENV D=4',
    ].join('\n'));
    expect(imageEnv(join(dir, 'Dockerfile'))).toEqual({ A: '1', B: 'x y', C: '', D: '4' });
    expect(imageEnv(join(dir, 'missing'))).toEqual({});
    writeFileSync(join(dir, 'Dockerfile'), 'FROM node\nENTRYPOINT ["node", "--max-lazy", \\\n  "--no-opt", "dist/main.mjs"]\n');
    expect(imageNodeArgs(join(dir, 'Dockerfile'))).toEqual(['--max-lazy', '--no-opt']);
    expect(imageNodeArgs(join(dir, 'missing'))).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('percentile is nearest-rank', () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  it('plans whole jobs over consecutive nodes', () => {
    const jobs = planJobs(['a', 'b', 'c', 'd', 'e'], 2, 8);
    expect(jobs.map((j) => j.nodes)).toEqual([['a', 'b'], ['c', 'd']]);
  });

  it('reads counters from the Prometheus text format', () => {
    const text = [
      '# HELP clusterd_api_writes_total x', '# TYPE clusterd_api_writes_total counter',
      'clusterd_api_writes_total{kind="cluster_info",result="success"} 3',
      'clusterd_api_writes_total{kind="cluster_info",result="409"} 1',
      'clusterd_api_writes_total{kind="pod_force_delete",result="success"} 8',
      'clusterd_api_requests_total{method="GET",code="200"} 10',
      'clusterd_api_requests_total{method="PUT",code="200"} 4',
    ].join('\n');
    const m = parseMetrics(text);
    expect(writesByKind(m)).toEqual({ cluster_info: 3, pod_force_delete: 8 });
    expect(sumOf(m, 'clusterd_api_requests_total')).toBe(14);
    expect(diffCounts({ a: 5, b: 2 }, { a: 3, b: 2 })).toEqual({ a: 2 });
  });

  it('sums up steady-state RSS samples as min, median, max and band (max-min)/min', () => {
    const b = rssBand([120, 150, Number.NaN, 100, 130, 110]);
    expect(b).toEqual({ samples: 5, minMiB: 100, maxMiB: 150, medianMiB: 120, bandPercent: 50 });
    expect(rssBand([128, 128])?.bandPercent).toBe(0);
    expect(rssBand([Number.NaN])).toBeNull();
  });

  it('parses flags with defaults and rejects bad ones', () => {
    const o = parseBenchArgs([], new Date('2026-01-02T03:04:05.678Z'));
    expect(o.scenarios).toEqual(['scale', 'single', 'steady', 'storm', 'cold']);
    expect([o.nodes, o.npus, o.faults, o.stormNodes, o.steadyMinutes]).toEqual([1000, 8, 200, 100, 10]);
    expect(o.scaleSizes).toEqual([1000, 4000, 16000]);
    expect(o.out).toMatch(/bench-results\/2026-01-02T03-04-05-678Z\.json$/);
    expect(parseBenchArgs(['--scenario', 'cold,single', '--steady-minutes', '0.5']).scenarios).toEqual(['single', 'cold']);
    expect(() => parseBenchArgs(['--scenario', 'fast'])).toThrow(/not one of/);
    expect(() => parseBenchArgs(['--nodes', '1.5'])).toThrow(/integer/);
    expect(o.peer).toBe('');
    const p = parseBenchArgs(['--peer', 'clusterd', '--scenario', 'none', '--peer-nodes', '20']);
    expect([p.peer, p.scenarios, p.peerNodes, p.peerFaults]).toEqual(['clusterd', [], 20, 20]);
    expect(() => parseBenchArgs(['--peer', 'volcano'])).toThrow(/not clusterd/);
    // Faults land at random phases of a 1 s ticker unless told otherwise; a given seed repeats a run's pauses.
    expect(p.peerPhaseMs).toBe(1000);
    expect(parseBenchArgs(['--peer', 'clusterd', '--peer-seed', '7', '--peer-phase-ms', '0'])).toMatchObject({ peerSeed: 7, peerPhaseMs: 0 });
  });

  it('the median ratio\'s bootstrap interval holds the ratio, is exact for samples without spread, and widens with spread', () => {
    const flat = bootstrapMedianRatio([40, 40, 40], [400, 400, 400, 400], prng(1));
    expect(flat).toEqual({ low: 0.1, high: 0.1 });
    // ClusterD's figure spread over a 1 s tick (0-1,000 ms), ours near 40 ms.
    const r = prng(2);
    const theirs = Array.from({ length: 30 }, () => 50 + r() * 1000);
    const ours = Array.from({ length: 30 }, () => 35 + r() * 10);
    const ci = bootstrapMedianRatio(ours, theirs, prng(3));
    const point = percentile(ours, 50) / percentile(theirs, 50);
    expect(ci.low).toBeLessThanOrEqual(point);
    expect(ci.high).toBeGreaterThanOrEqual(point);
    expect(ci.high / ci.low).toBeGreaterThan(1.2);
    expect(bootstrapMedianRatio([], [1], prng(1)).low).toBeNaN();
  });

  it('prints `name: value unit` and n/a with a note', () => {
    const lines: string[] = [];
    const f = new Figures((l) => lines.push(l));
    f.add('s', 'x_ms', 12.34567, 'ms');
    f.add('s', 'y_ms', null, 'ms', 'no jobs flow');
    f.addDistribution('s', 'z', [1, 2, 3], 'ms');
    expect(lines).toEqual(['x_ms: 12.346 ms', 'y_ms: n/a ms', '# y_ms: no jobs flow', 'z_p50_ms: 2 ms', 'z_p90_ms: 3 ms', 'z_p99_ms: 3 ms', 'z_max_ms: 3 ms']);
  });
});
