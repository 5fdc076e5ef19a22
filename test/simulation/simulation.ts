/**
 * Runs one seeded history against the assembled controller and checks the invariants after every
 * step (docs/simulation.md):
 *
 * (a) no job restarted twice for one fault: no pod of a job is deleted by the controller more
 *     often than the job met fault onsets (a restart-level fault appearing on a node holding one of
 *     its pods, or a pod placed on such a node or on chips out of service in cluster-info);
 * (b) no fault forgotten: every chip fault in device-info is in cluster-info (its code in the node's
 *     `-Fault` list), and a chip fault in cluster-info is either in device-info or recovered less than
 *     the flap-damping hold (plus one quiet period) ago, or is manually separated (held until released);
 * (c) no write of unchanged content: no update or patch of the controller left its object as it was;
 * (d) cluster-info equals a from-scratch render: at the end, a fresh Manager on the same store (new
 *     process state) publishes the same cluster-info, entries and bytes, UpdateTime aside.
 */
import { paths } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { isNormalLevel } from '../../policy/faults/fault-level.ts';
import { DEFAULT_FLAP_DAMPING } from '../../policy/faults/flap-damping.ts';
import { deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { CLUSTER_INFO_NAMESPACE, type DeviceInfoEntry } from '../../schemas/cluster-info/cluster-info.ts';
import { WRITE_VERBS } from '../support/sim/memory-apiserver.ts';
import { prng } from '../../tools/prng.ts';
import { describeStep, generateHistory, type History, type Step } from './history.ts';
import { JOB_NS, World } from './world.ts';
import { deviceEntriesOf } from '../support/cluster-info-read.ts';

/** Virtual time after each step before the invariants are checked (the controller's reaction). */
export const QUIET_MS = 6_000;
const HOLD_MS = DEFAULT_FLAP_DAMPING.holdMs;

/** Virtual time the informers take at most to come back after an outage (10 s backoff, 20 % jitter). */
const RECONNECT_MS = 12_000;

export class InvariantError extends Error {}

export interface RunResult { readonly history: History; readonly calls: string[]; readonly restarts: number; readonly onsets: number }

const FAULT_KEY = 'huawei.com/Ascend910-Fault';

/** Every cluster-info-device-N entry, parsed as Volcano would. */
function deviceEntries(world: World): Record<string, DeviceInfoEntry> {
  const shards = (world.server.store.snapshot(configMapType(world), CLUSTER_INFO_NAMESPACE) ?? []).map((e) => e.obj as ConfigMap);
  try {
    return deviceEntriesOf(shards);
  } catch (e) {
    throw new InvariantError(e instanceof Error ? e.message : String(e));
  }
}

const configMapType = (world: World): Parameters<World['server']['store']['snapshot']>[0] =>
  world.server.target('GET', paths.configMaps(CLUSTER_INFO_NAMESPACE), 'collection').type;

/**
 * cluster-info's content, one row per ConfigMap entry (a node's device entry, a switch or node-cm
 * entry), without UpdateTime: it is rewritten with newer times by design (cluster-info.reconciler.ts).
 */
function clusterInfoContent(world: World): Map<string, string> {
  const rows = new Map<string, string>();
  for (const e of world.server.store.snapshot(configMapType(world), CLUSTER_INFO_NAMESPACE) ?? []) {
    const cm = e.obj as ConfigMap;
    const name = cm.metadata!.name!;
    if (!name.startsWith('cluster-info-')) continue;
    const raw = cm.data?.[name] ?? '';
    let parsed: Record<string, unknown> = {};
    try { parsed = raw === '' ? {} : JSON.parse(raw) as Record<string, unknown>; } catch { rows.set(name, raw); continue; }
    if (Object.keys(parsed).length === 0) rows.set(name, '(empty)');
    for (const [k, v] of Object.entries(parsed)) {
      const { UpdateTime: _u, ...rest } = (typeof v === 'object' && v !== null ? v : { v }) as Record<string, unknown>;
      rows.set(`${name}/${k}`, JSON.stringify(rest));
    }
  }
  return rows;
}

/** The cluster-info ConfigMaps' data as written, UpdateTime values blanked. */
function clusterInfoBytes(world: World): string {
  const rows: string[] = [];
  for (const e of world.server.store.snapshot(configMapType(world), CLUSTER_INFO_NAMESPACE) ?? []) {
    const name = e.obj.metadata!.name!;
    if (name.startsWith('cluster-info-')) rows.push(`${name}=${JSON.stringify((e.obj as ConfigMap).data ?? {}).replace(/(\\*"UpdateTime\\*":)\d+/g, '$1_')}`);
  }
  return rows.join('\n');
}

function diffContent(a: Map<string, string>, b: Map<string, string>): string[] {
  const out: string[] = [];
  for (const k of new Set([...a.keys(), ...b.keys()])) {
    if (a.get(k) !== b.get(k)) out.push(`${k}:\n    long-running: ${a.get(k) ?? '(absent)'}\n    fresh:        ${b.get(k) ?? '(absent)'}`);
  }
  return out;
}

interface Tracker {
  /** Per job: fault onsets met. */
  readonly onsets: Map<string, number>;
  /** node/chip -> virtual ms of its last recovery. */
  readonly recovered: Map<string, number>;
  /** Deletions of the controller already grouped. */
  seenWrites: number;
}

/** The job a pod path belongs to (`<job>-worker-<rank>`), if any. */
const jobOfPod = (path: string): string | undefined => /\/namespaces\/[^/]+\/pods\/(.+)-worker-\d+$/.exec(path)?.[1];

function countOnsets(world: World, t: Tracker, nodes: readonly string[]): void {
  for (const [pod, node] of world.placement) {
    if (!nodes.includes(node)) continue;
    const job = pod.replace(/-worker-\d+$/, '');
    t.onsets.set(job, (t.onsets.get(job) ?? 0) + 1);
  }
}

const restartLevelAt = (world: World, node: string): boolean => [...world.faults.get(node)!.values()].some((f) => !isNormalLevel(f.level));

export function checkInvariants(world: World, t: Tracker): void {
  const now = world.clock.now();
  // (a) restarts per job against onsets.
  const deletes = new Map<string, Map<string, number[]>>();
  for (const w of world.controller.writes) {
    if (w.verb !== 'delete') continue;
    const job = jobOfPod(w.path);
    if (job === undefined) continue;
    const byPod = deletes.get(job) ?? new Map<string, number[]>();
    deletes.set(job, byPod);
    const pod = w.path.slice(w.path.lastIndexOf('/') + 1);
    byPod.set(pod, [...(byPod.get(pod) ?? []), w.t]);
  }
  for (const [job, byPod] of deletes) {
    // A restart ends each incarnation of the pods it is for once (pod-level: one pod, job-level: all),
    // so the restarts a job went through are the most times one of its pods was deleted. A delete
    // retried after a failure, or finished by a replay after a restart, is still one.
    const [pod, ts] = [...byPod].reduce((a, b) => (b[1].length > a[1].length ? b : a));
    const onsets = t.onsets.get(job) ?? 0;
    if (ts.length > onsets) throw new InvariantError(`(a) ${job} restarted ${ts.length} times for ${onsets} fault onsets (${pod} deleted at ${ts.map((x) => x - world.startMs).join(', ')} ms)`);
  }
  // (b) device-info faults in cluster-info; recovered ones gone after the hold.
  const entries = deviceEntries(world);
  for (const node of world.nodes) {
    const entry = entries[deviceInfoCmName(node)];
    const listed = entry?.DeviceList[FAULT_KEY] ?? '';
    const inCi = new Map<string, string>();
    const separated = new Set<string>();
    for (const f of (listed === '' ? [] : JSON.parse(listed)) as Array<{ npu_name: string; fault_code: string; fault_level: string }>) {
      inCi.set(f.npu_name, f.fault_code);
      if (f.fault_level === 'ManuallySeparateNPU') separated.add(f.npu_name);
    }
    for (const [chip, f] of world.faults.get(node)!) {
      if (!(inCi.get(chip) ?? '').split(',').includes(f.code)) throw new InvariantError(`(b) ${node}/${chip} ${f.level} ${f.code} is in device-info but not in cluster-info (listed: ${listed || 'none'})`);
    }
    for (const chip of inCi.keys()) {
      // Manual separation (a code repeating within its window, ClusterD's clusterd-config-cm policy)
      // holds the chip until an operator releases it: not a forgotten recovery.
      if (world.faults.get(node)!.has(chip) || separated.has(chip)) continue;
      const at = t.recovered.get(`${node}/${chip}`) ?? -Infinity;
      if (now - at > HOLD_MS + QUIET_MS) throw new InvariantError(`(b) ${node}/${chip} recovered ${now - at} ms ago, still in cluster-info: ${listed}`);
    }
  }
  // (c) no write of unchanged content.
  const same = world.controller.writes.slice(t.seenWrites).filter((w) => w.unchanged);
  t.seenWrites = world.controller.writes.length;
  if (same.length > 0) throw new InvariantError(`(c) writes that changed nothing: ${same.map((w) => `${w.verb} ${w.path}`).join('; ')}`);
}

async function applyStep(world: World, t: Tracker, step: Step): Promise<void> {
  const setFault = async (node: string, chip: string, level: NpuFaultLevel, code: string): Promise<void> => {
    const before = restartLevelAt(world, node);
    const cur = world.faults.get(node)!.get(chip);
    // The device plugin keeps an ongoing fault's time; a fault reported again with a new time is a
    // known difference between a long-running and a fresh controller (docs/simulation.md).
    world.faults.get(node)!.set(chip, { code, level, sinceMs: cur?.code === code ? cur.sinceMs : world.clock.now() });
    // A new restart-level fault on a node: an onset for each job with a pod there.
    if (!isNormalLevel(level) || before) countOnsets(world, t, [node]);
    await world.writeDeviceInfo(node);
  };
  const recover = async (node: string, chip: string): Promise<void> => {
    if (!world.faults.get(node)!.delete(chip)) return;
    t.recovered.set(`${node}/${chip}`, world.clock.now());
    await world.writeDeviceInfo(node);
  };
  switch (step.kind) {
    case 'fault': await setFault(step.node, step.chip, step.level, step.code); break;
    case 'recover': await recover(step.node, step.chip); break;
    case 'flap':
      for (let i = 0; i < step.times; i++) {
        await setFault(step.node, step.chip, step.level, step.code);
        await world.advance(step.periodMs / 2);
        await recover(step.node, step.chip);
        await world.advance(step.periodMs / 2);
      }
      break;
    case 'storm': for (const n of step.nodes) await setFault(n, step.chip, step.level, step.code); break;
    case 'restart': await world.stopManager(); await world.startManager(); break;
    case 'crash':
      await setFault(step.node, step.chip, step.level, step.code);
      await world.advance(step.afterMs, 100);
      await world.stopManager();
      await world.startManager();
      break;
    case 'conflicts': {
      const path = step.what === 'configmaps' ? /\/configmaps\// : step.what === 'pods' ? /\/pods\// : undefined;
      // A 409 answers a write made on a stale resourceVersion (update, patch) or a create of an
      // existing name; a DELETE answers 409 only when its preconditions fail, which the controller
      // rightly reads as "replaced", so an injected one would be a lie about the pod.
      const verbs = step.status === 409 ? WRITE_VERBS.filter((v) => v !== 'delete') : WRITE_VERBS;
      world.server.failNext(step.n, { status: step.status }, { verbs, client: world.controller, ...(path === undefined ? {} : { path }) });
      break;
    }
    case 'lose-watches':
      if (step.how === 'drop') world.server.dropWatches();
      else if (step.how === 'expire') { world.server.compact(); world.server.expireWatches(); } else world.server.compact();
      break;
    case 'outage': {
      world.controller.sever();
      const recovering = world.faults.get(step.node)!.has(step.chip);
      if (recovering) await recover(step.node, step.chip);
      else await setFault(step.node, step.chip, step.level, step.code);
      await world.advance(step.ms);
      if (step.compact) world.server.compact();
      world.controller.restore();
      // A flap hold runs from when the controller can learn of the recovery.
      if (recovering) t.recovered.set(`${step.node}/${step.chip}`, world.clock.now());
      // The informers come back within their retry backoff (runtime/reflector.ts: at most 10 s, plus jitter).
      await world.advance(RECONNECT_MS);
      break;
    }
    case 'wait': await world.advance(step.ms); break;
  }
}

/** Runs `history`; throws InvariantError (with the seed and the steps so far) on a violation. */
export async function runHistory(history: History): Promise<RunResult> {
  const world = new World(history.world);
  const t: Tracker = { onsets: new Map(), recovered: new Map(), seenWrites: 0 };
  const done: string[] = [];
  // The controller's retry backoff jitter (runtime/backoff.ts) draws from Math.random: seeded for the
  // run, so a history replays exactly.
  const realRandom = Math.random;
  Math.random = prng(history.seed ^ 0x1b873593);
  // Pods placed by the stand-in on a node with a restart-level fault, or chips out of service in
  // cluster-info (all free nodes were faulty): an onset for their job.
  world.onPlaced = (pod, node) => { if (restartLevelAt(world, node) || world.schedulerUnhealthy(node).length > 0) { const job = pod.replace(/-worker-\d+$/, ''); t.onsets.set(job, (t.onsets.get(job) ?? 0) + 1); } };
  try {
    await world.setUp();
    await world.startManager();
    await world.writeLateDeviceInfo();
    await world.advance(QUIET_MS);
    checkInvariants(world, t);
    for (const step of history.steps) {
      done.push(describeStep(step));
      await applyStep(world, t, step);
      await world.advance(QUIET_MS);
      checkInvariants(world, t);
    }
    // (d): past every hold, a fresh Manager (new process state) on the same store publishes the same.
    done.push('end: past the holds, then a fresh controller');
    world.server.clearFaults();
    await world.advance(HOLD_MS + QUIET_MS);
    checkInvariants(world, t);
    const published = clusterInfoContent(world);
    const publishedBytes = clusterInfoBytes(world);
    await world.stopManager();
    await world.startManager();
    await world.advance(QUIET_MS);
    const fresh = clusterInfoContent(world);
    const diff = diffContent(published, fresh);
    if (diff.length > 0) throw new InvariantError(`(d) a fresh controller publishes other cluster-info:\n  ${diff.join('\n  ')}`);
    const freshBytes = clusterInfoBytes(world);
    if (freshBytes !== publishedBytes) {
      let at = 0;
      while (publishedBytes[at] === freshBytes[at]) at++;
      throw new InvariantError(`(d) a fresh controller publishes the same entries in other bytes (order) from offset ${at}:\n    long-running: ...${publishedBytes.slice(Math.max(0, at - 80), at + 120)}\n    fresh:        ...${freshBytes.slice(Math.max(0, at - 80), at + 120)}`);
    }
    checkInvariants(world, t);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new InvariantError(`seed ${history.seed}: ${msg}\nsteps:\n${done.map((s, i) => `  ${i + 1}. ${s}`).join('\n')}\nreplay: SIM_SEED=${history.seed} SIM_STEPS=${history.maxSteps} make sim`);
  } finally {
    await world.stopManager().catch(() => undefined);
    world.server.close();
    Math.random = realRandom;
  }
  const calls = world.server.calls.map((c) => `${c.client} ${c.verb} ${c.path} ${c.status}`);
  let restarts = 0;
  for (const w of world.controller.writes) if (w.verb === 'delete' && w.path.includes(`/namespaces/${JOB_NS}/pods/`)) restarts++;
  return { history, calls, restarts, onsets: [...t.onsets.values()].reduce((a, b) => a + b, 0) };
}

export { generateHistory };
