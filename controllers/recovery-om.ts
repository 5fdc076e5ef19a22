/**
 * The O&M operations' gRPC side (docs/grpc.md#om, docs/rules.md#recover.stress-test, #recover.switch-nic): StressTest and
 * SwitchNicTrack become `omStarted` on the job's recovery FSM; the agents' notify streams
 * (SubscribeNotifyExecStressTest / SubscribeNotifySwitch) carry the FSM's notify message; the
 * operation's result streams (SubscribeStressTestResponse / SubscribeSwitchNicSignal) each take one
 * queued message; the agents' results are fed back. ClusterD keeps these as channels of the job's
 * controller (CD/application/recover/om_controller.go): a reset closes them, so the streams end and the
 * queued messages go. What must survive a restart is in the FSM state: the notify message is rebuilt
 * from it, and the stress-test filter reads it.
 */
import { filter, firstValueFrom, merge, Subject, take, timer, type SchedulerLike } from 'rxjs';
import { Code, Info, status, type Status } from '../grpc/codes.ts';
import type { OmHandlers, OmKind, SignalStream } from '../grpc/handlers.ts';
import type { StressTestParam, StressTestResultMsg, SwitchNics, SwitchResultMsg } from '../grpc/messages.ts';
import { hotSwitchIdle } from '../policy/recovery/hot-switch-fsm.ts';
import { checkStressTest, checkSwitchNic, rankTable, type OmCheck } from '../policy/recovery/om-checks.ts';
import { isStressTest, isSwitchingNic, omNotifyMessage } from '../policy/recovery/om-handlers.ts';
import type { JobEntry } from '../state/job-index.ts';
import type { RecoveryCommand } from '../policy/recovery/recovery-types.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { JobCommand, JobFsm } from './recovery-job.ts';

/** SendWithRetry's tries (om_controller.go, retryTimes). */
const NOTIFY_TRIES = 3;
/** ClusterD's result channels hold 10 messages (eventChanLength); a full one would block its FSM, we drop. */
const RESPONSE_QUEUE = 10;

export interface OmDeps {
  readonly job: (jobId: string) => JobFsm | undefined;
  readonly lookup: (jobId: string) => { key: string; entry: JobEntry } | undefined;
  /** The node's device-info `SuperPodID` (undefined: no device-info for the node). */
  readonly superPodId: (node: string) => number | undefined;
  /** The stress-test filter's nodes changed: re-announce them to the fault view. */
  readonly notifyNodes: (nodes: readonly string[]) => void;
  readonly log: Logger;
  readonly scheduler: SchedulerLike;
}

type ResultMessage = { jobID: string; msg: string };
const KIND_RUNNING: Record<OmKind, string> = { stressTest: 'is not stress test', switchNic: 'is not swtiching nic' };
const NOTIFY_PHASE: Record<OmKind, string> = { stressTest: 'NotifyStressTestState', switchNic: 'NotifySwitchNicState' };

interface PerJob {
  readonly notify: Record<OmKind, Array<SignalStream<unknown>>>;
  readonly responses: Record<OmKind, string[]>;
  readonly waiters: Record<OmKind, Array<SignalStream<ResultMessage>>>;
  delivering: boolean;
}

export class OmOperations implements OmHandlers {
  private readonly d: OmDeps;
  private readonly jobs = new Map<string, PerJob>();
  /** A response was queued or the job's streams were ended. */
  private readonly changed$ = new Subject<string>();

  constructor(d: OmDeps) {
    this.d = d;
  }

  private per(jobId: string): PerJob {
    let p = this.jobs.get(jobId);
    if (p === undefined) {
      p = { notify: { stressTest: [], switchNic: [] }, responses: { stressTest: [], switchNic: [] }, waiters: { stressTest: [], switchNic: [] }, delivering: false };
      this.jobs.set(jobId, p);
    }
    return p;
  }

  /** Nodes under an online stress test now (docs/rules.md#filter.stress-test): read from the FSM states. */
  stressTestNodes(jobs: Iterable<JobFsm>): Set<string> {
    const out = new Set<string>();
    for (const j of jobs) {
      const s = j.recovery;
      if (s.phase === 'WaitStressTestFinishedState' && (s.step === 'stressTest' || s.step === 'stressTestFault')) {
        for (const node of Object.keys(s.om?.stress ?? {})) out.add(node);
      }
    }
    return out;
  }

  // ---- requests ----

