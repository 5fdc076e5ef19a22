/**
 * docs/rules.md#recover.stress-test, #recover.switch-nic: the O&M operations end to end through step(), as the agents
 * answer them (CD/application/recover/om_controller.go).
 */
import { jobConfig, podsOf } from '../../test/support/recovery-fixtures.ts';
import { initialRecoveryState, step } from './recovery-fsm.ts';
import { omNotifyMessage } from './om-handlers.ts';
import type { OmStart, RecoveryCommand, RecoveryEvent, RecoveryState } from './recovery-types.ts';

const NOW = 1_700_000_000_000;
const RANK_NODE = { '0': 'node-a', '1': 'node-a', '2': 'node-b', '3': 'node-b' };
const RANK_DEV = { '0': '0', '1': '1', '2': '0', '3': '1' };
const STRESS: OmStart = { kind: 'stressTest', stress: { 'node-b': { '2': [0, 1], '3': [0, 1] } }, switchRanks: [], switchOps: [], rankNode: RANK_NODE, rankDevice: RANK_DEV };
const NIC: OmStart = { kind: 'switchNic', stress: {}, switchRanks: ['0', '1'], switchOps: [true, true], rankNode: RANK_NODE, rankDevice: RANK_DEV };

/** Runs events in order; every signal / awaited command succeeds; returns the commands of all steps. */
function run(events: RecoveryEvent[], s0?: RecoveryState): { s: RecoveryState; out: RecoveryCommand[]; accepted: boolean[] } {
  let s = s0 ?? initialRecoveryState({ config: jobConfig({ ranksPerPod: 2, strategies: ['retry', 'recover', 'dump', 'exit'] }), pods: podsOf(2) });
  const out: RecoveryCommand[] = [];
  const accepted: boolean[] = [];
  const queue = [...events];
  while (queue.length > 0) {
    const r = step(s, queue.shift()!, NOW);
    s = r.state;
    accepted.push(r.accepted);
    out.push(...r.commands);
    for (const c of r.commands) if (c.awaitResult) queue.unshift({ type: 'effectResult', commandId: c.id, ok: true });
  }
  return { s, out, accepted };
}

const signals = (cs: RecoveryCommand[]): string[] =>
  cs.flatMap((c) => (c.type === 'sendSignal' ? [`${c.signal.signalType}${c.signal.changeStrategy ? `:${c.signal.changeStrategy}` : ''}`] : []));
const replies = (cs: RecoveryCommand[]): string[] => cs.flatMap((c) => (c.type === 'omResponse' ? [c.msg] : []));
const resets = (cs: RecoveryCommand[]): string[] => cs.flatMap((c) => (c.type === 'writeResetConfig' ? [c.op] : []));

const ok = { code: '0', result: 'ok' };

