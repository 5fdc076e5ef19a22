/**
 * JobFsm: the wiring of the two FSMs of one job, in virtual time (rxjs VirtualTimeScheduler): report
 * routing by the hot-switch phase, effect results fed back, timers armed from the state (a 15 min
 * report timeout in milliseconds), stream close bound to the stream of the step.
 */
import { VirtualAction, VirtualTimeScheduler } from 'rxjs';
import type { SignalStream } from '../grpc/handlers.ts';
import type { ProcessManageSignal } from '../vocabulary/process-manage-signal.ts';
import { initialHotSwitchState } from '../policy/recovery/hot-switch-fsm.ts';
import { initialRecoveryState } from '../policy/recovery/recovery-fsm.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { schedulerClock } from '../runtime/work-queue.ts';
import { JobFsm, recoveryCommandLoop, type JobCommand } from './recovery-job.ts';
import type { RecoveryState } from '../policy/recovery/recovery-types.ts';
import type { StoredCommand } from '../reconcilers/recovery-state.reconciler.ts';

const pods = [0, 1, 2].map((r) => ({ name: `w-${r}`, uid: `u-${r}`, podRank: r, phase: 'Running', npusAllocated: true }));

interface SetUpOpts {
  fail?: (c: JobCommand) => boolean;
  tries?: (c: JobCommand) => number;
  persist?: (job: JobFsm) => Promise<void> | void;
  /** A stored job to restore (state and outbox), as a successor does. */
  restore?: { recovery: RecoveryState; outbox: StoredCommand[] };
}

function setUp(opts: SetUpOpts = {}) {
  const vts = new VirtualTimeScheduler(VirtualAction, Infinity);
  const ran: JobCommand[] = [];
  const tried: Array<[number, string]> = [];
  const recovery = opts.restore?.recovery ?? initialRecoveryState({
    config: { jobId: 'u1', strategies: ['retry', 'recover', 'exit'], jobRescheduling: true, podRescheduling: false, subHealthyStrategy: 'hotSwitch', ranksPerPod: 2, waitRescheduleTimeoutS: 270 },
    pods,
  });
  const hotSwitch = initialHotSwitchState({ jobId: 'u1', framework: 'pytorch', subHealthyStrategy: 'hotSwitch' });
  const loop = recoveryCommandLoop(() => job, { log: silentLogger, clock: schedulerClock(vts) });
  loop.start();
  const job: JobFsm = new JobFsm({ jobId: 'u1', key: 'ns/job-u1', namespace: 'ns', jobName: 'job', podGroupName: 'job-u1' }, recovery, hotSwitch, {
    execute: async (_j, c) => {
      tried.push([vts.now(), c.cmd.type === 'sendSignal' ? `signal:${c.cmd.signal.signalType}` : c.cmd.type]);
      ran.push(c);
      if (opts.fail?.(c) === true) throw new Error('boom');
    },
    commands: loop.queue, ...(opts.tries === undefined ? {} : { tries: opts.tries }), persist: opts.persist ?? (() => undefined), log: silentLogger, scheduler: vts,
  }, opts.restore?.outbox ?? []);
  if (opts.restore !== undefined) job.markResumed(60_000);
  job.start();
  /** Lets the command chain and the fed-back results run. */
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  /** Moves virtual time forward, running due timers (and what they cause). */
  const advance = async (ms: number): Promise<void> => {
    vts.maxFrames = vts.now() + ms;
    vts.flush();
    vts.frame = vts.maxFrames;
    await settle();
  };
  const types = (): string[] => ran.map((c) => (c.cmd.type === 'sendSignal' ? `signal:${c.cmd.signal.signalType}${c.cmd.signal.changeStrategy ? `:${c.cmd.signal.changeStrategy}` : ''}` : c.cmd.type));
  return { vts, job, ran, tried, settle, advance, types };
}

