/**
 * The fault view never serves an expired hide verdict for a window that is over
 * (controllers/fault-view.ts header), and the stage publishes the verdict after a window at its end.
 *
 * The race it closes (recovery.test "UCE step retry" under load): a filter hides a fault "until T";
 * the jobs pipeline requeues the job for T (job-decision.ts row 2) and, reading at T, counts a cause
 * whose window has ended as live (job-fault-tasks.ts). A reader at T got the expired "young retry
 * fault" verdict and the job's pod was force-deleted, although the step retry still held the fault
 * (RecoverTime reported). Now the stage's key for the node is due at T and publishes the verdict
 * after the window; a reader before it ran sees the hide as pending, never as over.
 */
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { faultKey } from '../vocabulary/fault-types.ts';
import { stepRetrySchedulerView } from '../policy/filters/step-retry-view.ts';
import { STEP_RETRY_FAULT_WINDOW_MS } from '../policy/filters/step-retry-filter.ts';
import { ManualClock, recordingLogger, settle } from '../test/support/fault-policy-test-kit.ts';
import { fakeSources, rec } from '../test/support/fault-filters-fakes.ts';
import { FaultFiltersController } from './fault-filters.controller.ts';
import { FaultView } from './fault-view.ts';
import { FaultViewStage, type SchedulerFilters } from './fault-view-stage.ts';
import { trustReportedLevels } from './device-faults.controller.ts';

function bare(clock: ManualClock, records: Map<string, FaultRecord[]>, filters?: SchedulerFilters) {
  const store = { records: (n: string) => records.get(n) ?? [], nodeState: () => ({}) } as unknown as FaultStore;
  const view = new FaultView(store, clock.now);
  const stage = new FaultViewStage({ view, policy: trustReportedLevels, ...(filters ? { filters } : {}), clock, log: recordingLogger([]) });
  stage.start();
  const changes: string[][] = [];
  const at: number[] = [];
  view.changes$.subscribe((c) => { changes.push([...c.nodes]); at.push(c.atMs); });
  return { view, stage, changes, at };
}

function setup() {
  const clock = new ManualClock();
  const t0 = clock.now();
  const records = new Map<string, FaultRecord[]>();
  const { sources } = fakeSources();
  // The filters and the stage need each other only through these late-bound test closures.
  const late: { stage?: FaultViewStage; view?: FaultView } = {};
  // The business plane reported the UCE at t0 and the job's step retry holds it (RecoverTime = t0):
  // after its 10 s window the fault stays hidden until RecoverTime + 30 s.
  const filters = new FaultFiltersController({
    sources, log: recordingLogger([]), clock, windowKeys: false,
    jobView: (n) => late.view!.jobView(n),
    recovery: { schedulerView: (_n, r, nowMs) => stepRetrySchedulerView(r, () => ({ retryEnabled: true, recoverTimeMs: t0 }), nowMs), businessUce: () => [], mustExitReportedMs: () => undefined, stressTestNodes: () => new Set() },
    notify: (nodes) => late.stage!.notify(nodes),
  });
  filters.start();
  const w = bare(clock, records, filters);
  late.view = w.view;
  late.stage = w.stage;
  return { clock, t0, records, ...w };
}

describe('FaultView', () => {
  it('a reader at the end of a hide window never gets the expired verdict; the stage publishes the verdict after it (step retry holds) at that instant', async () => {
    const s = setup();
    const uce = rec('n1', 'Ascend910-1', '80E01801', 'RestartBusiness', s.t0);
    s.records.set('n1', [uce]);
    s.stage.intake({ nodes: ['n1'], atMs: s.t0 });
    await settle();
    const windowEnd = s.t0 + STEP_RETRY_FAULT_WINDOW_MS + 1;
    expect(s.view.jobSnapshot(['n1']).hidden.get(faultKey(uce))).toEqual({ by: 'step-retry', untilMs: windowEnd });

    // Any re-announcement shortly before the window ends (a pod event, a hold): the view is young.
    s.clock.advance(9_500);
    s.stage.notify(['n1']);
    await settle();
    // The jobs pipeline's requeue for the window's end reads at that instant, before the stage's key ran.
    s.clock.advance(windowEnd - s.clock.now());
    const changesBefore = s.changes.length;
    const hidden = s.view.jobSnapshot(['n1']).hidden.get(faultKey(uce));
    expect(hidden?.by).toBe('step-retry');
    // Still inside a hide window (pending re-evaluation): the jobs pipeline does not count it (a window over counts as live).
    expect(hidden!.untilMs).toBeGreaterThan(s.clock.now());
    expect(s.view.effective('n1')).toEqual([]);
    expect(s.changes.length).toBe(changesBefore); // the read emitted nothing
    // The stage's key, due at the window's end, publishes the verdict after it (cluster-info and the jobs pipeline re-read the node).
    await settle();
    expect(s.changes.slice(changesBefore)).toEqual([['n1']]);
    expect(s.at.at(-1)).toBe(windowEnd);
    const after = s.view.jobSnapshot(['n1']).hidden.get(faultKey(uce));
    expect(after?.by).toBe('step-retry');
    expect(after!.untilMs).toBeGreaterThan(windowEnd + 1_000); // held by the step retry now, not the young-fault window
    // Nothing else announces it again.
    await s.clock.run(100);
    expect(s.changes.slice(changesBefore)).toEqual([['n1']]);
    expect(s.view.effective('n1')).toEqual([]);
  });

  it('two peers whose filters read each other: one pass computes both job views before either filter, each evaluated once; no recursion', async () => {
    const clock = new ManualClock();
    const records = new Map<string, FaultRecord[]>([['n1', [rec('n1', 'Ascend910-0', '80E18402', 'SeparateNPU', clock.now())]], ['n2', [rec('n2', 'Ascend910-0', '80E18402', 'SeparateNPU', clock.now())]]]);
    let evaluations = 0;
    const peerReads: string[] = [];
    // Recover-in-place reads the job's other nodes (fault-filters-peers.ts); a window ends in 60 s.
    const w = bare(clock, records, {
      evaluate: (node, job, nowMs, jobViewOf) => {
        evaluations++;
        const peer = node === 'n1' ? 'n2' : 'n1';
        peerReads.push(`${node}<-${jobViewOf(peer).map((r) => r.node).join(',')}`);
        return { visible: job, hidden: [], dropped: [], relevelled: [], reported: [], uce: {}, recheckAtMs: nowMs + 60_000 };
      },
    });
    w.stage.intake({ nodes: ['n1', 'n2'], atMs: clock.now() });
    await settle();
    expect(peerReads).toEqual(['n1<-n2', 'n2<-n1']); // each read the other's job view of this pass, not the empty published one
    expect(w.changes).toEqual([['n1', 'n2']]); // one publication for the intake
    await clock.run(61_000);
    expect(evaluations).toBe(4); // n1 and n2 again at their window's end, each once
    evaluations = 0;
    expect(w.view.effective('n1').map((r) => r.node)).toEqual(['n1']);
    expect(evaluations).toBe(0); // reads evaluate nothing
  });

  it('a verdict without a next-change time is kept as evaluated (no re-evaluation on read or in time)', async () => {
    const s = setup();
    s.records.set('n1', [rec('n1', 'Ascend910-1', '80E18402', 'SeparateNPU', s.t0)]);
    s.stage.intake({ nodes: ['n1'], atMs: s.t0 });
    await settle();
    const evaluated = s.stage.evaluations;
    await s.clock.run(60_000);
    expect(s.view.effective('n1').map((r) => r.code)).toEqual(['80E18402']);
    expect(s.stage.evaluations).toBe(evaluated);
  });
});
