/**
 * The fault view serves no verdict past its own next-change time (controllers/fault-view.ts).
 *
 * The race it closes (recovery.test "UCE step retry" under load): a filter hides a fault "until T";
 * the jobs pipeline requeues the job for T (job-decision.ts row 2) and, reading at T, counts a cause
 * whose window has ended as live (job-fault-tasks.ts); the filters re-evaluate the node only at
 * T + 20 ms (their key's slack) and the step-retry view at T + 50 ms. A reader in between got the
 * expired "young retry fault" verdict and the job's pod was force-deleted, although the step retry
 * still held the fault (RecoverTime reported).
 */
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { faultKey } from '../vocabulary/fault-types.ts';
import { stepRetrySchedulerView } from '../policy/filters/step-retry-view.ts';
import { STEP_RETRY_FAULT_WINDOW_MS } from '../policy/filters/step-retry-filter.ts';
import { ManualClock, recordingLogger } from '../test/support/fault-policy-test-kit.ts';
import { fakeSources, rec } from '../test/support/fault-filters-fakes.ts';
import { FaultFiltersController } from './fault-filters.controller.ts';
import { FaultView } from './fault-view.ts';
import { trustReportedLevels } from './device-faults.controller.ts';

function setup() {
  const clock = new ManualClock();
  const t0 = clock.now();
  const records = new Map<string, FaultRecord[]>();
  const store = { records: (n: string) => records.get(n) ?? [], nodeState: () => ({}) } as unknown as FaultStore;
  const view = new FaultView({ store, policy: trustReportedLevels, now: () => clock.now() });
  const { sources } = fakeSources();
  // The business plane reported the UCE at t0 and the job's step retry holds it (RecoverTime = t0):
  // after its 10 s window the fault stays hidden until RecoverTime + 30 s.
  const filters = new FaultFiltersController({
    sources, log: recordingLogger([]), clock,
    jobView: (n) => view.jobView(n),
    stepRetry: (_n, r, nowMs) => stepRetrySchedulerView(r, () => ({ retryEnabled: true, recoverTimeMs: t0 }), nowMs),
    notify: (nodes) => view.notify(nodes),
  });
  filters.start();
  view.filterWith(filters);
  const changes: string[][] = [];
  view.changes$.subscribe((c) => changes.push([...c.nodes]));
  return { clock, t0, records, view, changes };
}

describe('FaultView', () => {
  it('a reader at the end of a hide window gets the verdict after it (step retry holds), not the expired one, and the change is announced', async () => {
    const s = setup();
    const uce = rec('n1', 'Ascend910-1', '80E01801', 'RestartBusiness', s.t0);
    s.records.set('n1', [uce]);
    s.view.intake({ nodes: ['n1'], atMs: s.t0 });
    const windowEnd = s.t0 + STEP_RETRY_FAULT_WINDOW_MS + 1;
    expect(s.view.jobSnapshot(['n1']).hidden.get(faultKey(uce))).toEqual({ by: 'step-retry', untilMs: windowEnd });

    // Any re-announcement shortly before the window ends (a pod event, a hold): the kept view is young.
    s.clock.advance(9_500);
    s.view.notify(['n1']);
    // The jobs pipeline's requeue for the window's end: it reads before the filters' key (T + 20 ms).
    s.clock.advance(windowEnd - s.clock.now());
    const changesBefore = s.changes.length;
    const hidden = s.view.jobSnapshot(['n1']).hidden.get(faultKey(uce));
    expect(hidden?.by).toBe('step-retry');
    // Still inside a hide window: the jobs pipeline does not count it (a window over counts as live).
    expect(hidden!.untilMs).toBeGreaterThan(s.clock.now());
    expect(s.view.effective('n1')).toEqual([]);
    // The re-evaluation on read is announced (cluster-info and the jobs pipeline re-read the node).
    await s.clock.run(0);
    expect(s.changes.slice(changesBefore)).toEqual([['n1']]);
    // The filters' own key then finds nothing new to announce.
    await s.clock.run(100);
    expect(s.changes.slice(changesBefore)).toEqual([['n1']]);
    expect(s.view.effective('n1')).toEqual([]);
  });

  it('two peers whose filters read each other, both past their next-change time: each is evaluated once per read, no recursion', () => {
    const clock = new ManualClock();
    const records = new Map<string, FaultRecord[]>([['n1', [rec('n1', 'Ascend910-0', '80E18402', 'SeparateNPU', clock.now())]], ['n2', [rec('n2', 'Ascend910-0', '80E18402', 'SeparateNPU', clock.now())]]]);
    const store = { records: (n: string) => records.get(n) ?? [], nodeState: () => ({}) } as unknown as FaultStore;
    const view = new FaultView({ store, policy: trustReportedLevels, now: () => clock.now() });
    let evaluations = 0;
    // Recover-in-place reads the job's other nodes (fault-filters-peers.ts); a window ends in 60 s.
    view.filterWith({
      evaluate: (node, job, nowMs) => {
        evaluations++;
        view.jobView(node === 'n1' ? 'n2' : 'n1');
        return { visible: job, hidden: [], dropped: [], relevelled: [], reported: [], uce: {}, recheckAtMs: nowMs + 60_000 };
      },
    });
    view.intake({ nodes: ['n1', 'n2'], atMs: clock.now() });
    clock.advance(61_000);
    evaluations = 0;
    expect(view.effective('n1').map((r) => r.node)).toEqual(['n1']);
    expect(evaluations).toBe(2); // n1, and n2 read back by n1's filters (also past its time)
  });

  it('a verdict without a next-change time is kept as evaluated (no re-evaluation on read)', () => {
    const s = setup();
    s.records.set('n1', [rec('n1', 'Ascend910-1', '80E18402', 'SeparateNPU', s.t0)]);
    s.view.intake({ nodes: ['n1'], atMs: s.t0 });
    const computed = s.view.computed;
    s.clock.advance(60_000);
    expect(s.view.effective('n1').map((r) => r.code)).toEqual(['80E18402']);
    expect(s.view.computed).toBe(computed);
  });
});
