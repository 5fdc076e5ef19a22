import { EMPTY_ESCALATION_STATE } from '../../schemas/escalation-state/escalation-state.ts';
import { DEFAULT_FAULT_CUSTOMIZATION, type FaultCustomization } from '../../schemas/fault-customization/fault-customization.ts';
import type { FaultRecord, NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { drivePolicy } from '../drive-policy.ts';
import { activeEscalations, escalationPolicy, type EscalationInput } from './escalation.ts';
import { dampView, deferRestart, type EntityState, type FlapDampingConfig } from './flap-damping.ts';

const S = 1000;
const cfg: FlapDampingConfig = { holdMs: 30 * S, recoveries: 2, windowMs: 60 * S };
const chip = (firstSeenMs: number, level: NpuFaultLevel = 'RestartNPU', code = '80C98008'): FaultRecord =>
  ({ node: 'n1', device: 'Ascend910-3', source: 'npu', code, level, reportedLevel: level, firstSeenMs });

/** Feeds a sequence of (time, records) through dampView; answers what the decision path saw. */
function run(steps: Array<readonly [number, readonly FaultRecord[]]>, c = cfg) {
  let st: ReadonlyMap<string, EntityState> = new Map();
  return steps.map(([t, recs]) => { const v = dampView(recs, st, t, c); st = v.state; return v; });
}

describe('flap damping: hysteresis', () => {
  it('a fault that comes and goes once is not held (handled as ClusterD handles it)', () => {
    const v = run([[0, [chip(0)]], [5 * S, []]]);
    expect(v[1]!.records).toEqual([]);
    expect(v[1]!.held).toEqual([]);
  });

  it('a chip flapping is held faulty from its 2nd recovery until healthy 30 s, keeping its first-seen time', () => {
    const v = run([[0, [chip(0)]], [1 * S, []], [2 * S, [chip(2 * S)]], [3 * S, []], [10 * S, []], [32 * S, []], [33 * S, []]]);
    expect(v[1]!.records).toEqual([]); // first recovery passes
    expect(v[2]!.records).toEqual([chip(2 * S)]);
    expect(v[3]!.held).toEqual(['n1/Ascend910-3']);
    expect(v[3]!.records).toEqual([chip(2 * S)]); // the last fault, held
    expect(v[3]!.nextChangeMs).toBe(33 * S);
    expect(v[4]!.records).toEqual([chip(2 * S)]);
    expect(v[5]!.records).toEqual([chip(2 * S)]);
    expect(v[6]!.records).toEqual([]); // 30 s healthy
  });

  it('a re-fault during the hold restarts the healthy clock', () => {
    const v = run([[0, [chip(0)]], [1 * S, []], [2 * S, [chip(2 * S)]], [3 * S, []], [20 * S, [chip(20 * S, 'SeparateNPU')]], [21 * S, []], [40 * S, []], [52 * S, []]]);
    expect(v[4]!.records.map((r) => r.level)).toEqual(['SeparateNPU']);
    expect(v[6]!.records.map((r) => r.level)).toEqual(['SeparateNPU']); // held from 21 s
    expect(v[7]!.records).toEqual([]);
  });

  it('an escalated level shows through at once; the end of a manual separation is a release, not a flap', () => {
    const v = run([[0, [chip(0)]], [1 * S, []], [2 * S, [chip(2 * S)]], [3 * S, []], [20 * S, [chip(20 * S, 'ManuallySeparateNPU')]], [21 * S, []], [30 * S, [chip(30 * S)]], [31 * S, []]]);
    expect(v[3]!.held).toEqual(['n1/Ascend910-3']);
    expect(v[4]!.records.map((r) => r.level)).toEqual(['ManuallySeparateNPU']);
    // An operator released it (kubectl clusterd release, manual-info Total, the device plugin's key):
    // not held, its flap memory forgotten, so one more fault and recovery is handled as ClusterD does.
    expect(v[5]!.records).toEqual([]);
    expect(v[5]!.state.size).toBe(0);
    expect(v[7]!.records).toEqual([]);
  });

  it('is idempotent for a repeated input and off with holdMs 0', () => {
    let st: ReadonlyMap<string, EntityState> = new Map();
    for (const [t, r] of [[0, [chip(0)]], [1 * S, []], [2 * S, [chip(2 * S)]]] as const) st = dampView(r, st, t, cfg).state;
    const a = dampView([], st, 3 * S, cfg);
    const b = dampView([], a.state, 3 * S, cfg);
    expect(b.state.get('n1/Ascend910-3')!.recoveries).toEqual([1 * S, 3 * S]);
    expect(dampView([], st, 3 * S, { ...cfg, holdMs: 0 }).records).toEqual([]);
  });

  it('node-wide faults are one entity per node; inert levels are not faults', () => {
    const nodeF: FaultRecord = { node: 'n1', source: 'node', code: '1', level: 'SeparateNPU', reportedLevel: 'SeparateFault', firstSeenMs: 0 };
    const inert = { ...chip(0), level: 'NotHandleFault' as const };
    const v = run([[0, [nodeF, inert]], [1 * S, [inert]], [2 * S, [nodeF, inert]], [3 * S, [inert]]]);
    expect(v[3]!.held).toEqual(['n1']);
    expect(v[3]!.records).toEqual([inert, nodeF]);
  });
});

describe('flap damping: restart budget', () => {
  const last = { atMs: 0, entities: ['n1/Ascend910-3'] };
  it('defers a re-fault of hardware that flapped since the restart to the end of the period, not a fault elsewhere', () => {
    const recovered = () => true;
    const flapped = (e: string) => e !== 'n2'; // n2: a new fault, never recovered
    expect(deferRestart(['n1/Ascend910-3'], last, recovered, 5 * S, cfg)).toBe(30 * S);
    expect(deferRestart(['n1/Ascend910-3'], last, recovered, 30 * S, cfg)).toBeUndefined();
    expect(deferRestart(['n1/Ascend910-3', 'n2'], last, flapped, 5 * S, cfg)).toBeUndefined();
    expect(deferRestart(['n1/Ascend910-3', 'n9/Ascend910-0'], last, flapped, 5 * S, cfg)).toBe(30 * S); // same storm, later burst
    expect(deferRestart(['n2'], last, () => false, 5 * S, cfg)).toBeUndefined(); // other hardware, never recovered: a new fault
    expect(deferRestart([], last, recovered, 5 * S, cfg)).toBeUndefined(); // a failed pod is never deferred
    expect(deferRestart(['n1/Ascend910-3'], undefined, recovered, 5 * S, cfg)).toBeUndefined();
  });

  it('defers a new generation for the hardware the last restart was for, still faulty (the job was placed on it again); not that restart\'s next step', () => {
    const never = () => false;
    const lastGen = { ...last, restart: 'u/g1' };
    // The scheduler hands the faulty chip back: generation 2 for the same chip waits for the period's end.
    expect(deferRestart(['n1/Ascend910-3'], lastGen, never, 5 * S, cfg, 'u/g2')).toBe(30 * S);
    expect(deferRestart(['n1/Ascend910-3'], lastGen, never, 30 * S, cfg, 'u/g2')).toBeUndefined(); // once per period
    // The force step of generation 1 (after its grace) goes on.
    expect(deferRestart(['n1/Ascend910-3'], lastGen, never, 5 * S, cfg, 'u/g1')).toBeUndefined();
    // The same chip plus a new fault elsewhere: at once.
    expect(deferRestart(['n1/Ascend910-3', 'n2/Ascend910-0'], lastGen, never, 5 * S, cfg, 'u/g2')).toBeUndefined();
  });
});

describe('flap damping and FaultFrequency escalation', () => {
  it('damping suppresses recoveries only: escalation still counts every occurrence of a flapping chip and escalates', () => {
    // FaultFrequency: 80C98008 3 times in 600 s -> ManuallySeparateNPU.
    const config: FaultCustomization = { ...DEFAULT_FAULT_CUSTOMIZATION, FaultFrequency: [{ EventId: ['80C98008'], TimeWindow: 600, Times: 3, FaultHandling: 'ManuallySeparateNPU', ReleaseTimeWindow: 60 }] };
    const observe = (faults: readonly FaultRecord[]): EscalationInput => ({ type: 'observe', node: 'n1', faults: faults.map((f) => ({ fault: f, level: f.level, reasons: [] })) });
    // The raw reports: fault/recover every second, 3 times (what the sources report, upstream of damping).
    const raw: Array<readonly [number, readonly FaultRecord[]]> = [[0, [chip(0)]], [1 * S, []], [2 * S, [chip(2 * S)]], [3 * S, []], [4 * S, [chip(4 * S)]], [5 * S, []]];
    const esc = drivePolicy(escalationPolicy, { state: EMPTY_ESCALATION_STATE, config }, raw.map(([t, r]) => [t, observe(r)] as const), 6 * S);
    expect(activeEscalations(esc.state, config)).toEqual([expect.objectContaining({ device: 'Ascend910-3', code: '80C98008', level: 'ManuallySeparateNPU', rule: 'FaultFrequency', sinceMs: 4 * S })]);
    // The damped view of the same reports never shows the chip healthy from the 2nd recovery on...
    const v = run(raw);
    expect(v.map((x) => x.records.length)).toEqual([1, 0, 1, 1, 1, 1]);
    // ...and the escalated record (the controller's effective view after escalation) replaces the held one.
    const st = run([...raw, [6 * S, [chip(4 * S, 'ManuallySeparateNPU')]], [7 * S, [chip(4 * S, 'ManuallySeparateNPU')]]]);
    expect(st[6]!.records.map((r) => r.level)).toEqual(['ManuallySeparateNPU']);
    expect(st[7]!.held).toEqual([]);
  });
});
