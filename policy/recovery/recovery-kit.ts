/**
 * Shared machinery of the pure state machines in policy/ (process recovery docs/rules.md#recover.fsm, hot switch docs/rules.md#hotswitch.fsm,
 * graceful tolerance docs/rules.md#recover.reset-config-writes): timers kept in state as `{id, dueAtMs}`, commands as data with ids, the
 * "await the result of an effect" bookkeeping, and a deterministic ClusterD-shaped uuid.
 *
 * Nothing here reads a clock or schedules anything: `now` is always a parameter (docs/CONVENTIONS.md#pure-decisions).
 */

/** A timer lives in the persisted state; the driver (or a reconciler's requeueAfter) fires it. */
export interface FsmTimer {
  readonly id: string;
  readonly dueAtMs: number;
}

/** Fed back by whoever fires timers (the RxJS driver, or the controller after a requeue). */
export interface TimerFired {
  readonly type: 'timerFired';
  readonly id: string;
}

/**
 * Fed back by the executor for each command with `awaitResult: true` (signal sent or not after its
 * retries, ConfigMap/PodGroup write done or failed). Results of commands nobody waits for are ignored.
 */
export interface EffectResult {
  readonly type: 'effectResult';
  readonly commandId: number;
  readonly ok: boolean;
  readonly error?: string;
}

/** Informational timer commands; the authoritative timers are `state.timers`. */
export type TimerCommandBody =
  | { readonly type: 'startTimer'; readonly timer: FsmTimer }
  | { readonly type: 'cancelTimer'; readonly timerId: string };

export interface CommandMeta {
  /** Unique per FSM instance (monotonic); effect results refer to it. */
  readonly id: number;
  /** The FSM waits for an `effectResult` with this id before it moves on. */
  readonly awaitResult: boolean;
}

/** What every transition function returns. */
export interface StepResult<S, C> {
  readonly state: S;
  readonly commands: readonly C[];
  /** Human-readable decision chain, for the caller to log (policy/ never logs). */
  readonly reasons: readonly string[];
  /** False when the FSM refused the event (ClusterD "order mixed", code 401) or found it stale. */
  readonly accepted: boolean;
}

/** The part of the state the helpers below manipulate. */
export interface KitState<N> {
  nextCommandId: number;
  timers: FsmTimer[];
  awaiting: Awaiting<N> | null;
}

/** The FSM waits for all `ids` to succeed (then `ok`), or for the first failure (then `fail`). */
export interface Awaiting<N> {
  ids: number[];
  ok: N;
  /** null: a failure is a handler error, which resets the FSM (ClusterD mechanics). */
  fail: N | null;
}

/** A mutable draft of one step: the FSM works on a structured clone of the input state. */
export interface StepCtx<S, B> {
  readonly s: S;
  readonly now: number;
  readonly out: (B & CommandMeta)[];
  readonly why: string[];
}

export function newCtx<S, B>(state: S, now: number): StepCtx<S, B> {
  return { s: structuredClone(state), now, out: [], why: [] };
}

export function result<S, B>(ctx: StepCtx<S, B>, accepted: boolean): StepResult<S, B & CommandMeta> {
  return { state: ctx.s, commands: ctx.out, reasons: ctx.why, accepted };
}

/** Appends a command and returns its id. */
export function emit<S extends KitState<unknown>, B>(ctx: StepCtx<S, B>, body: B, awaitResult = false): number {
  const id = ctx.s.nextCommandId;
  ctx.s.nextCommandId = id + 1;
  ctx.out.push({ ...body, id, awaitResult });
  return id;
}

export function awaitAll<N, S extends KitState<N>, B>(ctx: StepCtx<S, B>, ids: number[], ok: N, fail: N | null): void {
  ctx.s.awaiting = { ids: [...ids], ok, fail };
}

/**
 * Applies an effect result to `awaiting`. Returns the continuation to run (null = handler error),
 * 'pending' while more acks are due, or `undefined` for a command nobody waits for.
 */
export function settle<N>(s: KitState<N>, ev: EffectResult): { next: N | null } | 'pending' | undefined {
  const w = s.awaiting;
  if (w === null || !w.ids.includes(ev.commandId)) return undefined;
  if (!ev.ok) {
    s.awaiting = null;
    return { next: w.fail };
  }
  w.ids = w.ids.filter((i) => i !== ev.commandId);
  if (w.ids.length > 0) return 'pending';
  s.awaiting = null;
  return { next: w.ok };
}

/** Starts (or restarts) timer `id`, due `afterMs` from now. B must include TimerCommandBody. */
export function startTimer<S extends KitState<unknown>, B>(ctx: StepCtx<S, B>, id: string, afterMs: number): void {
  const timer = { id, dueAtMs: ctx.now + Math.max(0, afterMs) };
  ctx.s.timers = [...ctx.s.timers.filter((t) => t.id !== id), timer];
  emit(ctx, { type: 'startTimer', timer } satisfies TimerCommandBody as B);
}

export function cancelTimer<S extends KitState<unknown>, B>(ctx: StepCtx<S, B>, id: string): void {
  if (!ctx.s.timers.some((t) => t.id === id)) return;
  ctx.s.timers = ctx.s.timers.filter((t) => t.id !== id);
  emit(ctx, { type: 'cancelTimer', timerId: id } satisfies TimerCommandBody as B);
}

/** Cancels every timer except those listed. */
export function cancelTimersExcept<S extends KitState<unknown>, B>(ctx: StepCtx<S, B>, keep: readonly string[]): void {
  for (const t of [...ctx.s.timers]) if (!keep.includes(t.id)) cancelTimer(ctx, t.id);
}

/** Removes a fired timer; false when it is not (or no longer) in the state, i.e. stale. */
export function takeTimer(s: { timers: FsmTimer[] }, id: string): boolean {
  const had = s.timers.some((t) => t.id === id);
  s.timers = s.timers.filter((t) => t.id !== id);
  return had;
}

/** Earliest due time, for a reconciler's requeueAfter or the driver. */
export function nextTimerDue(timers: readonly FsmTimer[]): number | undefined {
  let best: number | undefined;
  for (const t of timers) if (best === undefined || t.dueAtMs < best) best = t.dueAtMs;
  return best;
}

/** Timers due at `now`, earliest first (ties keep state order). */
export function dueTimers(timers: readonly FsmTimer[], now: number): FsmTimer[] {
  return timers.filter((t) => t.dueAtMs <= now).sort((a, b) => a.dueAtMs - b.dueAtMs);
}

function fnv1a(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * ClusterD's uuid shape (docs/grpc.md#recover-vocabulary): upper-case hex of the Unix-nanosecond time, `-`, 32 lower-case
 * hex digits. The random part is derived from (seed, seq, now) so the FSM stays deterministic.
 */
export function makeUuid(nowMs: number, seed: string, seq: number): string {
  const ns = (BigInt(Math.max(0, Math.floor(nowMs))) * 1_000_000n).toString(16).toUpperCase();
  const text = `${seed}|${seq}|${nowMs}`;
  const tail = [0, 0x9e3779b9, 0x7f4a7c15, 0x3c6ef372].map((s) => fnv1a(text, s).toString(16).padStart(8, '0')).join('');
  return `${ns}-${tail}`;
}
