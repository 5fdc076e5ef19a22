/**
 * The stored recovery record: pod lists are left out, and documents written before a field existed
 * stay readable (`mustExitAtMs`, the recover-in-place must-exit stamps). The recovery_state loop writes
 * the newest desired state and retries a failed write through its work queue until it lands.
 */
import { initialHotSwitchState } from '../policy/recovery/hot-switch-fsm.ts';
import { initialRecoveryState } from '../policy/recovery/recovery-fsm.ts';
import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { ControllerLoop } from '../runtime/controller-loop.ts';
import { ApiError } from '../runtime/kube-client.ts';
import { WorkQueue, type QueueClock } from '../runtime/work-queue.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { FakeConfigMaps } from '../test/support/job-fakes.ts';
import {
  CALLER_WAIT_FAILURES, RECOVERY_STATE_KEY, RECOVERY_STATE_QUEUE, RecoveryStateStore, encodeRecoveryRecord, parseRecoveryRecord, recoveryStateCmName,
  recoveryStateReconciler, type RecoveryRecord,
} from './recovery-state.reconciler.ts';

function record(): RecoveryRecord {
  const recovery = initialRecoveryState({
    config: { jobId: 'u1', strategies: ['recover-in-place', 'recover', 'exit'], jobRescheduling: true, podRescheduling: false, subHealthyStrategy: 'ignore', ranksPerPod: 2, waitRescheduleTimeoutS: 270 },
    pods: [{ name: 'w-0', uid: 'p0', podRank: 0, phase: 'Running', npusAllocated: true }],
  });
  return {
    version: 1, jobId: 'u1', jobKey: 'ns/job-u1', registered: true, savedAtMs: 5,
    recovery: { ...recovery, mustExitAtMs: { 1: 26_000 } },
    hotSwitch: initialHotSwitchState({ jobId: 'u1', framework: 'pytorch', subHealthyStrategy: 'ignore' }),
  };
}

