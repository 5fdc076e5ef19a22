/**
 * Graceful fault tolerance through reset-config (docs/rules.md#detect.graceful-tolerance, `GraceTolerance` of faultCustomization.json): the
 * device-plugin task FSM for one job on one node, [since removed from the upstream device plugin] but still read by
 * agents. Pure: step(state, event, nowMs) with timers in state.
 *
 * idle -> (policy restart_request | restart | reset on a job NPU) preProcess: reset-config ranks
 * `unrecovered`, fault-config `fault-npus`, mark in reset; then by policy:
 * - restart_request: codes gone within 30 s -> recovered; else upgrade to reset;
 * - restart: processes on the faulty NPUs reach 0 (<= 60 s), wait WaitFaultSelfHealingTime (15 s),
 *   healed -> recovered, else upgrade to reset;
 * - reset: processes reach 0, reset the chips (up to 4 tries, 5 s x n back-off) within
 *   WaitDeviceResetTime (150 s), wait 30 s for the NPU, no reset-level fault left -> recovered;
 * - any timeout or failure -> failed (Policy isolate): the job falls back to rescheduling.
 * "recovered"/"failed" are written, then WaitProcessReadCMTime (30 s) for agents to read them.
 * free_reset tasks are not processed. Wiring: feed `deviceFaults` (the job's NPUs on this node,
 * every device-plugin cycle), `processCount` (processes on the faulty NPUs), `resetResult`.
 */
import type { ResetPolicy, TaskDevInfo } from '../../schemas/reset-config/reset-config.ts';
import {
  cancelTimer,
  cancelTimersExcept,
  emit,
  newCtx,
  result,
  startTimer,
  takeTimer,
  type CommandMeta,
  type EffectResult,
  type FsmTimer,
  type StepCtx,
  type StepResult,
  type TimerCommandBody,
  type TimerFired,
} from './recovery-kit.ts';

/** faultCustomization.json `GraceTolerance` (seconds): defaults and allowed ranges (`component/ascend-device-plugin/build/faultCustomization.json`). */
export const GRACE_TOLERANCE_DEFAULTS = { WaitProcessReadCMTime: 30, WaitDeviceResetTime: 150, WaitFaultSelfHealingTime: 15 } as const;
export const GRACE_TOLERANCE_RANGES = {
  WaitProcessReadCMTime: [5, 90],
  WaitDeviceResetTime: [60, 180],
  WaitFaultSelfHealingTime: [1, 30],
} as const satisfies Record<keyof typeof GRACE_TOLERANCE_DEFAULTS, readonly [number, number]>;

export interface GraceTimings {
  readCmMs: number;
  deviceResetMs: number;
  selfHealMs: number;
  errorCodeCleanMs: number;
  processesToZeroMs: number;
  npuReadyMs: number;
  resetRetries: number;
  resetBackoffMs: number;
}

/** Out-of-range or missing values take the defaults ("If GraceTolerance ... exceed the value ranges, the default values are used"). */
export function graceToleranceTimings(raw: Partial<Record<keyof typeof GRACE_TOLERANCE_DEFAULTS, unknown>> = {}): GraceTimings {
  const pick = (k: keyof typeof GRACE_TOLERANCE_DEFAULTS): number => {
    const v = raw[k];
    const [lo, hi] = GRACE_TOLERANCE_RANGES[k];
    return typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi ? v : GRACE_TOLERANCE_DEFAULTS[k];
  };
  return {
    readCmMs: pick('WaitProcessReadCMTime') * 1000,
    deviceResetMs: pick('WaitDeviceResetTime') * 1000,
    selfHealMs: pick('WaitFaultSelfHealingTime') * 1000,
    errorCodeCleanMs: 30_000,
    processesToZeroMs: 60_000,
    npuReadyMs: 30_000,
    resetRetries: 4,
    resetBackoffMs: 5_000,
  };
}

/** docs/rules.md#recover.reset-config-writes: chip fault level -> reset-config policy. */
export function policyOfLevel(level: string): ResetPolicy {
  switch (level) {
    case 'NotHandleFault':
    case 'SubHealthFault':
    case 'NormalNPU':
    case '':
      return 'empty';
    case 'RestartRequest':
      return 'restart_request';
    case 'RestartBusiness':
      return 'restart';
    case 'FreeRestartNPU':
      return 'free_reset';
    case 'RestartNPU':
      return 'reset';
    default:
      return 'isolate';
  }
}

const POLICY_LEVEL: readonly ResetPolicy[] = ['empty', 'ignore', 'restart_request', 'restart', 'free_reset', 'reset', 'isolate'];
const level = (p: ResetPolicy): number => POLICY_LEVEL.indexOf(p);
const HANDLED: readonly ResetPolicy[] = ['restart_request', 'restart', 'reset'];

export interface GraceDevice {
  logicId: number;
  rankId: number;
  policy: ResetPolicy;
  /** Current error codes (empty = no fault). */
  errorCodes: number[];
}

