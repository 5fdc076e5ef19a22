import type { FaultRecord } from '../vocabulary/fault-types.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { FaultView } from './fault-view.ts';

const r = (code: string, level: FaultRecord['level']): FaultRecord => ({ node: 'n1', device: 'Ascend910-3', source: 'npu', code, level, reportedLevel: level, firstSeenMs: 0 });

/** A fault view over one node whose records the test sets; the policy is the identity. */
function world(hideAll = false) {
  let now = 0;
  let records: FaultRecord[] = [];
  const scheduled: number[] = [];
  const store = { records: () => records, nodeState: () => ({}), nodeNames: () => ['n1'] } as unknown as FaultStore;
  const view = new FaultView({
    store, policy: { effective: (_n, rs) => rs }, now: () => now,
    damping: { config: { holdMs: 30_000, recoveries: 2, windowMs: 60_000 }, wakeAt: (_n, at) => scheduled.push(at) },
  });
  if (hideAll) view.filterWith({ evaluate: (_n, job) => ({ visible: [], hidden: job.map((record) => ({ record, by: 'custom-filter', untilMs: now + 5_000 })), dropped: [] }) as never });
  const set = (t: number, rs: FaultRecord[]): void => { now = t; records = rs; view.intake({ nodes: ['n1'], atMs: t }); };
  return { view, set, scheduled };
}

describe('FaultView: flap damping is the stage after the filters, in the placement view only', () => {
  const sep = r('80E18402', 'SeparateNPU');

  it('a fault that comes and goes once is not held (handled as ClusterD handles it)', () => {
    const w = world();
    w.set(0, [sep]);
    w.set(1_000, []);
    expect(w.view.placement('n1')).toEqual([]);
  });

  it('hardware that recovers twice within the window is held in the placement view until healthy for the hold; decisions never see it', () => {
    const w = world();
    w.set(0, [sep]); w.set(1_000, []); w.set(2_000, [sep]); w.set(3_000, []);
    expect(w.view.placement('n1')).toEqual([sep]);
    expect(w.view.effective('n1')).toEqual([]); // the scheduler view the decisions and the relation wait read
    expect(w.view.recoveredSince('n1/Ascend910-3', 2_500)).toBe(true);
    expect(w.scheduled).toContain(33_000); // the end of the hold is announced
    w.set(33_000, []);
    expect(w.view.placement('n1')).toEqual([]);
  });

  it('an escalated level shows through at once (a present record replaces the held one)', () => {
    const w = world();
    const manual = r('80E18402', 'ManuallySeparateNPU');
    w.set(0, [sep]); w.set(1_000, []); w.set(2_000, [sep]); w.set(3_000, []);
    w.set(4_000, [manual]);
    expect(w.view.placement('n1')).toEqual([manual]);
  });

  it('a filter hiding and showing a fault that stays reported is not a recovery', () => {
    const w = world(true);
    for (let t = 0; t < 8_000; t += 1_000) w.set(t, [sep]);
    expect(w.view.recoveredSince('n1/Ascend910-3', -1)).toBe(false);
    expect(w.view.placement('n1')).toEqual([]); // hidden by the filter, never held
  });

  it('an operator release ends the hold of the released chip; an old request replayed leaves a later flap held', () => {
    const w = world();
    const manual = r('80E18402', 'ManuallySeparateNPU');
    w.set(0, [sep]); w.set(1_000, []); w.set(2_000, [sep]); w.set(3_000, []);
    w.set(4_000, [manual]); // escalated by FaultFrequency: faulty, not held
    const release = { node: 'n1', npus: ['Ascend910-3'], by: 'ops', at: '', atMs: 5_000 };
    w.view.release([release]);
    w.set(5_100, []); // the policy released it: without the release this recovery was a flap, holding ManuallySeparateNPU for 30 s
    expect(w.view.placement('n1')).toEqual([]);
    // It flaps again after the release: the same request, replayed by a resync, changes nothing.
    w.set(6_000, [sep]); w.set(7_000, []); w.set(8_000, [sep]); w.set(9_000, []);
    expect(w.view.placement('n1')).toEqual([sep]);
    w.view.release([release]);
    expect(w.view.placement('n1')).toEqual([sep]);
  });
});