  private async start(kind: OmKind, jobId: string, check: (job: JobFsm | undefined, entry: JobEntry | undefined) => OmCheck, busyInfo: string, okInfo: string): Promise<Status> {
    const found = this.d.lookup(jobId);
    const job = this.d.job(jobId);
    const r = check(job, found?.entry);
    if (!r.ok) {
      this.d.log.warn('O&M request refused', { jobId, kind, reason: r.info });
      return status(Code.OMParamInvalid, r.info);
    }
    // canDoStressTest / canDoSwitchingNic: only an idle controller (our hot switch is a second FSM).
    const busy = (): Status => {
      this.d.log.warn('O&M request refused: the job is busy', { jobId, kind, phase: job?.recovery.phase, hotSwitch: job?.hotSwitch.phase });
      return status(Code.OMIsRunning, busyInfo);
    };
    if (job === undefined || job.recovery.phase !== 'INIT' || !hotSwitchIdle(job.hotSwitch)) return busy();
    const o = await job.feed({ machine: 'recovery', event: { type: 'omStarted', om: r.start } });
    if (!o.accepted) return busy();
    this.d.log.info('O&M operation started', { job: job.target.key, kind: r.start.kind, stress: r.start.stress, ranks: r.start.switchRanks, ops: r.start.switchOps });
    return status(Code.OK, okInfo);
  }

  private facts(job: JobFsm | undefined, entry: JobEntry | undefined) {
    const per = job?.recovery.config.ranksPerPod ?? 1;
    return { exists: entry !== undefined, registered: job !== undefined, servers: entry === undefined ? [] : rankTable(entry.view, per) };
  }

  stressTest(req: StressTestParam): Promise<Status> {
    return this.start('stressTest', req.jobId, (job, entry) => checkStressTest(req, this.facts(job, entry)),
      `jobId=${req.jobId} om is running, or job recovering`, 'stress test operation was successfully distributed');
  }

  switchNicTrack(req: SwitchNics): Promise<Status> {
    return this.start('switchNic', req.jobId, (job, entry) => {
      const f = this.facts(job, entry);
      const pods = entry?.view.pods.filter((p) => p.rank !== undefined && p.backup !== true && p.terminating !== true) ?? [];
      const min = Math.max(entry?.view.minAvailable ?? 0, 1);
      const running = pods.length >= min && pods.every((p) => p.phase === 'Running' && p.npus.length > 0);
      return checkSwitchNic(req, { ...f, running, superPodId: this.d.superPodId });
    }, `jobId=${req.jobId} nic is swtiching, or job recovering`, 'switching operation was successfully distributed');
  }

  async replyStressTestResult(req: StressTestResultMsg): Promise<Status> {
    const job = this.d.job(req.jobId);
    if (job === undefined) return status(Code.UnRegistry, Info.recoverNotRegistered(req.jobId));
    const o = await job.feed({ machine: 'recovery', event: { type: 'stressTestResultReported', result: req.stressResult } });
    if (!o.accepted) this.d.log.warn('stress test result not taken (one is queued already)', { job: job.target.key });
    return status(Code.OK, 'reply success');
  }

  async replySwitchNicResult(req: SwitchResultMsg): Promise<Status> {
    const job = this.d.job(req.jobId);
    if (job === undefined) return status(Code.UnRegistry, Info.recoverNotRegistered(req.jobId));
    const o = await job.feed({ machine: 'recovery', event: { type: 'switchNicResultReported', result: req.result } });
    if (!o.accepted) this.d.log.warn('switch nic result not taken (one is queued already)', { job: job.target.key });
    return status(Code.OK, 'reply success');
  }

  // ---- streams ----

  notifyStream(kind: OmKind, stream: SignalStream<unknown>): void {
    const jobId = stream.client.jobId;
    const list = this.per(jobId).notify[kind];
    list.push(stream);
    stream.signal.addEventListener('abort', () => {
      const i = list.indexOf(stream);
      if (i >= 0) list.splice(i, 1);
    }, { once: true });
    this.d.log.info('O&M notify stream opened', { jobId, kind, streamId: stream.id });
    void this.deliver(jobId);
  }

  resultRefusal(kind: OmKind, jobId: string): string | undefined {
    const job = this.d.job(jobId);
    if (job === undefined) return Info.recoverNotRegistered(jobId);
    if (!(kind === 'stressTest' ? isStressTest(job.recovery) : isSwitchingNic(job.recovery))) return `jobId=${jobId} ${KIND_RUNNING[kind]}`;
    return undefined;
  }