export type GracePhase = 'idle' | 'restartRequest' | 'waitProcessesZero' | 'selfHealing' | 'resetting' | 'waitNpuReady' | 'reporting';

export interface GraceState {
  kind: 'graceTolerance';
  version: 1;
  jobName: string;
  timings: GraceTimings;
  phase: GracePhase;
  /** Policy being applied (after upgrades) and the one the task started with. */
  policy: ResetPolicy | '';
  initialPolicy: ResetPolicy | '';
  afterZero: 'selfHeal' | 'reset';
  task: GraceDevice[];
  latest: GraceDevice[];
  /** Latest observed number of processes on the faulty NPUs (level input; null = never observed). */
  processes: number | null;
  resetAttempt: number;
  nextCommandId: number;
  awaiting: null;
  timers: FsmTimer[];
}

export type GraceEvent =
  | { readonly type: 'deviceFaults'; readonly devices: readonly GraceDevice[] }
  | { readonly type: 'processCount'; readonly count: number }
  | { readonly type: 'resetResult'; readonly ok: boolean }
  | EffectResult
  | TimerFired;

export type GraceCommandBody =
  | { readonly type: 'writeResetConfig'; readonly op: 'graceful'; readonly rankList: readonly TaskDevInfo[] }
  | { readonly type: 'writeFaultConfig'; readonly faultNpus: readonly number[] }
  | { readonly type: 'markInReset'; readonly logicIds: readonly number[]; readonly inReset: boolean }
  | { readonly type: 'resetChips'; readonly logicIds: readonly number[]; readonly attempt: number }
  | TimerCommandBody;
export type GraceCommand = GraceCommandBody & CommandMeta;

export const GRACE_TIMER = {
  errorClean: 'errorClean',
  processesZero: 'processesZero',
  selfHeal: 'selfHeal',
  deviceReset: 'deviceReset',
  resetRetry: 'resetRetry',
  npuReady: 'npuReady',
  readCm: 'readCm',
} as const;

export function initialGraceState(jobName: string, timings: GraceTimings = graceToleranceTimings()): GraceState {
  return {
    kind: 'graceTolerance', version: 1, jobName, timings: { ...timings }, phase: 'idle', policy: '', initialPolicy: '',
    afterZero: 'reset', task: [], latest: [], processes: null, resetAttempt: 0, nextCommandId: 1, awaiting: null, timers: [],
  };
}

type Ctx = StepCtx<GraceState, GraceCommandBody>;
const cmd = (ctx: Ctx, body: GraceCommandBody): number => emit(ctx, body);
const logicIds = (s: GraceState): number[] => s.task.map((d) => d.logicId);
const hex = (codes: readonly number[]): string => codes.map((c) => c.toString(16).toUpperCase()).join(',');

function write(ctx: Ctx, status: 'unrecovered' | 'recovered' | 'failed', policy?: ResetPolicy): void {
  const s = ctx.s;
  const rankList: TaskDevInfo[] = s.task.map((d) => {
    const now = s.latest.find((l) => l.logicId === d.logicId) ?? d;
    return {
      RankId: d.rankId, LogicId: d.logicId, Status: status, Policy: policy ?? (s.policy || d.policy), InitialPolicy: d.policy,
      ErrorCode: [...now.errorCodes], ErrorCodeHex: hex(now.errorCodes),
    };
  });
  cmd(ctx, { type: 'writeResetConfig', op: 'graceful', rankList });
}

const faultGone = (s: GraceState, atLeast: ResetPolicy): boolean =>
  s.task.every((d) => {
    const now = s.latest.find((l) => l.logicId === d.logicId);
    return now === undefined || now.errorCodes.length === 0 || level(now.policy) < level(atLeast);
  });

function enter(ctx: Ctx, phase: GracePhase, timer?: keyof typeof GRACE_TIMER, ms?: number): void {
  cancelTimersExcept(ctx, []);
  ctx.s.phase = phase;
  if (timer !== undefined && ms !== undefined) startTimer(ctx, timer, ms);
  ctx.why.push(`graceful tolerance: ${phase}`);
}

function report(ctx: Ctx, outcome: 'recovered' | 'failed', why: string): void {
  write(ctx, outcome, outcome === 'failed' ? 'isolate' : undefined);
  ctx.why.push(`${outcome}: ${why}`);
  enter(ctx, 'reporting', 'readCm', ctx.s.timings.readCmMs);
}

function waitZero(ctx: Ctx, after: GraceState['afterZero']): void {
  ctx.s.afterZero = after;
  enter(ctx, 'waitProcessesZero', 'processesZero', ctx.s.timings.processesToZeroMs);
  zeroCheck(ctx);
}

function zeroCheck(ctx: Ctx): void {
  const s = ctx.s;
  if (s.phase !== 'waitProcessesZero' || s.processes !== 0) return;
  if (s.afterZero === 'selfHeal') enter(ctx, 'selfHealing', 'selfHeal', s.timings.selfHealMs);
  else resetChips(ctx, 1);
}