describe('online stress test', () => {
  it('pauses, notifies, hides the stress codes while the agents test, resumes with continue and resets', () => {
    const a = run([{ type: 'omStarted', om: STRESS }, { type: 'stopCompleteReported', code: 0 }]);
    expect(a.s.phase).toBe('NotifyStressTestState');
    expect(a.out.filter((c) => c.type === 'notifyOm')).toHaveLength(1);
    expect(omNotifyMessage(a.s)).toEqual({ kind: 'stressTest', message: { jobId: a.s.config.jobId, stressParam: { '2': { ops: [0, 1] }, '3': { ops: [0, 1] } } } });
    const b = run([{ type: 'omNotified', ok: true }], a.s);
    expect(b.s.phase).toBe('WaitStressTestFinishedState');
    expect(b.out.find((c) => c.type === 'setStressTestFilter')).toMatchObject({ nodes: ['node-b'], on: true });
    const c = run([
      { type: 'stressTestResultReported', result: { '2': { '0': ok, '1': ok }, '3': { '0': ok } } },
      { type: 'recoverStatusReported', code: 0, strategy: 'continue' },
    ], b.s);
    expect(c.s.phase).toBe('INIT');
    expect(c.s.om).toBeNull();
    expect(signals([...a.out, ...b.out, ...c.out])).toEqual(['stopTrain', 'pauseStartAgent', 'continueStartAgent', 'changeStrategy:continue']);
    expect(resets([...a.out, ...b.out, ...c.out])).toEqual(['notifyFaultFlushing', 'clear', 'clear']);
    expect(replies(c.out)).toEqual(['stress test finish, result:{"node-b":{"0":{"rankResult":{"0":{"code":"0","result":"ok"},"1":{"code":"0","result":"ok"}}},"1":{"rankResult":{"0":{"code":"0","result":"ok"}}}}}']);
    expect(c.out.find((x) => x.type === 'setStressTestFilter')).toMatchObject({ on: false });
    // Every pause / agent signal carries a fresh uuid; continue keeps continueStartAgent's.
    const uuids = [...a.out, ...b.out, ...c.out].flatMap((x) => (x.type === 'sendSignal' ? [x.signal.uuid] : []));
    expect(new Set(uuids.slice(0, 3)).size).toBe(3);
    expect(uuids[3]).toBe(uuids[2]);
  });

  it('a node found faulty (code 2) is marked UnHealthy and its ranks go into stopTrain: the recovery path', () => {
    const r = run([
      { type: 'omStarted', om: STRESS }, { type: 'stopCompleteReported', code: 0 }, { type: 'omNotified', ok: true },
      { type: 'stressTestResultReported', result: { '2': { '0': { code: '2', result: 'aic fault' } }, '3': { '0': ok } } },
    ]);
    expect(r.s.phase).toBe('WaitReportStopCompleteState');
    expect(replies(r.out)[0]).toMatch(/^stress test find fault, isolate node:map\[node-b:\{\}\],result:\{"node-b"/);
    expect(r.out.find((c) => c.type === 'annotateNodes')).toMatchObject({ nodes: ['node-b'], annotations: { NodeHealthyStatus: 'UnHealthy' } });
    const stop = r.out.filter((c) => c.type === 'sendSignal').at(-1);
    expect(stop).toMatchObject({ signal: { signalType: 'stopTrain', actions: ['stop_train'], faultRanks: [{ rankId: '2', faultType: '1' }, { rankId: '3', faultType: '1' }] } });
  });

  it('a rank timing out (code 3) becomes a normal fault', () => {
    const r = run([
      { type: 'omStarted', om: STRESS }, { type: 'stopCompleteReported', code: 0 }, { type: 'omNotified', ok: true },
      { type: 'stressTestResultReported', result: { '3': { '1': { code: '3', result: '' } } } },
    ]);
    expect(replies(r.out)[0]).toBe('stress test timeout fault, faultRank:[rankId:"3" faultType:"1"],result:{"node-b":{"1":{"rankResult":{"1":{"code":"3"}}}}}');
    expect(r.out.some((c) => c.type === 'annotateNodes')).toBe(false);
    expect(r.s.faults.map((f) => f.rankId)).toEqual([3]);
  });

  it('refused outside INIT (the 411 of the service), and a second start while one runs', () => {
    const r = run([{ type: 'omStarted', om: STRESS }, { type: 'omStarted', om: NIC }]);
    expect(r.accepted).toEqual([true, true, false]);
    expect(r.s.om?.kind).toBe('stressTest');
  });

  it('a fault reported while testing (406) waits for the result, then fails the test', () => {
    const r = run([
      { type: 'omStarted', om: STRESS }, { type: 'stopCompleteReported', code: 0 }, { type: 'omNotified', ok: true },
      { type: 'recoverStatusReported', code: 406, strategy: '' },
    ]);
    expect(replies(r.out)).toEqual(['recv fault, when stressing test']);
    const done = run([{ type: 'stressTestResultReported', result: { '2': { '0': ok } } }], r.s);
    expect(done.s.phase).toBe('WaitReportStopCompleteState');
    // That arm does not clear reset-config.
    expect(resets(done.out)).toEqual([]);
  });

  it('no result within the report timeout: the timeout message, then stopTrain', () => {
    const r = run([{ type: 'omStarted', om: STRESS }, { type: 'stopCompleteReported', code: 0 }, { type: 'omNotified', ok: true }]);
    const t = run([{ type: 'timerFired', id: 'report' }], r.s);
    expect(replies(t.out)).toEqual(['stress test failed, report stress test timeout']);
    expect(t.s.phase).toBe('WaitReportStopCompleteState');
  });

  it('the notify message not delivered: killMaster', () => {
    const r = run([{ type: 'omStarted', om: STRESS }, { type: 'stopCompleteReported', code: 0 }, { type: 'omNotified', ok: false }]);
    expect(replies(r.out)).toEqual(['send stress test signal failed, please check manually']);
    expect(signals(r.out).at(-1)).toBe('killMaster');
    expect(r.s.phase).toBe('INIT');
  });

  it('a reset (client subscribed) ends the operation and its streams', () => {
    const r = run([{ type: 'omStarted', om: STRESS }, { type: 'clientSubscribed' }]);
    expect(r.s.om).toBeNull();
    expect(r.out.some((c) => c.type === 'endOmStreams')).toBe(true);
  });

  it('a reset while the agents test shows the stress codes again', () => {
    const r = run([{ type: 'omStarted', om: STRESS }, { type: 'stopCompleteReported', code: 0 }, { type: 'omNotified', ok: true }]);
    const reset = run([{ type: 'streamClosed' }], r.s);
    expect(reset.out.find((c) => c.type === 'setStressTestFilter')).toMatchObject({ nodes: ['node-b'], on: false });
  });

  it('another recover status while testing stalls the wait as ClusterD does: a later result is not read', () => {
    const r = run([
      { type: 'omStarted', om: STRESS }, { type: 'stopCompleteReported', code: 0 }, { type: 'omNotified', ok: true },
      { type: 'recoverStatusReported', code: 0, strategy: 'continue' },
    ]);
    expect(r.s.step).toBe('stalled');
    expect(r.s.timers).toEqual([]);
    const late = run([{ type: 'stressTestResultReported', result: { '2': { '0': ok } } }], r.s);
    expect(late.s.phase).toBe('WaitStressTestFinishedState');
    expect(late.s.reports.stressResult).not.toBeNull();
  });
});

describe('NIC switch', () => {
  it('pauses, notifies the ranks and ops, waits for the result, resumes, says finish and resets', () => {
    const a = run([{ type: 'omStarted', om: NIC }, { type: 'stopCompleteReported', code: 0 }]);
    expect(a.s.phase).toBe('NotifySwitchNicState');
    expect(omNotifyMessage(a.s)).toEqual({ kind: 'switchNic', message: { rankID: ['0', '1'], op: [true, true], jobId: a.s.config.jobId } });
    const b = run([{ type: 'omNotified', ok: true }, { type: 'switchNicResultReported', result: true }, { type: 'recoverStatusReported', code: 0, strategy: 'continue' }], a.s);
    expect(b.s.phase).toBe('INIT');
    expect(signals([...a.out, ...b.out])).toEqual(['stopTrain', 'changeStrategy:continue']);
    expect(replies(b.out)).toEqual(['switch nic finish']);
  });

  it('a failed switch replies and stops training', () => {
    const r = run([{ type: 'omStarted', om: NIC }, { type: 'stopCompleteReported', code: 0 }, { type: 'omNotified', ok: true }, { type: 'switchNicResultReported', result: false }]);
    expect(replies(r.out)).toEqual(['switch nic failed, switch nic failed']);
    expect(r.s.phase).toBe('WaitReportStopCompleteState');
  });

  it('an empty SwitchNics passes the checks but names no rank: the pause is answered and the job waits, as ClusterD\'s', () => {
    const r = run([{ type: 'omStarted', om: { ...NIC, switchRanks: [], switchOps: [] } }, { type: 'stopCompleteReported', code: 0 }]);
    expect(r.s.phase).toBe('WaitReportPauseCompleteState');
    expect(r.s.step).toBe('stalled');
    expect(replies(r.out)).toEqual([]);
  });

  it('pause answered 499: killMaster', () => {
    const r = run([{ type: 'omStarted', om: NIC }, { type: 'stopCompleteReported', code: 499 }]);
    expect(replies(r.out)).toEqual(['om failed, pause train failed']);
    expect(signals(r.out).at(-1)).toBe('killMaster');
  });
});
