/**
 * Graceful fault tolerance via reset-config (docs/rules.md#detect.graceful-tolerance; faultCustomization.json `GraceTolerance` 30/150/15 s),
 * stepped with explicit time.
 */
import {
  graceStep,
  graceToleranceTimings,
  initialGraceState,
  policyOfLevel,
  type GraceCommand,
  type GraceDevice,
  type GraceEvent,
  type GraceState,
} from './graceful-tolerance.ts';
import { Harness } from '../../test/support/recovery-fixtures.ts';

const dev = (policy: GraceDevice['policy'], errorCodes: number[] = [0x80e01801], logicId = 3): GraceDevice => ({ logicId, rankId: 11, policy, errorCodes });
const harness = () => new Harness<GraceState, GraceEvent, GraceCommand>(initialGraceState('llama'), graceStep);
const statuses = (h: ReturnType<typeof harness>) => h.commands('writeResetConfig').map((c) => `${c.rankList[0]!.Status}/${c.rankList[0]!.Policy}`);

describe('GraceTolerance timings (faultCustomization.json)', () => {
  it('defaults 30 / 150 / 15 s', () => {
    expect(graceToleranceTimings()).toMatchObject({ readCmMs: 30_000, deviceResetMs: 150_000, selfHealMs: 15_000 });
  });
  it('values outside 5-90 / 60-180 / 1-30 fall back to the defaults; valid ones are used', () => {
    expect(graceToleranceTimings({ WaitProcessReadCMTime: 4, WaitDeviceResetTime: 181, WaitFaultSelfHealingTime: 'x' }))
      .toMatchObject({ readCmMs: 30_000, deviceResetMs: 150_000, selfHealMs: 15_000 });
    expect(graceToleranceTimings({ WaitProcessReadCMTime: 90, WaitDeviceResetTime: 60, WaitFaultSelfHealingTime: 1 }))
      .toMatchObject({ readCmMs: 90_000, deviceResetMs: 60_000, selfHealMs: 1_000 });
  });
  it('maps chip levels to policies (docs/rules.md#recover.reset-config-writes)', () => {
    expect(['NotHandleFault', 'RestartRequest', 'RestartBusiness', 'FreeRestartNPU', 'RestartNPU', 'SeparateNPU'].map(policyOfLevel))
      .toEqual(['empty', 'restart_request', 'restart', 'free_reset', 'reset', 'isolate']);
  });
});

describe('graceful tolerance task FSM', () => {
  it('restart_request cleared within 30 s: recovered, then 30 s for the agent to read it', () => {
    const h = harness();
    h.feed({ type: 'deviceFaults', devices: [dev('restart_request')] });
    expect(statuses(h)).toEqual(['unrecovered/restart_request']);
    expect(h.commands('writeResetConfig')[0]!.rankList[0]).toMatchObject({ RankId: 11, LogicId: 3, InitialPolicy: 'restart_request', ErrorCodeHex: '80E01801' });
    expect(h.commands('writeFaultConfig')).toEqual([expect.objectContaining({ faultNpus: [3] })]);
    expect(h.commands('markInReset')).toEqual([expect.objectContaining({ inReset: true })]);
    h.now += 12_000;
    h.feed({ type: 'deviceFaults', devices: [dev('restart_request', [])] });
    expect(statuses(h).at(-1)).toBe('recovered/restart_request');
    h.advance(29_999);
    expect(h.state.phase).toBe('reporting');
    h.advance(1);
    expect(h.state.phase).toBe('idle');
    expect(h.commands('markInReset').at(-1)).toMatchObject({ inReset: false });
  });

  it('restart_request still there after 30 s: upgraded to reset, processes stop, chips reset, recovered', () => {
    const h = harness();
    h.feed({ type: 'deviceFaults', devices: [dev('restart_request')] });
    h.advance(30_000);
    expect(statuses(h).at(-1)).toBe('unrecovered/reset');
    h.feed({ type: 'processCount', count: 0 });
    expect(h.commands('resetChips')).toEqual([expect.objectContaining({ logicIds: [3], attempt: 1 })]);
    h.feed({ type: 'resetResult', ok: true });
    h.feed({ type: 'deviceFaults', devices: [dev('empty', [])] });
    h.advance(30_000); // WaitNpuReadyTime
    expect(statuses(h).at(-1)).toBe('recovered/reset');
  });

  it('restart: processes reach 0, 15 s self-healing, healed -> recovered; not healed -> reset', () => {
    const healed = harness();
    healed.feed({ type: 'deviceFaults', devices: [dev('restart')] });
    healed.feed({ type: 'processCount', count: 0 });
    healed.feed({ type: 'deviceFaults', devices: [dev('restart', [])] });
    healed.advance(14_999);
    expect(healed.state.phase).toBe('selfHealing');
    healed.advance(1);
    expect(statuses(healed).at(-1)).toBe('recovered/restart');

    const stuck = harness();
    stuck.feed({ type: 'processCount', count: 0 });
    stuck.feed({ type: 'deviceFaults', devices: [dev('restart')] });
    stuck.advance(15_000);
    expect(statuses(stuck).at(-1)).toBe('unrecovered/reset');
  });

  it('reset fails 4 times (5 s x n back-off): failed with Policy isolate', () => {
    const h = harness();
    h.feed({ type: 'deviceFaults', devices: [dev('reset')] });
    h.feed({ type: 'processCount', count: 0 });
    for (let n = 1; n <= 3; n++) {
      h.feed({ type: 'resetResult', ok: false });
      h.advance(5_000 * n);
    }
    expect(h.commands('resetChips').map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
    h.feed({ type: 'resetResult', ok: false });
    expect(statuses(h).at(-1)).toBe('failed/isolate');
  });

  it('chips not back within WaitDeviceResetTime (150 s): failed', () => {
    const h = harness();
    h.feed({ type: 'deviceFaults', devices: [dev('reset')] });
    h.feed({ type: 'processCount', count: 0 });
    h.advance(149_999);
    expect(h.state.phase).toBe('resetting');
    h.advance(1);
    expect(statuses(h).at(-1)).toBe('failed/isolate');
  });

  it('processes on the faulty NPUs do not stop within 60 s: failed', () => {
    const h = harness();
    h.feed({ type: 'deviceFaults', devices: [dev('reset')] });
    h.feed({ type: 'processCount', count: 2 });
    h.advance(60_000);
    expect(statuses(h).at(-1)).toBe('failed/isolate');
  });

  it('free_reset and isolate are not graceful-tolerance tasks', () => {
    const h = harness();
    expect(h.feed({ type: 'deviceFaults', devices: [dev('free_reset')] }).accepted).toBe(false);
    expect(h.feed({ type: 'deviceFaults', devices: [dev('isolate')] }).accepted).toBe(false);
    expect(h.log).toEqual([]);
  });
});