describe('JobFsm (one job, two FSMs)', () => {
  it('runs a retry-only fault to stopTrain and times the stop report out in virtual time (15 min)', async () => {
    const t = setUp();
    await t.job.feed({ machine: 'recovery', event: { type: 'faultObserved', jobHealth: 'UnHealthy', ranks: [{ rankId: 3, faultType: '0' }] } });
    await t.settle();
    expect(t.job.recovery.phase).toBe('WaitReportStopCompleteState');
    expect(t.types()).toEqual(['setStepRetryHold', 'writeResetConfig', 'signal:stopTrain']);
    await t.advance(15 * 60_000 - 1);
    expect(t.job.recovery.phase).toBe('WaitReportStopCompleteState');
    await t.advance(1);
    await t.advance(0);
    // Row 11 -> 39: clear, then the pause label and the hand-over to pod/job rescheduling.
    expect(t.job.recovery.phase).toBe('FaultRetryState');
    expect(t.types()).toEqual(expect.arrayContaining(['writeResetConfig', 'setPodGroupLabel', 'signal:changeStrategy:exit', 'escalateRescheduling']));
    const label = t.ran.find((c) => c.cmd.type === 'setPodGroupLabel');
    expect(label?.cmd).toMatchObject({ key: 'process-recover-enable', value: 'pause' });
  });

  it('a stopTrain that cannot be delivered clears reset-config and falls back to rescheduling (row 7)', async () => {
    const t = setUp({ fail: (c) => c.cmd.type === 'sendSignal' && c.cmd.signal.signalType === 'stopTrain' });
    await t.job.feed({ machine: 'recovery', event: { type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] } });
    await t.settle();
    // Row 7: stopTrain not delivered -> FaultClearState -> clear -> fault retry.
    expect(t.types().slice(0, 4)).toEqual(['labelPods', 'writeResetConfig', 'signal:stopTrain', 'writeResetConfig']);
    expect(t.job.recovery.phase).toBe('FaultRetryState');
  });

  it('tries a failing signal again through the command queue, 1 s then 2 s later (ClusterD), then reports the failure', async () => {
    let failures = 0;
    const t = setUp({
      fail: (c) => c.cmd.type === 'sendSignal' && c.cmd.signal.signalType === 'stopTrain' && ++failures <= 3,
      tries: (c) => (c.cmd.type === 'sendSignal' ? 3 : 1),
    });
    await t.job.feed({ machine: 'recovery', event: { type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] } });
    await t.settle();
    expect(t.tried.filter(([, c]) => c === 'signal:stopTrain')).toEqual([[0, 'signal:stopTrain']]);
    expect(t.job.recovery.phase).not.toBe('FaultRetryState');
    await t.advance(1_000);
    await t.advance(2_000);
    // Third failed try: only now the FSM hears of it (row 7: clear, fault retry).
    expect(t.tried.filter(([, c]) => c === 'signal:stopTrain').map(([at]) => at)).toEqual([0, 1_000, 3_000]);
    expect(t.job.recovery.phase).toBe('FaultRetryState');
  });

  it('routes strategy and status reports to the hot-switch FSM while it runs, else to recovery', async () => {
    const t = setUp();
    const idle = await t.job.feed({ machine: 'route', event: { type: 'recoverStrategyReported', strategies: ['retry'] } });
    expect(idle.machine).toBe('recovery');
    await t.job.feed({ machine: 'hotSwitch', event: { type: 'podsObserved', pods: pods.map((p) => ({ name: p.name, uid: p.uid, podRank: p.podRank, phase: 'Running', annotations: {} })) } });
    await t.job.feed({ machine: 'hotSwitch', event: { type: 'subHealthFault', faultyPods: [{ podName: 'w-1', podRank: 1, rankIds: [2, 3] }], recoveryIdle: t.job.recoveryIdle } });
    await t.settle();
    expect(t.job.hotSwitch.phase).toBe('WaitNewPodState');
    expect(t.job.currentUuid()).toBe(t.job.hotSwitch.uuid);
    const busy = await t.job.feed({ machine: 'route', event: { type: 'recoverStrategyReported', strategies: ['migration'] } });
    expect(busy).toMatchObject({ machine: 'hotSwitch', accepted: true, uuid: t.job.hotSwitch.uuid });
    const again = await t.job.feed({ machine: 'route', event: { type: 'recoverStrategyReported', strategies: ['migration'] } });
    expect(again.accepted).toBe(false); // one-slot buffer: the second unsolicited report is refused
    // The backup never runs: 1 min later stop switch, rollback, downgrade.
    await t.advance(60_000);
    expect(t.job.hotSwitch.phase).toBe('INIT');
    expect(t.job.hotSwitch.downgraded).toBe(true);
    expect(t.types()).toEqual(expect.arrayContaining(['signal:hot-switch', 'annotatePod', 'persistDowngrade']));
  });

  it('stamps a stream close with the stream that was current at the step', async () => {
    const t = setUp();
    const ended: number[] = [];
    const stream = (id: number): SignalStream<ProcessManageSignal> => ({
      id, client: { jobId: 'u1', role: 'taskd' }, closed: false, signal: new AbortController().signal,
      send: async () => true, end: () => void ended.push(id),
    });
    t.job.stream = stream(1);
    await t.job.feed({ machine: 'recovery', event: { type: 'processFaultReported', faultRanks: [{ rankId: '3', faultType: '1' }] } });
    t.job.stream = stream(2); // a re-subscription before the kill-job reset's commands ran
    await t.job.feed({ machine: 'recovery', event: { type: 'stopCompleteReported', code: 404 } });
    await t.settle();
    const close = t.ran.find((c) => c.cmd.type === 'closeSignalStream');
    expect(close?.streamId).toBe(2);
  });

  it('runs a step\'s commands only once its state is stored, and stores the commands not done (the outbox) with it', async () => {
    let release: () => void = () => undefined;
    const writes: Array<{ phase: string; outbox: string[] }> = [];
    const t = setUp({
      persist: (j) => {
        writes.push({ phase: j.recovery.phase, outbox: j.outbox().map((o) => o.cmd.type) });
        return new Promise<void>((r) => { release = r; });
      },
    });
    await t.job.feed({ machine: 'recovery', event: { type: 'faultObserved', jobHealth: 'UnHealthy', ranks: [{ rankId: 3, faultType: '0' }] } });
    await t.settle();
    expect(t.ran).toEqual([]); // the state of the step is not stored yet: nothing went out
    expect(writes.at(-1)).toEqual({ phase: 'NotifyWaitFaultFlushingState', outbox: ['setStepRetryHold', 'writeResetConfig'] });
    for (let i = 0; i < 10; i++) { release(); await t.settle(); }
    expect(t.types()).toEqual(['setStepRetryHold', 'writeResetConfig', 'signal:stopTrain']);
    expect(writes.at(-1)).toEqual({ phase: 'WaitReportStopCompleteState', outbox: [] }); // stored without the commands done
  });

  it('a successor runs the restored outbox; its signals wait for the client\'s subscription (docs/rules.md#recover.resume)', async () => {
    const first = setUp({ persist: () => new Promise<void>(() => undefined) }); // dies before anything is stored as done
    await first.job.feed({ machine: 'recovery', event: { type: 'faultObserved', jobHealth: 'UnHealthy', ranks: [{ rankId: 3, faultType: '0' }] } });
    await first.settle();
    const stored = { recovery: first.job.recovery, outbox: first.job.outbox() };
    first.job.stop();
    const next = setUp({ restore: stored });
    await next.settle();
    expect(next.types()).toEqual(['setStepRetryHold', 'writeResetConfig']); // the signal waits for a stream
    await next.advance(30_000);
    expect(next.types()).toEqual(['setStepRetryHold', 'writeResetConfig']);
    next.job.stream = { id: 7, client: { jobId: 'u1', role: 'taskd' }, closed: false, signal: new AbortController().signal, send: async () => true, end: () => undefined };
    expect(next.job.takeResume()).toBe(true);
    await next.settle();
    expect(next.types()).toEqual(['setStepRetryHold', 'writeResetConfig', 'signal:stopTrain']);
    expect(next.job.takeResume()).toBe(false); // one resume: a later subscription resets as ClusterD's
  });

  it('a restored job whose client does not come back within the wait sends its signals anyway (the stream is gone: they fail as ClusterD\'s)', async () => {
    const first = setUp({ persist: () => new Promise<void>(() => undefined) });
    await first.job.feed({ machine: 'recovery', event: { type: 'faultObserved', jobHealth: 'UnHealthy', ranks: [{ rankId: 3, faultType: '0' }] } });
    await first.settle();
    const stored = { recovery: first.job.recovery, outbox: first.job.outbox() };
    first.job.stop();
    const next = setUp({ restore: stored });
    await next.advance(59_999);
    expect(next.types()).not.toContain('signal:stopTrain');
    await next.advance(1);
    await next.advance(0);
    expect(next.types()).toContain('signal:stopTrain');
  });
});