function upgradeToReset(ctx: Ctx): void {
  ctx.s.policy = 'reset';
  write(ctx, 'unrecovered', 'reset');
  waitZero(ctx, 'reset');
}

function resetChips(ctx: Ctx, attempt: number): void {
  const s = ctx.s;
  if (s.phase !== 'resetting') enter(ctx, 'resetting', 'deviceReset', s.timings.deviceResetMs);
  s.resetAttempt = attempt;
  cmd(ctx, { type: 'resetChips', logicIds: logicIds(s), attempt });
}

function start(ctx: Ctx, devices: readonly GraceDevice[]): boolean {
  const s = ctx.s;
  const faulty = devices.filter((d) => d.errorCodes.length > 0 && level(d.policy) >= level('restart_request'));
  const top = faulty.reduce<ResetPolicy>((p, d) => (level(d.policy) > level(p) ? d.policy : p), 'empty');
  if (!HANDLED.includes(top)) {
    if (faulty.length > 0) ctx.why.push(`policy ${top}: not handled by graceful tolerance`);
    return false;
  }
  s.task = faulty.filter((d) => HANDLED.includes(d.policy)).map((d) => ({ ...d, errorCodes: [...d.errorCodes] }));
  s.policy = top;
  s.initialPolicy = top;
  write(ctx, 'unrecovered');
  cmd(ctx, { type: 'writeFaultConfig', faultNpus: logicIds(s) });
  cmd(ctx, { type: 'markInReset', logicIds: logicIds(s), inReset: true });
  if (top === 'restart_request') enter(ctx, 'restartRequest', 'errorClean', s.timings.errorCodeCleanMs);
  else waitZero(ctx, top === 'restart' ? 'selfHeal' : 'reset');
  return true;
}

function onTimer(ctx: Ctx, id: string): boolean {
  const s = ctx.s;
  if (!takeTimer(s, id)) return false;
  switch (id) {
    case GRACE_TIMER.errorClean:
      upgradeToReset(ctx);
      return true;
    case GRACE_TIMER.processesZero:
      report(ctx, 'failed', `processes on the faulty NPUs did not stop within ${s.timings.processesToZeroMs / 1000} s`);
      return true;
    case GRACE_TIMER.selfHeal:
      if (faultGone(s, 'restart_request')) report(ctx, 'recovered', 'fault healed by itself');
      else upgradeToReset(ctx);
      return true;
    case GRACE_TIMER.resetRetry:
      resetChips(ctx, s.resetAttempt + 1);
      return true;
    case GRACE_TIMER.deviceReset:
      report(ctx, 'failed', `chips not reset within ${s.timings.deviceResetMs / 1000} s`);
      return true;
    case GRACE_TIMER.npuReady:
      if (faultGone(s, 'reset')) report(ctx, 'recovered', 'reset done, no reset-level fault left');
      else report(ctx, 'failed', 'fault persists after reset');
      return true;
    case GRACE_TIMER.readCm:
      cmd(ctx, { type: 'markInReset', logicIds: logicIds(s), inReset: false });
      Object.assign(s, { phase: 'idle', policy: '', initialPolicy: '', task: [], resetAttempt: 0 } satisfies Partial<GraceState>);
      ctx.why.push('graceful tolerance: task done');
      return true;
    default:
      return false;
  }
}

function dispatch(ctx: Ctx, e: GraceEvent): boolean {
  const s = ctx.s;
  switch (e.type) {
    case 'deviceFaults':
      s.latest = e.devices.map((d) => ({ ...d, errorCodes: [...d.errorCodes] }));
      if (s.phase === 'idle') return start(ctx, e.devices);
      if (s.phase === 'restartRequest' && faultGone(s, 'restart_request')) report(ctx, 'recovered', 'error codes cleared');
      return true;
    case 'processCount':
      s.processes = e.count;
      zeroCheck(ctx);
      return true;
    case 'resetResult':
      if (s.phase !== 'resetting') return false;
      if (e.ok) {
        cancelTimer(ctx, GRACE_TIMER.deviceReset);
        enter(ctx, 'waitNpuReady', 'npuReady', s.timings.npuReadyMs);
      } else if (s.resetAttempt < s.timings.resetRetries) {
        startTimer(ctx, GRACE_TIMER.resetRetry, s.timings.resetBackoffMs * s.resetAttempt);
      } else {
        report(ctx, 'failed', `chip reset failed ${s.resetAttempt} times`);
      }
      return true;
    case 'effectResult':
      return false;
    case 'timerFired':
      return onTimer(ctx, e.id);
  }
}

export function graceStep(state: GraceState, event: GraceEvent, nowMs: number): StepResult<GraceState, GraceCommand> {
  const ctx: Ctx = newCtx(state, nowMs);
  return result(ctx, dispatch(ctx, event));
}

export { graceStep as step };
