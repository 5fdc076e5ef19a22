/**
 * The recover-in-place filter (docs/rules.md#filter.recover-in-place) fed by the recovery FSM's plan (docs/rules.md#recover.in-place), in one virtual
 * time: a pod rank's L2/L3 fault stays out of the scheduler view while the rank may restart in place,
 * and reaches it as soon as the FSM puts the pod on its exit list (not at the 60 s window end); a rank
 * restarted in place stays hidden until 60 s.
 */
import { VirtualAction, VirtualTimeScheduler, type Subscription } from 'rxjs';
import { initialHotSwitchState } from '../policy/recovery/hot-switch-fsm.ts';
import { initialRecoveryState } from '../policy/recovery/recovery-fsm.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { ObservedFaultRank } from '../policy/recovery/recovery-types.ts';
import type { QueueClock } from '../runtime/work-queue.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { recordingLogger, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { FaultFiltersController } from './fault-filters.controller.ts';
import { fakeSources, pod, podGroup, rec } from '../test/support/fault-filters-fakes.ts';
import { schedulerClock } from '../runtime/work-queue.ts';
import { JobFsm, recoveryCommandLoop } from './recovery-job.ts';

const S = 1000;
const NS = 'team-a';
const UID = 'u1';

function setUp() {
  const vts = new VirtualTimeScheduler(VirtualAction, Infinity);
  // The filters' timers run on the FSM's scheduler: one clock for both.
  const clock: QueueClock = {
    now: () => vts.now(),
    setTimeout: (fn, ms) => vts.schedule(fn, ms),
    clearTimeout: (h) => (h as Subscription).unsubscribe(),
  };
  const { pods, podGroups, sources } = fakeSources();
  const records = new Map<string, FaultRecord[]>();
  const lines: LogLine[] = [];
  const announced: string[][] = [];
  const ranks = [0, 1, 2];
  const loop = recoveryCommandLoop(() => job, { log: silentLogger, clock: schedulerClock(vts) });
  loop.start();
  const job: JobFsm = new JobFsm({ jobId: UID, key: `${NS}/llama-${UID}`, namespace: NS, jobName: 'llama', podGroupName: `llama-${UID}` },
    initialRecoveryState({
      config: { jobId: UID, strategies: ['recover-in-place', 'recover', 'exit'], jobRescheduling: true, podRescheduling: false, subHealthyStrategy: 'ignore', ranksPerPod: 2, waitRescheduleTimeoutS: 270 },
      pods: ranks.map((r) => ({ name: `llama-worker-${r}`, uid: `p${r}`, podRank: r, phase: 'Running', npusAllocated: true })),
    }),
    initialHotSwitchState({ jobId: UID, framework: 'pytorch', subHealthyStrategy: 'ignore' }),
    {
      execute: async () => undefined, commands: loop.queue, persist: () => undefined, log: silentLogger, scheduler: vts,
      // What RecoveryController does: re-announce the job's nodes.
      mustExitChanged: () => announced.push(['n0', 'n1', 'n2']),
    });
  job.start();
  const filters = new FaultFiltersController({
    sources, log: recordingLogger(lines), clock,
    jobView: (n) => records.get(n) ?? [],
    recovery: { schedulerView: (_n, r) => r, businessUce: () => [], mustExitReportedMs: (uid, rank) => (uid === UID ? job.mustExitReportedMs(rank) : undefined), stressTestNodes: () => new Set() },
    notify: (nodes) => announced.push([...nodes]),
  });
  filters.start();
  podGroups.put(podGroup(NS, 'llama', UID, { labels: { 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': 'recover-in-place,recover' } }));
  for (const r of ranks) pods.put(pod(NS, 'llama', UID, r, `n${r}`, ['Ascend910-0', 'Ascend910-1']));

  const view = (n: string): string[] => filters.schedulerView(n, records.get(n) ?? [], vts.now()).map((r) => `${r.device}/${r.code}`);
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  };
  /** Virtual time forward to `atMs`, firing FSM and filter timers on the way. */
  const until = async (atMs: number): Promise<void> => {
    vts.maxFrames = atMs;
    vts.flush();
    vts.frame = atMs;
    await settle();
  };
  const feed = async (observed: ObservedFaultRank[]): Promise<void> => {
    await job.feed({ machine: 'recovery', event: { type: 'faultObserved', jobHealth: 'UnHealthy', ranks: observed } });
    await settle();
  };
  /** Fault seen and reported, stop complete; runs to the in-place check and returns when it ends (docs/rules.md#recover.fsm timings). */
  const start = async (observed: ObservedFaultRank[]): Promise<number> => {
    await feed(observed);
    for (const r of observed) await job.feed({ machine: 'recovery', event: { type: 'processFaultReported', faultRanks: [{ rankId: String(r.rankId), faultType: '1' }] } });
    await job.feed({ machine: 'recovery', event: { type: 'stopCompleteReported', code: 0 } });
    await settle();
    await until(12 * S); // flush 1 s + SDID force release 10 s
    expect(job.recovery.step).toBe('inPlaceCheck');
    const due = job.recovery.timers.find((x) => x.id === 'inPlaceCheck')?.dueAtMs ?? NaN;
    expect(due - vts.now()).toBeGreaterThan(10 * S); // the 15 s wait has most of its time left
    return due;
  };
  return { vts, job, filters, records, lines, announced, view, until, feed, start };
}

describe('recover-in-place filter fed by the recovery FSM (docs/rules.md#filter.recover-in-place, #recover.in-place)', () => {
  it('a pod whose L2/L3 fault lingers through the in-place check reaches the scheduler when the FSM sends it away', async () => {
    const t = setUp();
    t.records.set('n1', [rec('n1', 'Ascend910-1', '80E01801', 'RestartBusiness', 0)]);
    expect(t.view('n1')).toEqual([]);
    const checkEnds = await t.start([{ rankId: 3, faultType: '1', restartInPlace: true }]);
    expect(t.view('n1')).toEqual([]);
    await t.until(checkEnds - S);
    expect(t.job.recovery.step).toBe('inPlaceCheck');
    expect(t.job.mustExitReportedMs(1)).toBeUndefined();
    expect(t.view('n1')).toEqual([]);
    expect(t.announced).toEqual([]);

    await t.until(checkEnds + 1);
    expect(t.job.mustExitReportedMs(1)).toBe(checkEnds);
    expect(checkEnds).toBeLessThan(30 * S);
    expect(t.job.recovery.inPlace).toEqual({ restartPods: [], exitPods: [1] });
    // re-announced at once, and visible well inside the 60 s window
    expect(t.announced).toEqual([['n0', 'n1', 'n2']]);
    expect(t.view('n1')).toEqual(['Ascend910-1/80E01801']);
    expect(t.lines.find((l) => l.msg === 'fault reported to the scheduler by its filter')).toMatchObject({
      node: 'n1', code: '80E01801', filter: 'recover-in-place', before: 'hide', reasons: expect.stringContaining('reported must-exit'),
    });
    expect(t.filters.withheld('n1')).toEqual([]);
  });

  it('a rank restarted in place stays hidden until 60 s, while another pod of the job is sent away', async () => {
    const t = setUp();
    t.records.set('n1', [rec('n1', 'Ascend910-1', '80E01801', 'RestartBusiness', 0)]);
    t.records.set('n2', [rec('n2', 'Ascend910-0', '80C98008', 'RestartRequest', 0)]);
    expect(t.view('n1')).toEqual([]);
    expect(t.view('n2')).toEqual([]);
    const checkEnds = await t.start([{ rankId: 3, faultType: '1', restartInPlace: true }, { rankId: 4, faultType: '1', restartInPlace: true }]);
    // The FSM sees rank 3 clear within the check (pod 1 restarts in place); rank 4 lingers.
    await t.feed([{ rankId: 4, faultType: '1', restartInPlace: true }]);
    expect(t.job.recovery.step).toBe('inPlaceCheck');
    await t.until(checkEnds + 1);
    expect(t.job.recovery.inPlace).toEqual({ restartPods: [1], exitPods: [2] });
    expect(t.announced).toEqual([['n0', 'n1', 'n2']]);
    expect(t.job.mustExitReportedMs(1)).toBeUndefined();
    expect(t.view('n2')).toEqual(['Ascend910-0/80C98008']);
    // pod 1's fault, still listed on its node, is not the FSM's exit decision: hidden to the end of its window
    expect(t.view('n1')).toEqual([]);
    await t.until(60 * S - 10);
    expect(t.view('n1')).toEqual([]);
    await t.until(60 * S + 100);
    expect(t.announced).toContainEqual(['n1']); // the filter's own window timer
    expect(t.view('n1')).toEqual(['Ascend910-1/80E01801']);
  });

  it('a must-exit report older than the fault does not stop the hide', async () => {
    const t = setUp();
    t.records.set('n1', [rec('n1', 'Ascend910-1', '80E01801', 'RestartBusiness', 0)]);
    const checkEnds = await t.start([{ rankId: 3, faultType: '1', restartInPlace: true }]);
    await t.until(checkEnds + 1);
    expect(t.view('n1')).toEqual(['Ascend910-1/80E01801']);
    // the pod came back and a new L2/L3 fault appears later: a new fault time, hidden again
    const later = t.vts.now() + 5 * S;
    await t.until(later);
    t.records.set('n1', [rec('n1', 'Ascend910-1', '80E01801', 'RestartBusiness', later)]);
    expect(t.view('n1')).toEqual([]);
  });
});
