/**
 * Runs one scenario on both sides at once: the same requests go to ClusterD's cluster and to
 * clusterd-ts's cluster at the same moment, each controller alone on its own control plane. After
 * every step both sides are collected until neither changes any more (ClusterD works on a 1 s
 * ticker), normalised (normalise.ts) and compared field by field.
 */
import { collect, collectUids, snapshotText, type Fields, type Snapshot } from './collect.ts';
import { compare, type Difference } from './diff.ts';
import { normalise, type TimeWindow } from './normalise.ts';
import { send, startSides, type Side, type SideName, type SideOptions } from './sides.ts';
import type { KubeClient } from '../../runtime/kube-client.ts';
import { World, inputTimes, type NodeSpec, type Write } from './world.ts';

export type Step = (
  | { readonly name: string; readonly writes: (w: World, nowMs: number) => Write[] }
  | { readonly name: string; readonly restart: true }
  /**
   * Runs on both sides at once, each against its own cluster and controller (e.g. a gRPC client):
   * for inputs that are not apiserver requests. What it records in `ctx.records` is compared.
   */
  | { readonly name: string; readonly perSide: (ctx: SideContext) => Promise<void> }
  /**
   * Nothing is written for `ms` (or until `ms` after the named step's writes went out, or after
   * both controllers of the named restart step served again); the
   * ConfigMaps each side rewrote meanwhile are compared too (ClusterD's 5 s rewrites are no-ops).
   */
  | { readonly name: string; readonly waitSince?: string; readonly ms: number }
) & {
  /**
   * Compare no sooner than this many ms after the step (default DEFAULT_SETTLE.minMs): for steps
   * whose effect comes in two parts (ClusterD deletes a recovered public fault 5 s after it was
   * added), so the quiet gap between the parts is not taken for the end.
   */
  readonly settleMinMs?: number;
};

/** One side as a `perSide` step sees it. */
/** A step's settleMinMs past both sides' 10 s scheduling-exception check (a step that changes a job's pending state). */
export const EXCEPTION_CHECK_MS = 12_000;

export interface SideContext {
  readonly side: SideName;
  readonly admin: KubeClient;
  /** host:port of the controller's gRPC server (ClusterD: $POD_IP:8899). */
  readonly grpcTarget: string;
  /**
   * Pseudo-objects the scenario records on this side (a gRPC exchange, call results), read at every
   * collection, already normalised by the scenario; compared like the objects the controllers write.
   */
  readonly records: Map<string, () => Fields>;
  /** Scenario state across steps (clients started in one step and read in a later one). */
  readonly state: Map<string, unknown>;
  /** Run (last first) when the scenario ends, failed or not. */
  readonly cleanups: Array<() => Promise<void> | void>;
}

export interface Scenario {
  readonly name: string;
  readonly nodes: readonly NodeSpec[];
  /** Written before the controllers start (what a running cluster already has). */
  readonly setup: (w: World, nowMs: number) => Write[];
  readonly steps: readonly Step[];
  /** clusterd-ts flags for this scenario (default: none, production defaults). */
  readonly ourFlags?: readonly string[];
  /** ClusterD's relation-fault files for both sides (SideOptions.relationFiles): shorter windows. */
  readonly relationFiles?: Readonly<Record<string, string>>;
}

export interface StepResult {
  readonly step: string;
  readonly differences: Difference[];
  readonly settleMs: number;
  /** false: a side was still changing when the settle limit ran out. */
  readonly quiet: boolean;
}

export interface ScenarioResult {
  readonly scenario: string;
  readonly steps: StepResult[];
  readonly timings: Record<string, number>;
  readonly logs: Record<string, string>;
}

export interface SettleOptions {
  /** Both sides unchanged for this long = settled. */
  readonly quietMs: number;
  /** Never settle sooner (ClusterD's ticker is 1 s; its writer waits for it). */
  readonly minMs: number;
  readonly maxMs: number;
}

export const DEFAULT_SETTLE: SettleOptions = { quietMs: 3000, minMs: 2000, maxMs: 25_000 };
/**
 * The start is compared no sooner than this: ClusterD creates cluster-info-node-cm with its first
 * cycle report, 5-6 s after its last start-up write (report.go cycleReport), and both sides write
 * scheduling-exception-report at their collector's first check, 10 s after their own start; before
 * that a quiet gap of 3 s would end the settle with one of them on one side only. Slack for a
 * loaded machine, where our start was seen to take 11 s.
 */
export const START_SETTLE_MIN_MS = 15_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function configMapVersions(s: Side): Promise<Map<string, string>> {
  const list = await s.admin.list<{ metadata?: { namespace?: string; name?: string; resourceVersion?: string } }>('/api/v1/configmaps');
  return new Map(list.items.map((c) => [`${c.metadata?.namespace}/${c.metadata?.name}`, c.metadata?.resourceVersion ?? '']));
}

/** Pseudo-object `Writes while waiting` with one field per ConfigMap whose resourceVersion moved. */
function rewritten(before: Map<string, string>, after: Map<string, string>): Snapshot {
  const f: Record<string, string> = {};
  for (const [k, rv] of after) if (before.get(k) !== rv) f[`ConfigMap ${k}`] = before.has(k) ? 'updated' : 'created';
  for (const k of before.keys()) if (!after.has(k)) f[`ConfigMap ${k}`] = 'deleted';
  return new Map(Object.keys(f).length === 0 ? [] : [['Writes while waiting', f]]);
}

