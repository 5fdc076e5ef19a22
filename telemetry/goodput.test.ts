import { Metrics } from './metrics.ts';
import { OVERFLOW_LABEL } from './series-cap.ts';

const job = (name: string, ns = 'train') => ({ key: `${ns}/${name}-uid`, namespace: ns, name });
const pod = (uid: string, phase = 'Running', extra: { terminating?: boolean; backup?: boolean } = {}) => ({ uid, phase, ...extra });

async function stages(m: Metrics, name: string): Promise<Record<string, { count: number; sum: number }>> {
  const out: Record<string, { count: number; sum: number }> = {};
  for (const v of (await m.jobRecoveryStages.get()).values) {
    if (v.labels.job_name !== name) continue;
    const s = String(v.labels.stage);
    out[s] ??= { count: 0, sum: 0 };
    if (v.metricName?.endsWith('_count')) out[s].count = v.value;
    if (v.metricName?.endsWith('_sum')) out[s].sum = v.value;
  }
  return out;
}
const lost = async (m: Metrics, name: string): Promise<number | undefined> => (await m.jobLostSeconds.get()).values.find((v) => v.labels.job_name === name)?.value;

describe('goodput episodes', () => {
  it('times a rescheduled job from the fault to its replacements Running, and counts that as lost seconds', async () => {
    const m = new Metrics({ processMetrics: false });
    const g = m.goodput;
    const j = job('llama');
    g.podsObserved(j.key, [pod('a'), pod('b')], 500); // no episode: nothing
    g.decided(j, { faultSinceMs: 1_000, atMs: 1_400, awaitResume: false, targets: ['a', 'b'], minRunning: 2 });
    g.podsDeleted(j.key, 1_600);
    g.podsObserved(j.key, [pod('a', 'Running', { terminating: true }), pod('c')], 2_000); // a target still there
    g.podsObserved(j.key, [pod('c'), pod('d', 'Pending')], 3_000); // one replacement not Running
    expect(await lost(m, 'llama')).toBeCloseTo(0.6);
    g.podsObserved(j.key, [pod('c'), pod('d'), pod('x', 'Running', { backup: true })], 9_000);
    expect(await stages(m, 'llama')).toEqual({
      decided: { count: 1, sum: 0.4 }, pods_deleted: { count: 1, sum: 0.6 }, pods_running: { count: 1, sum: 8 },
    });
    expect(await lost(m, 'llama')).toBeCloseTo(8);
    expect(g.openEpisodes()).toBe(0);
    // A later reconcile of the recovered job adds nothing.
    g.podsObserved(j.key, [pod('c'), pod('d')], 20_000);
    expect(await lost(m, 'llama')).toBeCloseTo(8);
  });

  it('a job handed to process-level recovery ends at resumed, also when pods were replaced first', async () => {
    const m = new Metrics({ processMetrics: false });
    const g = m.goodput;
    const j = job('gpt');
    g.faultObserved(j, 10_000); // the FSM took the fault first (gRPC)
    g.decided(j, { faultSinceMs: 9_000, atMs: 10_500, awaitResume: true, targets: ['a'], minRunning: 2 });
    g.podsDeleted(j.key, 10_700);
    g.podsObserved(j.key, [pod('b'), pod('c')], 15_000);
    expect(g.openEpisodes()).toBe(1);
    expect(await lost(m, 'gpt')).toBeCloseTo(6);
    g.resumed(j.key, 25_000);
    expect(Object.keys(await stages(m, 'gpt')).sort()).toEqual(['decided', 'pods_deleted', 'pods_running', 'resumed']);
    expect((await stages(m, 'gpt')).resumed).toEqual({ count: 1, sum: 16 });
    expect(await lost(m, 'gpt')).toBeCloseTo(16);
    expect(g.openEpisodes()).toBe(0);
    g.resumed(j.key, 30_000); // no open episode: ignored
    expect(await lost(m, 'gpt')).toBeCloseTo(16);
  });

  it('a second fault after recovery is a second episode; a failed-pods decision starts at the decision', async () => {
    const m = new Metrics({ processMetrics: false });
    const g = m.goodput;
    const j = job('bert');
    g.decided(j, { faultSinceMs: 0, atMs: 1_000, awaitResume: false, targets: ['a'], minRunning: 1 });
    g.podsObserved(j.key, [pod('b')], 4_000);
    g.decided(j, { faultSinceMs: 50_000, atMs: 51_000, awaitResume: false, targets: ['b'], minRunning: 1 });
    g.podsObserved(j.key, [pod('c')], 60_000);
    expect((await stages(m, 'bert')).pods_running).toEqual({ count: 2, sum: 13 });
    expect(await lost(m, 'bert')).toBeCloseTo(13);
  });

  it('drops the job\'s series when it is gone, and caps the jobs with series', async () => {
    const m = new Metrics({ processMetrics: false, maxSeriesPerMetric: 10 });
    const g = m.goodput;
    for (let i = 0; i < 15; i++) g.decided(job(`j${i}`), { faultSinceMs: 0, atMs: 0, awaitResume: false, targets: ['a'], minRunning: 1 });
    const names = async (): Promise<Set<string>> => new Set((await m.jobLostSeconds.get()).values.map((v) => String(v.labels.job_name)));
    expect((await names()).size).toBe(11);
    expect((await names()).has(OVERFLOW_LABEL)).toBe(true);
    g.jobGone(job('j0').key);
    expect((await names()).has('j0')).toBe(false);
    expect((await m.jobRecoveryStages.get()).values.some((v) => v.labels.job_name === 'j0')).toBe(false);
    g.jobGone(job('j14').key); // aggregated: `other` stays (it stands for others too)
    expect((await names()).has(OVERFLOW_LABEL)).toBe(true);
    // The freed place goes to the next new job.
    g.decided(job('new'), { faultSinceMs: 0, atMs: 0, awaitResume: false, targets: ['a'], minRunning: 1 });
    expect((await names()).has('new')).toBe(true);
  });
});
