/**
 * A TaskD-like client for tests (docs/grpc.md#taskd-sequence, #python-client, #test-client). Role `taskd` replays the Go TaskD manager:
 * Init -> Register -> SubscribeProcessManageSignal on one long-lived channel, restarting from Init 1 s
 * after any failure or stream end; reports on a fresh channel each, up to 4 immediate attempts on
 * transport errors, reply code ignored. Role `master agent` replays the legacy Python client: Init
 * until 0 (403 = stop for good, else 5 s), Register up to 3 tries, HealthCheck every 1 s, stream-end
 * backoff min(10, i) s, reports on the long-lived channel with one re-Register + resend on a non-zero
 * code, no isolateRankIds, and signals for another jobId dropped. With `autoRespond` it answers each
 * signal as MindIO would (§12 table). `timeScale` shrinks every wait for tests.
 */
import { Client, credentials as grpcCredentials, type ChannelCredentials, type ChannelOptions, type ClientReadableStream, type MethodDefinition } from '@grpc/grpc-js';
import type { Status } from '../../grpc/codes.ts';
import type { ProcessManageSignal } from '../../vocabulary/process-manage-signal.ts';
import { toProcessManageSignal, type ClientInfo, type FaultRank } from '../../grpc/messages.ts';
import { loadClusterdServices, type ClusterdServices } from '../../grpc/protos.ts';

export type TaskdRole = 'taskd' | 'master agent';
export type ReportRpc = 'ReportProcessFault' | 'ReportStopComplete' | 'ReportRecoverStrategy' | 'ReportRecoverStatus';

/** How the scripted MindIO answers (docs/grpc.md#test-client table). */
export interface MindIoScript {
  /** ReportStopComplete code after `stop_train` (0; 404 = process not ready -> kill path). */
  stopCode: number;
  /** ReportStopComplete code after `pause_train` (0; 499 = pause failed). */
  pauseCode: number;
  /** ReportRecoverStrategy after `globalFault`. */
  strategies: string[];
  /** ReportRecoverStrategy after `hot-switch`/`hot switch` (`["exit"]` = pause failed). */
  hotSwitchStrategies: string[];
  /** ReportRecoverStatus answer for a strategy (`recover` also for recover-in-place; `dump` after saveAndExit). */
  recoverStatus: (strategy: string, signal: ProcessManageSignal) => { code: number; info?: string; isolateRankIds?: string[] };
}

export interface TaskdClientOptions {
  /** `host:port`; default `$MINDX_SERVER_IP:8899` (127.0.0.1 with LOCAL_PROXY_ENABLE=on). */
  target?: string;
  /** Default `$MINDX_TASK_ID` (the AscendJob UID). */
  jobId?: string;
  role?: TaskdRole;
  /** Default insecure (plaintext h2c, as every real client). */
  credentials?: ChannelCredentials;
  channelOptions?: ChannelOptions;
  autoRespond?: boolean;
  script?: Partial<MindIoScript>;
  /** Also hold SubscribeNotifySwitch, SubscribeNotifyExecStressTest, SubscribeDataTraceSwitch (Go TaskD: always). */
  sideStreams?: boolean;
  /** Multiplies every wait (1 = real TaskD timings). */
  timeScale?: number;
  protoDir?: string;
}

export interface ReportRecord { readonly rpc: ReportRpc; readonly request: object; readonly reply?: Status; readonly error?: string; readonly attempts: number }
export interface TaskdCounters { init: number; register: number; subscribe: number; streamEnds: number; healthChecks: number }

const CHANGE_REPORTED = new Set(['retry', 'recover', 'dump', 'downgrade', 'upgrade', 'migration']);
const PY_KEEPALIVE: ChannelOptions = {
  'grpc.keepalive_time_ms': 3_000,
  'grpc.keepalive_timeout_ms': 1_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.max_pings_without_data': 1,
};

/** The address a TaskD computes from its environment (docs/grpc.md#client-discovery). */
export function clusterdTarget(env: NodeJS.ProcessEnv = process.env): string {
  const host = env['LOCAL_PROXY_ENABLE'] === 'on' ? '127.0.0.1' : (env['MINDX_SERVER_IP'] ?? '');
  if (host === '') throw new Error('MINDX_SERVER_IP is not set');
  return `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:8899`;
}