export async function runScenario(scenario: Scenario, opts: Partial<SideOptions> & { settle?: SettleOptions; log?: (line: string) => void } = {}): Promise<ScenarioResult> {
  const log = opts.log ?? (() => undefined);
  const settle = opts.settle ?? DEFAULT_SETTLE;
  const t0 = Date.now();
  const timings: Record<string, number> = {};
  const world = new World(scenario.nodes);
  const inputs = new Set<string>();
  const window = (): TimeWindow => ({ fromMs: t0, toMs: Date.now(), inputs });
  const sides = await startSides({ workRoot: opts.workRoot ?? (await import('node:os')).tmpdir(), ourFlags: scenario.ourFlags ?? opts.ourFlags, ...(scenario.relationFiles === undefined ? {} : { relationFiles: scenario.relationFiles }) });
  timings.control_planes_ms = Date.now() - t0;
  const both: [Side, Side] = [sides.clusterd, sides.ours];
  const context = (s: Side): SideContext => ({ side: s.name, admin: s.admin, get grpcTarget() { return s.grpcTarget(); }, records: new Map(), state: new Map(), cleanups: [] });
  const contexts: [SideContext, SideContext] = [context(both[0]), context(both[1])];
  const withRecords = (snap: Snapshot, i: 0 | 1): Snapshot => {
    for (const [k, read] of contexts[i].records) snap.set(k, { ...read() });
    return snap;
  };
  const results: StepResult[] = [];
  const sentAt = new Map<string, number>();

  const apply = async (writes: readonly Write[]): Promise<void> => {
    inputTimes(writes, inputs);
    for (const w of writes) await Promise.all(both.map((s) => send(s.admin, w)));
  };

  /** Polls both sides until neither changed for quietMs; returns the normalised snapshots. */
  const settleBoth = async (minMs: number): Promise<{ snaps: [Snapshot, Snapshot]; ms: number; quiet: boolean }> => {
    const start = Date.now();
    const maxMs = Math.max(settle.maxMs, minMs + settle.quietMs);
    let last = ['', ''];
    let lastChange = start;
    for (;;) {
      const snaps = await Promise.all(both.map(async (s, i) => normalise(withRecords(await collect(s.admin), i as 0 | 1), window(), await collectUids(s.admin)))) as [Snapshot, Snapshot];
      const texts = snaps.map(snapshotText);
      const now = Date.now();
      if (texts[0] !== last[0] || texts[1] !== last[1]) { last = texts; lastChange = now; }
      const elapsed = now - start;
      if (elapsed >= minMs && now - lastChange >= settle.quietMs) return { snaps, ms: lastChange - start, quiet: true };
      if (elapsed >= maxMs) return { snaps, ms: elapsed, quiet: false };
      await sleep(500);
    }
  };

  /** ConfigMaps each side wrote while nothing happened (a wait step): a no-op update is no write. */
  let quietWrites: [Snapshot, Snapshot] | undefined;
  const check = async (step: string, minMs: number, writes?: [Snapshot, Snapshot]): Promise<void> => {
    const { snaps, ms, quiet } = await settleBoth(minMs);
    if (writes !== undefined) for (const i of [0, 1]) for (const [k, v] of writes[i]!) snaps[i]!.set(k, v);
    const differences = compare(snaps[0], snaps[1]);
    results.push({ step, differences, settleMs: ms, quiet });
    log(`[${scenario.name}] ${step}: ${differences.length} difference(s), settled after ${ms} ms${quiet ? '' : ' (still changing)'}`);
  };

  try {
    await apply(scenario.setup(world, Date.now()));
    const [cd, ours] = await Promise.all(both.map((s) => s.startController()));
    timings.clusterd_start_ms = cd!;
    timings.ours_start_ms = ours!;
    // Both sides write scheduling-exception-report at their collector's first check, 10 s after
    // their own start; settling on 3 quiet seconds could compare between the two writes.
    await check('start', Math.max(settle.minMs, START_SETTLE_MIN_MS));
    for (const step of scenario.steps) {
      const ts = Date.now();
      if ('writes' in step) {
        const now = Date.now();
        sentAt.set(step.name, now);
        await apply(step.writes(world, now));
      } else if ('perSide' in step) {
        sentAt.set(step.name, Date.now());
        await Promise.all(contexts.map((c) => step.perSide(c)));
      } else if ('restart' in step) {
        const [a, b] = await Promise.all(both.map((s) => s.restartController()));
        timings[`clusterd_restart_ms`] = a!;
        timings[`ours_restart_ms`] = b!;
        sentAt.set(step.name, Date.now()); // a wait may count from the moment both serve again
      } else {
        const since = step.waitSince === undefined ? Date.now() : sentAt.get(step.waitSince);
        if (since === undefined) throw new Error(`step ${step.name}: no step ${step.waitSince} before it`);
        const before = await Promise.all(both.map((s) => configMapVersions(s)));
        await sleep(Math.max(0, since + step.ms - Date.now()));
        const after = await Promise.all(both.map((s) => configMapVersions(s)));
        quietWrites = [rewritten(before[0]!, after[0]!), rewritten(before[1]!, after[1]!)];
      }
      await check(step.name, step.settleMinMs ?? settle.minMs, quietWrites);
      quietWrites = undefined;
      timings[`step ${step.name} ms`] = Date.now() - ts;
    }
    timings.total_ms = Date.now() - t0;
    return { scenario: scenario.name, steps: results, timings, logs: { clusterd: sides.clusterd.logTail(), ours: sides.ours.logTail() } };
  } catch (e) {
    log(`[${scenario.name}] failed: ${String(e)}\n--- clusterd\n${sides.clusterd.logTail()}\n--- ours\n${sides.ours.logTail()}`);
    throw e;
  } finally {
    for (const c of contexts) for (const f of c.cleanups.splice(0).reverse()) await Promise.resolve(f()).catch(() => undefined);
    await Promise.all(both.map((s) => s.stop().catch(() => undefined)));
  }
}