  /** One message (queued or the next one), then OK; after the report timeout, nothing (and a note queued, as ClusterD). */
  resultStream(kind: OmKind, stream: SignalStream<ResultMessage>): void {
    const jobId = stream.client.jobId;
    const job = this.d.job(jobId);
    const per = this.per(jobId);
    per.waiters[kind].push(stream);
    this.serve(jobId, kind);
    if (stream.closed || !per.waiters[kind].includes(stream)) return;
    const waitMs = job?.recovery.timings.reportMs ?? 15 * 60_000;
    const served$ = this.changed$.pipe(filter((id) => id === jobId && !per.waiters[kind].includes(stream)));
    void firstValueFrom(merge(served$, timer(waitMs, this.d.scheduler)).pipe(take(1)), { defaultValue: undefined }).then((v) => {
      if (v !== 0 || !per.waiters[kind].includes(stream)) return;
      per.waiters[kind].splice(per.waiters[kind].indexOf(stream), 1);
      this.d.log.warn('O&M result stream: no result within the report timeout', { jobId, kind });
      const note = kind === 'stressTest' ? 'report stress test result timeout, please check manually' : 'report switch nic result timeout, please check manually';
      this.queue(jobId, kind, note);
      stream.end();
    });
    stream.signal.addEventListener('abort', () => {
      const i = per.waiters[kind].indexOf(stream);
      if (i >= 0) per.waiters[kind].splice(i, 1);
    }, { once: true });
  }

  private queue(jobId: string, kind: OmKind, msg: string): void {
    const q = this.per(jobId).responses[kind];
    if (q.length >= RESPONSE_QUEUE) {
      this.d.log.warn('O&M result dropped: its queue is full (nobody reads the result stream)', { jobId, kind, msg });
      return;
    }
    q.push(msg);
  }

  private serve(jobId: string, kind: OmKind): void {
    const per = this.per(jobId);
    while (per.responses[kind].length > 0 && per.waiters[kind].length > 0) {
      const stream = per.waiters[kind].shift()!;
      const msg = per.responses[kind].shift()!;
      this.d.log.info('O&M result sent', { jobId, kind, msg });
      void stream.send({ jobID: jobId, msg }).then(() => stream.end());
    }
    this.changed$.next(jobId);
  }

  /** Sends the notify message of a job waiting in NotifyStressTestState / NotifySwitchNicState to its newest notify stream. */
  async deliver(jobId: string): Promise<void> {
    const job = this.d.job(jobId);
    const per = this.per(jobId);
    const s = job?.recovery;
    const om = s?.om;
    if (job === undefined || s === undefined || om === undefined || om === null || om.notified || s.phase !== NOTIFY_PHASE[om.kind] || per.delivering) return;
    const stream = per.notify[om.kind].filter((x) => !x.closed).at(-1);
    const message = omNotifyMessage(s);
    if (stream === undefined || message === undefined) {
      this.d.log.info('O&M notify message held until an agent subscribes', { job: job.target.key, kind: om.kind });
      return;
    }
    per.delivering = true;
    try {
      let ok = false;
      for (let i = 0; i < NOTIFY_TRIES && !ok && !stream.closed; i++) ok = await stream.send(message.message);
      this.d.log.info('O&M notify message sent', { job: job.target.key, kind: om.kind, ok, notify: message.message });
      await job.feed({ machine: 'recovery', event: { type: 'omNotified', ok } });
    } finally {
      per.delivering = false;
    }
  }

  /** The O&M commands of the recovery FSM; false for any other command. */
  run(job: JobFsm, c: JobCommand): boolean {
    if (c.machine !== 'recovery') return false;
    const cmd: RecoveryCommand = c.cmd;
    switch (cmd.type) {
      case 'notifyOm':
        void this.deliver(job.jobId);
        return true;
      case 'omResponse':
        this.queue(job.jobId, cmd.kind, cmd.msg);
        this.serve(job.jobId, cmd.kind);
        return true;
      case 'setStressTestFilter':
        this.d.log.info(cmd.on ? 'stress test: stress-test codes hidden' : 'stress test: stress-test codes shown again', { job: job.target.key, nodes: cmd.nodes });
        this.d.notifyNodes(cmd.nodes);
        return true;
      case 'endOmStreams':
        this.end(job.jobId);
        return true;
      default:
        return false;
    }
  }

  /** A controller reset or the job gone: the streams end (OK) and the queued messages go. */
  end(jobId: string): void {
    const per = this.jobs.get(jobId);
    if (per === undefined) return;
    this.jobs.delete(jobId);
    for (const kind of ['stressTest', 'switchNic'] as const) {
      for (const s of [...per.notify[kind], ...per.waiters[kind]]) s.end();
    }
    this.changed$.next(jobId);
  }
}