export class TaskdClient {
  readonly jobId: string;
  readonly role: TaskdRole;
  readonly target: string;
  readonly script: MindIoScript;
  /** Every non-keep-alive signal kept, in arrival order. */
  readonly received: ProcessManageSignal[] = [];
  /** Signals the `master agent` dropped because their jobId was not its own. */
  readonly discarded: ProcessManageSignal[] = [];
  readonly reports: ReportRecord[] = [];
  readonly counters: TaskdCounters = { init: 0, register: 0, subscribe: 0, streamEnds: 0, healthChecks: 0 };
  keepAlives = 0;
  lastKeepAliveAt = 0;
  subscribed = false;
  /** Set when the loop stopped for good (master agent got 403, or a killMaster). */
  stoppedReason: string | undefined;
  private readonly opts: TaskdClientOptions;
  private readonly services: ClusterdServices;
  private readonly abort = new AbortController();
  private readonly streams = new Set<ClientReadableStream<unknown>>();
  private readonly listeners = new Set<() => void>();
  private channel: Client | undefined;
  private lastRegisterAt = 0;

  constructor(opts: TaskdClientOptions = {}) {
    this.opts = opts;
    this.role = opts.role ?? 'taskd';
    this.jobId = opts.jobId ?? process.env['MINDX_TASK_ID'] ?? '';
    this.target = opts.target ?? clusterdTarget();
    this.services = loadClusterdServices(opts.protoDir);
    this.script = {
      stopCode: 0,
      pauseCode: 0,
      strategies: ['retry', 'recover', 'dump'],
      hotSwitchStrategies: ['migration'],
      recoverStatus: () => ({ code: 0 }),
      ...opts.script,
    };
  }

  get info(): ClientInfo {
    return { jobId: this.jobId, role: this.role };
  }

  /** Start the process-signal loop (and side streams); returns at once. */
  start(): this {
    const loop = this.role === 'taskd' ? this.runTaskd() : this.runMasterAgent();
    loop.catch((err: unknown) => (this.stoppedReason = `loop failed: ${String(err)}`));
    if (this.role === 'taskd' && this.opts.sideStreams === true) {
      void this.holdSideStream(this.services.recover, 'SubscribeNotifySwitch', 'retry');
      void this.holdSideStream(this.services.recover, 'SubscribeNotifyExecStressTest', 'retry');
      void this.holdSideStream(this.services.trainingDataTrace, 'SubscribeDataTraceSwitch', 'growing');
    }
    return this;
  }

  stop(): void {
    this.abort.abort();
    for (const s of this.streams) s.cancel();
    this.channel?.close();
    this.notify();
  }

  get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  // ---- waiting helpers ----