describe('recovery state record', () => {
  it('round-trips the must-exit stamps and drops the pod lists', () => {
    const parsed = parseRecoveryRecord(encodeRecoveryRecord(record()));
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.value.recovery.mustExitAtMs).toEqual({ 1: 26_000 });
    expect(parsed.value.recovery.pods).toEqual([]);
  });

  it('a document stored before mustExitAtMs existed reads as "no pod reported as must exit"; junk stamps are dropped', () => {
    const old = JSON.parse(encodeRecoveryRecord(record())) as { recovery: Record<string, unknown> };
    delete old.recovery['mustExitAtMs'];
    const parsed = parseRecoveryRecord(JSON.stringify(old));
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.value.recovery.mustExitAtMs).toEqual({});
    expect(parsed.value.recovery.phase).toBe('INIT');

    old.recovery['mustExitAtMs'] = { 1: 'soon', 2: 7 };
    const junk = parseRecoveryRecord(JSON.stringify(old));
    expect(junk.ok && junk.value.recovery.mustExitAtMs).toEqual({ 2: 7 });
    old.recovery['mustExitAtMs'] = [3];
    const list = parseRecoveryRecord(JSON.stringify(old));
    expect(list.ok && list.value.recovery.mustExitAtMs).toEqual({});
  });

  it('an O&M operation in flight survives the round trip (docs/rules.md#recover.stress-test); none stored, or a broken one, reads as none', () => {
    const om = { kind: 'stressTest' as const, stress: { n1: { 0: [0, 1] } }, switchRanks: [], switchOps: [], rankNode: { 0: 'n1' }, rankDevice: { 0: '0' }, isolateNodes: [], notified: true };
    const r = record();
    const inFlight = { ...r, recovery: { ...r.recovery, phase: 'WaitStressTestFinishedState' as const, step: 'stressTest', om } };
    const parsed = parseRecoveryRecord(encodeRecoveryRecord(inFlight));
    expect(parsed.ok && { phase: parsed.value.recovery.phase, om: parsed.value.recovery.om }).toEqual({ phase: 'WaitStressTestFinishedState', om });

    const old = JSON.parse(encodeRecoveryRecord(r)) as { recovery: Record<string, unknown> };
    delete old.recovery['om'];
    const before = parseRecoveryRecord(JSON.stringify(old));
    expect(before.ok && before.value.recovery.om).toBeNull();
    old.recovery['om'] = { kind: 'defrag' };
    const broken = parseRecoveryRecord(JSON.stringify(old));
    expect(broken.ok && broken.value.recovery.om).toBeNull();
  });

  it('the step retry\'s memory and the commands not done survive the round trip (docs/rules.md#recover.resume); junk entries are dropped', () => {
    const memory = { hold: { rankIds: [3], recoverTimeMs: 1_000 }, reports: [{ rankId: 3, faultType: '0' as const, atMs: 900 }] };
    const signal = { id: 7, type: 'sendSignal' as const, awaitResult: true, signal: { jobId: 'u1', uuid: 'U', signalType: 'stopTrain', actions: ['stop_train'], faultRanks: [], changeStrategy: '', timeout: 0, nodeRankIds: [], extraParams: '' } };
    const r = { ...record(), memory, outbox: [{ machine: 'recovery' as const, cmd: signal }] } as unknown as RecoveryRecord;
    const parsed = parseRecoveryRecord(encodeRecoveryRecord(r));
    expect(parsed.ok && { memory: parsed.value.memory, outbox: parsed.value.outbox }).toEqual({ memory, outbox: [{ machine: 'recovery', cmd: signal }] });

    const junk = JSON.parse(encodeRecoveryRecord(r)) as Record<string, unknown>;
    junk['memory'] = { hold: { rankIds: ['x'] }, reports: [{ rankId: 3, faultType: '1', atMs: 1 }, { rankId: 4, faultType: '2', atMs: 2 }] };
    junk['outbox'] = [{ machine: 'other', cmd: signal }, { machine: 'recovery', cmd: { type: 'sendSignal' } }, 'x'];
    const read = parseRecoveryRecord(JSON.stringify(junk));
    expect(read.ok && { memory: read.value.memory, outbox: read.value.outbox }).toEqual({ memory: { reports: [{ rankId: 4, faultType: '2', atMs: 2 }] }, outbox: [] });
    delete junk['memory'];
    delete junk['outbox'];
    const before = parseRecoveryRecord(JSON.stringify(junk)); // stored before they existed
    expect(before.ok && { memory: before.value.memory, outbox: before.value.outbox }).toEqual({ memory: undefined, outbox: [] });
  });
});

/** The queue's clock in virtual time: `next()` jumps to the earliest timer and fires it. */
class VirtualClock implements QueueClock {
  t = 0;
  private id = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  now(): number { return this.t; }
  setTimeout(fn: () => void, ms: number): unknown { this.timers.set(++this.id, { at: this.t + ms, fn }); return this.id; }
  clearTimeout(h: unknown): void { this.timers.delete(h as number); }
  next(): void {
    const [id, first] = [...this.timers].sort((a, b) => a[1].at - b[1].at)[0] ?? [];
    if (id === undefined || first === undefined) throw new Error('no timer pending');
    this.timers.delete(id);
    this.t = first.at;
    first.fn();
  }
}

/** Lets the loop's worker run what is queued (promise continuations and I/O callbacks). */
const settle = async (): Promise<void> => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };

