import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { FaultView } from './fault-view.ts';
import { FaultViewStage } from './fault-view-stage.ts';
import { ManualClock, recordingLogger, settle } from '../test/support/fault-policy-test-kit.ts';

const r = (code: string, level: FaultRecord['level']): FaultRecord => ({ node: 'n1', device: 'Ascend910-3', source: 'npu', code, level, reportedLevel: level, firstSeenMs: 0 });
const T0 = 1_700_000_000_000;

/** A fault view over one node whose records the test sets (times relative to T0); the policy is the identity. */
function world(hideAll = false) {
  const clock = new ManualClock(T0);
  let records: FaultRecord[] = [];
  const store = { records: () => records, nodeState: () => ({}), nodeNames: () => ['n1'] } as unknown as FaultStore;
  const view = new FaultView(store, clock.now);
  const stage = new FaultViewStage({
    view, policy: { effective: (_n, rs) => rs }, clock, log: recordingLogger([]),
    damping: { holdMs: 30_000, recoveries: 2, windowMs: 60_000 },
    ...(hideAll ? { filters: { evaluate: (_n, job, nowMs) => ({ visible: [], hidden: job.map((record) => ({ record, by: 'custom-filter', untilMs: nowMs + 5_000 })), dropped: [] }) as never } } : {}),
  });
  stage.start();
  const changes: number[] = [];
  view.changes$.subscribe((c) => changes.push(c.atMs - T0));
  const set = async (t: number, rs: FaultRecord[]): Promise<void> => {
    await clock.run(T0 + t - clock.now());
    records = rs;
    stage.intake({ nodes: ['n1'], atMs: clock.now() });
    await settle();
  };
  return { view, stage, set, clock, changes };
}

describe('FaultView: flap damping is the stage after the filters, in the placement view only', () => {
  const sep = r('80E18402', 'SeparateNPU');

  it('a fault that comes and goes once is not held (handled as ClusterD handles it)', async () => {
    const w = world();
    await w.set(0, [sep]);
    await w.set(1_000, []);
    expect(w.view.placement('n1')).toEqual([]);
  });

  it('hardware that recovers twice within the window is held in the placement view until healthy for the hold; decisions never see it', async () => {
    const w = world();
    await w.set(0, [sep]); await w.set(1_000, []); await w.set(2_000, [sep]); await w.set(3_000, []);
    expect(w.view.placement('n1')).toEqual([sep]);
    expect(w.view.effective('n1')).toEqual([]); // the scheduler view the decisions and the relation wait read
    expect(w.view.recoveredSince('n1/Ascend910-3', T0 + 2_500)).toBe(true);
    // The end of the hold is the stage's node key: published at 33 s with no new intake and no reader.
    await w.clock.run(T0 + 33_000 - w.clock.now());
    expect(w.changes.at(-1)).toBe(33_000);
    expect(w.view.placement('n1')).toEqual([]);
  });

  it('an escalated level shows through at once (a present record replaces the held one)', async () => {
    const w = world();
    const manual = r('80E18402', 'ManuallySeparateNPU');
    await w.set(0, [sep]); await w.set(1_000, []); await w.set(2_000, [sep]); await w.set(3_000, []);
    await w.set(4_000, [manual]);
    expect(w.view.placement('n1')).toEqual([manual]);
  });

  it('a filter hiding and showing a fault that stays reported is not a recovery', async () => {
    const w = world(true);
    for (let t = 0; t < 8_000; t += 1_000) await w.set(t, [sep]);
    expect(w.view.recoveredSince('n1/Ascend910-3', T0 - 1)).toBe(false);
    expect(w.view.placement('n1')).toEqual([]); // hidden by the filter, never held
  });

  it('an operator release ends the hold of the released chip; an old request replayed leaves a later flap held', async () => {
    const w = world();
    const manual = r('80E18402', 'ManuallySeparateNPU');
    await w.set(0, [sep]); await w.set(1_000, []); await w.set(2_000, [sep]); await w.set(3_000, []);
    await w.set(4_000, [manual]); // escalated by FaultFrequency: faulty, not held
    const release = { node: 'n1', npus: ['Ascend910-3'], by: 'ops', at: '', atMs: T0 + 5_000 };
    w.stage.release([release]);
    await w.set(5_100, []); // the policy released it: without the release this recovery was a flap, holding ManuallySeparateNPU for 30 s
    expect(w.view.placement('n1')).toEqual([]);
    // It flaps again after the release: the same request, replayed by a resync, changes nothing.
    await w.set(6_000, [sep]); await w.set(7_000, []); await w.set(8_000, [sep]); await w.set(9_000, []);
    expect(w.view.placement('n1')).toEqual([sep]);
    w.stage.release([release]);
    await settle();
    expect(w.view.placement('n1')).toEqual([sep]);
  });
});