  /** Resolve once `probe` returns a value (checked on every client event and every 20 ms). */
  waitFor<T>(probe: () => T | undefined, timeoutMs = 5_000, what = 'condition'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = (): boolean => {
        const v = probe();
        if (v === undefined) return false;
        cleanup();
        resolve(v);
        return true;
      };
      const timer = setInterval(check, 20);
      const deadline = setTimeout(() => (cleanup(), reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`))), timeoutMs);
      const cleanup = (): void => (clearInterval(timer), clearTimeout(deadline), void this.listeners.delete(check));
      if (!check()) this.listeners.add(check);
    });
  }

  /** The first received signal (index >= `from`) matching `pred`. */
  waitForSignal(pred: (s: ProcessManageSignal) => boolean, timeoutMs?: number, from = 0): Promise<ProcessManageSignal> {
    return this.waitFor(() => this.received.slice(from).find(pred), timeoutMs, 'signal');
  }

  waitForReport(rpc: ReportRpc, timeoutMs?: number, from = 0): Promise<ReportRecord> {
    return this.waitFor(() => this.reports.slice(from).find((r) => r.rpc === rpc && (r.reply !== undefined || r.error !== undefined)), timeoutMs, rpc);
  }

  /** Every signal (keep-alives excluded) from the time of this call, as an async iterator; ends on stop(). */
  signals(): AsyncGenerator<ProcessManageSignal> {
    return this.signalsFrom(this.received.length);
  }

  private async *signalsFrom(from: number): AsyncGenerator<ProcessManageSignal> {
    for (let i = from; !this.stopped; i++) {
      const next = await this.waitFor(() => (this.stopped ? null : this.received[i]), 2 ** 31 - 1).catch(() => null);
      if (next === null || next === undefined) return;
      yield next;
    }
  }

  // ---- reports (what MindIO's callbacks turn into, §9.3) ----

  reportProcessFault(faultRanks: readonly FaultRank[]): Promise<ReportRecord> {
    return this.report('ReportProcessFault', { jobId: this.jobId, faultRanks });
  }
  reportStopComplete(code: number, info: string, faultRanks: readonly FaultRank[]): Promise<ReportRecord> {
    return this.report('ReportStopComplete', { jobId: this.jobId, status: { code, info }, faultRanks });
  }
  reportRecoverStrategy(faultRanks: readonly FaultRank[], strategies: readonly string[]): Promise<ReportRecord> {
    return this.report('ReportRecoverStrategy', { jobId: this.jobId, faultRanks, strategies });
  }
  /** isolateRankIds are dropped for `master agent` (its stub predates field 4). */
  reportRecoverStatus(code: number, info: string, strategy: string, isolateRankIds: readonly string[] = []): Promise<ReportRecord> {
    const base = { jobId: this.jobId, status: { code, info }, strategy };
    return this.report('ReportRecoverStatus', this.role === 'taskd' ? { ...base, isolateRankIds } : base);
  }
  healthCheck(): Promise<Status> {
    return this.unary<Status>(this.long(), this.services.recover, 'HealthCheck', this.info);
  }

  // ---- internals ----

  private ms(realMs: number): number {
    return Math.max(1, Math.round(realMs * (this.opts.timeScale ?? 1)));
  }

  private sleep(realMs: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const t = setTimeout(done, this.ms(realMs));
      function done(): void {
        clearTimeout(t);
        resolve();
      }
      this.abort.signal.addEventListener('abort', done, { once: true });
    });
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }

  private newChannel(): Client {
    const options = { ...(this.role === 'master agent' ? PY_KEEPALIVE : {}), ...this.opts.channelOptions };
    return new Client(this.target, this.opts.credentials ?? grpcCredentials.createInsecure(), options);
  }

  private long(): Client {
    this.channel ??= this.newChannel();
    return this.channel;
  }

  private unary<Res>(client: Client, service: ClusterdServices[keyof ClusterdServices], name: string, request: object): Promise<Res> {
    const def = service[name] as MethodDefinition<object, Res>;
    return new Promise<Res>((resolve, reject) => {
      client.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, (err, res) => (err || res === undefined ? reject(err ?? new Error('empty response')) : resolve(res)));
    });
  }

  private async step(name: 'Init' | 'Register'): Promise<Status | undefined> {
    this.counters[name === 'Init' ? 'init' : 'register']++;
    const s = await this.unary<Status>(this.long(), this.services.recover, name, this.info).catch(() => undefined);
    if (name === 'Register' && s?.code === 0) this.lastRegisterAt = Date.now();
    this.notify();
    return s;
  }

  private async runTaskd(): Promise<void> {
    while (!this.stopped) {
      if ((await this.step('Init'))?.code !== 0 || (await this.step('Register'))?.code !== 0) {
        await this.sleep(1_000);
        continue;
      }
      await this.subscribeOnce();
      await this.sleep(1_000);
    }
  }

  /** Legacy Python Init loop: true on 0, false on 403 (process recovery off: stop for good). */
  private async initLoop(): Promise<boolean> {
    while (!this.stopped) {
      const s = await this.step('Init');
      if (s?.code === 0) return true;
      if (s?.code === 403) {
        this.stoppedReason = 'init 403: process recovery disabled';
        return false;
      }
      if (s === undefined) {
        this.channel?.close();
        this.channel = undefined;
      }
      await this.sleep(5_000);
    }
    return false;
  }

  private async runMasterAgent(): Promise<void> {
    if (!(await this.initLoop())) return;
    for (let i = 0; i < 3 && (await this.step('Register'))?.code !== 0; i++) await this.sleep(5_000);
    void this.healthLoop();
    let backoff = 1;
    while (!this.stopped && this.stoppedReason === undefined) {
      if (!(await this.initLoop())) return;
      if ((await this.step('Register'))?.code === 0) backoff = 1;
      await this.subscribeOnce();
      await this.sleep(Math.min(10, backoff++) * 1_000);
    }
  }

  private async healthLoop(): Promise<void> {
    while (!this.stopped && this.stoppedReason === undefined) {
      this.counters.healthChecks++;
      const failedAt = Date.now();
      const ok = await this.healthCheck().then(() => true, () => false);
      if (!ok) {
        await this.sleep(10_000);
        if (this.lastRegisterAt < failedAt && (await this.initLoop())) await this.step('Register');
        continue;
      }
      await this.sleep(1_000);
    }
  }

  /** One subscription: resolves when the stream ends (status OK or error). */
  private subscribeOnce(): Promise<void> {
    const def = this.services.recover['SubscribeProcessManageSignal'] as MethodDefinition<object, unknown>;
    this.counters.subscribe++;
    return new Promise<void>((resolve) => {
      const call = this.long().makeServerStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, this.info);
      this.streams.add(call);
      this.subscribed = true;
      this.notify();
      call.on('data', (raw: unknown) => this.onSignal(toProcessManageSignal(raw)));
      call.on('error', () => {});
      call.on('status', () => {
        this.streams.delete(call);
        this.subscribed = false;
        this.counters.streamEnds++;
        this.notify();
        resolve();
      });
    });
  }

  /** Hold an O&M notify stream (retry 2 s after an error, 1 s after EOF) or the data-trace stream (1, 2, 3 ... s, 60 tries). */
  private async holdSideStream(service: ClusterdServices[keyof ClusterdServices], name: string, mode: 'retry' | 'growing'): Promise<void> {
    const def = service[name] as MethodDefinition<object, unknown>;
    for (let failures = 0; !this.stopped && failures < (mode === 'growing' ? 60 : Infinity); ) {
      const ok = await new Promise<boolean>((resolve) => {
        const call = this.long().makeServerStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, this.info);
        this.streams.add(call);
        call.on('data', () => {});
        call.on('error', () => {});
        call.on('status', (s: { code: number }) => (this.streams.delete(call), resolve(s.code === 0)));
      });
      failures = ok ? 0 : failures + 1;
      await this.sleep(mode === 'growing' ? Math.max(1, failures) * 1_000 : ok ? 1_000 : 2_000);
    }
  }

  private onSignal(s: ProcessManageSignal): void {
    if (s.signalType === 'keep-alive') {
      this.keepAlives++;
      this.lastKeepAliveAt = Date.now();
      return this.notify();
    }
    if (this.role === 'master agent') {
      if (s.signalType === 'killMaster') this.stoppedReason = 'killMaster';
      else if (s.actions.length === 0) return;
      else if (s.jobId !== this.jobId) return void this.discarded.push(s);
    }
    this.received.push(s);
    this.notify();
    if (this.opts.autoRespond !== false) void this.respond(s).catch(() => {});
  }

  /** MindIO's answer to a signal (docs/grpc.md#test-client table). */
  private async respond(s: ProcessManageSignal): Promise<void> {
    const sc = this.script;
    switch (s.signalType) {
      case 'preExitProcess':
        await this.reportProcessFault(s.faultRanks.map((r) => ({ rankId: r.rankId, faultType: '1' })));
        return;
      case 'stopTrain': {
        const pause = s.actions.includes('pause_train');
        await this.reportStopComplete(pause ? sc.pauseCode : sc.stopCode, pause ? 'pause' : 'stop', s.faultRanks);
        return;
      }
      case 'globalFault':
        await this.reportRecoverStrategy(s.faultRanks, sc.strategies);
        return;
      case 'hot-switch':
        if (s.actions.includes('hot switch')) await this.reportRecoverStrategy(s.faultRanks, sc.hotSwitchStrategies);
        return;
      case 'saveAndExit':
      case 'changeStrategy': {
        const strategy = s.signalType === 'saveAndExit' ? 'dump' : s.changeStrategy;
        if (!CHANGE_REPORTED.has(strategy)) return;
        const r = sc.recoverStatus(strategy, s);
        await this.reportRecoverStatus(r.code, r.info ?? '', strategy, r.isolateRankIds ?? []);
        return;
      }
      default:
    }
  }

  private async report(rpc: ReportRpc, request: object): Promise<ReportRecord> {
    const index = this.reports.push({ rpc, request, attempts: 0 }) - 1;
    const save = (r: ReportRecord): ReportRecord => ((this.reports[index] = r), this.notify(), r);
    if (this.role === 'master agent') {
      const send = (): Promise<Status> => this.unary<Status>(this.long(), this.services.recover, rpc, request);
      try {
        let reply = await send();
        if (reply.code !== 0) {
          await this.step('Register');
          reply = await send();
          return save({ rpc, request, reply, attempts: 2 });
        }
        return save({ rpc, request, reply, attempts: 1 });
      } catch (err) {
        return save({ rpc, request, error: String(err), attempts: 1 });
      }
    }
    // Go TaskD: a fresh connection per report, 4 immediate attempts on transport errors, code ignored.
    const channel = this.newChannel();
    let error = '';
    try {
      for (let attempt = 1; attempt <= 4; attempt++) {
        try {
          const reply = await this.unary<Status>(channel, this.services.recover, rpc, request);
          return save({ rpc, request, reply, attempts: attempt });
        } catch (err) {
          error = String(err);
        }
      }
      return save({ rpc, request, error, attempts: 4 });
    } finally {
      channel.close();
    }
  }
}