function setup() {
  const cms = new FakeConfigMaps();
  const metrics = new Metrics({ processMetrics: false });
  const writer = new ConfigMapWriter(cms.client(), { metrics });
  const store = new RecoveryStateStore({
    cached: (name) => cms.get('mindx-dl', name), cachedNames: () => [...cms.objects.values()].map((c) => c.metadata?.name ?? ''),
    writer, log: silentLogger, dryRun: false,
  });
  const clock = new VirtualClock();
  const loop = new ControllerLoop(recoveryStateReconciler({ store, writer, client: cms.client() }), {
    log: silentLogger, metrics, queue: new WorkQueue({ ...RECOVERY_STATE_QUEUE, clock }), clock,
  });
  loop.start();
  store.attach((uid) => loop.queue.add(uid));
  const errors = async (): Promise<number> =>
    (await metrics.reconciles.get()).values.find((v) => v.labels.controller === 'recovery_state' && v.labels.result === 'error')?.value ?? 0;
  const stored = (): RecoveryRecord | undefined => {
    const p = parseRecoveryRecord(cms.get('mindx-dl', recoveryStateCmName('u1'))?.data?.[RECOVERY_STATE_KEY]);
    return p.ok ? p.value : undefined;
  };
  return { cms, store, clock, loop, errors, stored };
}

describe('recovery_state reconciler', () => {
  it('a write that keeps failing is retried with the queue\'s backoff until it lands; the state is never dropped', async () => {
    const { cms, store, clock, loop, errors, stored } = setup();
    cms.failWrites = new ApiError('POST', '/api/v1/namespaces/mindx-dl/configmaps', 503, { reason: 'ServiceUnavailable' });
    let callerWent = false;
    void store.save(record()).then(() => { callerWent = true; });
    await settle();
    expect(await errors()).toBe(1);
    // Eight failed writes, each after the queue's per-key backoff: 200 ms doubling. The caller (Register,
    // a persisted downgrade) goes on after CALLER_WAIT_FAILURES of them; the state stays desired (the
    // store's former private retry dropped it after the fifth failure).
    for (let n = 2; n <= 8; n++) {
      clock.next();
      await settle();
      expect(await errors()).toBe(n);
      expect(callerWent).toBe(n >= CALLER_WAIT_FAILURES);
    }
    expect(clock.t).toBe(200 * (2 ** 7 - 1));
    expect(stored()).toBeUndefined();
    expect(store.get('u1')?.savedAtMs).toBe(5);

    cms.failWrites = undefined;
    clock.next();
    await settle();
    expect(stored()?.recovery.mustExitAtMs).toEqual({ 1: 26_000 });
    expect(store.desired('u1')).toBeUndefined();
    await loop.stop();
  });

  it('the newest desired state wins; a removal deletes the ConfigMap; save resolves once stored', async () => {
    const { cms, store, clock, loop, stored } = setup();
    cms.failWrites = new ApiError('POST', '/api/v1/namespaces/mindx-dl/configmaps', 503, {});
    void store.save(record());
    await settle();
    void store.save({ ...record(), savedAtMs: 9 });
    cms.failWrites = undefined;
    clock.next();
    await store.flush();
    expect(stored()?.savedAtMs).toBe(9);
    expect(cms.writes.map((w) => w.verb)).toEqual(['create']);

    await store.remove('u1');
    expect(cms.get('mindx-dl', recoveryStateCmName('u1'))).toBeUndefined();
    expect(cms.writes.map((w) => w.verb)).toEqual(['create', 'delete']);
    await loop.stop();
  });
});

describe('recovery state of a job id that cannot be part of a ConfigMap name', () => {
  it('is kept in memory only: no write (which the apiserver would refuse on every retry), readable, removable', async () => {
    const cms = new FakeConfigMaps();
    const queued: string[] = [];
    const store = new RecoveryStateStore({
      cached: (name) => cms.get('mindx-dl', name), cachedNames: () => [...cms.objects.values()].map((c) => c.metadata?.name ?? ''),
      writer: new ConfigMapWriter(cms.client()), log: silentLogger, dryRun: false,
    });
    store.attach((uid) => queued.push(uid));
    const bad = { ...record(), jobId: 'Bad Id !' };
    await store.save(bad);
    expect(queued).toEqual([]);
    expect(cms.writes).toEqual([]);
    expect(store.get('Bad Id !')?.jobKey).toBe('ns/job-u1');
    await store.remove('Bad Id !');
    expect(store.get('Bad Id !')).toBeUndefined();
  });
});
