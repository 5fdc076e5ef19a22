import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { Outcome, ReconcileContext } from '../runtime/reconciler.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { chipFault } from '../test/support/job-fixtures.ts';
import { faultKey, type FaultRecord } from '../vocabulary/fault-types.ts';
import { journalCmName, parseJobState, type PendingDecision } from '../schemas/job-state/job-state.ts';
import type { JobActionExecutor, JobTarget } from '../actions/job-action-executor.ts';
import { FakeConfigMaps, FakeStore, ownerJobsOf, podGroupOf, podOf } from '../test/support/job-fakes.ts';
import { JobIndex } from '../state/job-index.ts';
import { JobStateStore } from '../actions/job-state.action.ts';
import { DecisionHistory } from '../actions/decision-history.action.ts';
import { DecisionReporter } from '../actions/job-report.action.ts';
import { jobDecisionsReconciler, VIEW_AWAIT_REQUEUE_MS } from './job-decisions.reconciler.ts';
import type { Sources } from '../controllers/sources/sources.ts';
import { FlapDamper } from '../state/flap-damper.ts';
import type { KubeObject } from '../runtime/kube-client.ts';
import { realClock } from '../runtime/clock.ts';
import type { BreakerGate } from '../policy/jobs/breaker-gate.ts';

const NS = 'team-a';
const UID = 'u1';
const KEY = `${NS}/llama-${UID}`;
const UID2 = 'u2';
const KEY2 = `${NS}/mistral-${UID2}`;
/** The job's record as written to the journal (actions/job-state.action.ts). */
const persisted = (cms: FakeConfigMaps) => parseJobState(cms.get('mindx-dl', journalCmName(0))?.data?.[UID]);
const NPUS = ['Ascend910-0', 'Ascend910-1'];

function setup(opts: { failFirstRun?: boolean; labels?: Record<string, string>; hiddenUntilMs?: number; visibleOn3?: boolean; recording?: Promise<boolean>; scheduledAtMs?: number; breaker?: BreakerGate; secondJob?: boolean; journalStopped?: boolean; awaiting?: Set<string> } = {}) {
  const pods = new FakeStore<KubeObject>();
  const groups = new FakeStore<KubeObject>();
  groups.put(podGroupOf(NS, 'llama', UID, opts.labels ?? { 'fault-scheduling': 'force' }));
  for (let r = 0; r < 4; r++) pods.put(podOf(NS, 'llama', UID, r, `node-${r}`, NPUS));
  if (opts.secondJob === true) {
    groups.put(podGroupOf(NS, 'mistral', UID2, opts.labels ?? { 'fault-scheduling': 'force' }));
    for (let r = 0; r < 2; r++) pods.put(podOf(NS, 'mistral', UID2, r, `node-${4 + r}`, NPUS));
  }
  const index = new JobIndex({ pods, podGroups: groups, ...ownerJobsOf(groups) } as unknown as Pick<Sources, 'pods' | 'podGroups' | 'vcJobs' | 'ascendJobs'>);
  index.rebuild();
  const cms = new FakeConfigMaps();
  /** Job keys queued by the journal (a write-ahead written, a put failed). */
  const queued: string[] = [];
  const writer = new ConfigMapWriter(cms.client());
  const states: JobStateStore = new JobStateStore({
    cached: (name) => cms.get('mindx-dl', name), cachedNames: () => [...cms.objects.values()].map((c) => c.metadata?.name ?? ''),
    writer, client: cms.client(), dryRun: false, lazyMs: 60_000, now: realClock.now, wake: (ms) => { if (opts.journalStopped !== true) setTimeout(() => void states.commitDue(), ms); },
    expediteHold: () => undefined,
    // As the controller wires it: the job's next pass carries out its durable write-ahead.
    onWritten: (key) => queued.push(key), onPutFailed: (key) => queued.push(key),
  });
  const faults: Record<string, FaultRecord[]> = { 'node-2': [chipFault('node-2', 'Ascend910-0', 'SeparateNPU', '80E18402')], 'node-5': [chipFault('node-5', 'Ascend910-1', 'SeparateNPU', '80E18402')] };
  const visible: Record<string, FaultRecord[]> = opts.visibleOn3 === true ? { 'node-3': [chipFault('node-3', 'Ascend910-1', 'SeparateNPU', '80E18401')] } : {};
  const log: string[] = [];
  const chains: string[] = [];
  let runs = 0;
  const executor = {
    async run(job: JobTarget, p: PendingDecision, o: { replay: boolean }) {
      runs++;
      chains.push(p.chain);
      const stored = persisted(cms);
      log.push(`run ${job.key} ${p.actions.map((a) => a.type).join('+')} replay=${o.replay} persisted=${stored.ok && stored.value.pending?.decisionId === p.decisionId}`);
      if (opts.failFirstRun === true && runs === 1) throw new Error('crash after persisting');
      return { deleted: [], alreadyGone: [], annotated: 0, recorded: true, deletesDoneMs: 12.34, ...(opts.recording === undefined || o.replay ? {} : { recording: opts.recording }) };
    },
  } as unknown as JobActionExecutor;
  // With a hide window, the scheduler view leaves the fault out and the filters' snapshot marks it hidden.
  const until = opts.hiddenUntilMs;
  const filtered = until === undefined ? {} : {
    filtered: (nodes: readonly string[]) => {
      const hidden = nodes.flatMap((n) => faults[n] ?? []);
      return { faults: [...hidden, ...nodes.flatMap((n) => visible[n] ?? [])], hidden: new Map(hidden.map((f) => [faultKey(f), { by: 'custom-filter', untilMs: until }])) };
    },
  };
  let nowMs = 1_000_000;
  const r = jobDecisionsReconciler({
    index, faultsOf: (n) => (until === undefined ? faults[n] ?? [] : visible[n] ?? []), ...filtered, states, executor,
    reporter: new DecisionReporter({ log: silentLogger, metrics: new Metrics({ processMetrics: false }) }),
    // The history's writes are covered on the real apiserver (test/integration/kubectl-clusterd.test.ts).
    history: new DecisionHistory({ client: cms.client(), log: silentLogger, metrics: new Metrics({ processMetrics: false }), bounds: { perJob: 50, total: 5000, ttlMs: 3_600_000 }, dryRun: true }),
    resetConfig: { cached: () => undefined, writer }, config: {}, dryRun: false,
    registered: () => false, onStateChanged: () => undefined, onGone: () => undefined,
    viewAwaiting: (nodes) => nodes.some((n) => opts.awaiting?.has(n) === true),
    // Breaker and damping are tested in breaker.test.ts / flap-damping.test.ts: here, an open gate.
    breaker: opts.breaker ?? { admit: () => ({ allowed: true }) }, damper: new FlapDamper({ holdMs: 0, recoveries: 2, windowMs: 60_000 }, () => nowMs, () => false),
    ...(opts.scheduledAtMs === undefined ? {} : { scheduledAtMs: () => opts.scheduledAtMs }),
  });
  const ctx: ReconcileContext = { log: silentLogger, signal: new AbortController().signal, now: () => nowMs };
  /**
   * A pass of the key as the controller's queue runs it, then the passes the journal queues (its
   * write-ahead written: the pass that carries it out), until none is left; answers the key's last outcome.
   */
  const reconcile = async (key: string, c: ReconcileContext = ctx): Promise<Outcome> => {
    let out = await r.reconcile(key, c);
    for (;;) {
      while ([UID, UID2].some((u) => states.unwritten(u))) await new Promise((res) => setTimeout(res, 1));
      const next = queued.shift();
      if (next === undefined) return out;
      const o = await r.reconcile(next, c);
      if (next === key) out = o;
    }
  };
  return { r, reconcile, ctx, cms, log, chains, states, pods, groups, advance: (ms: number) => { nowMs += ms; } };
}

describe('job decisions reconcile', () => {
  it('waits while one of the job\'s nodes awaits the fault view\'s evaluation, then decides on the view after it', async () => {
    const awaiting = new Set(['node-2']);
    const { reconcile, log, cms } = setup({ awaiting });
    expect(await reconcile(KEY)).toEqual({ requeueAfterMs: VIEW_AWAIT_REQUEUE_MS });
    expect(log).toEqual([]);
    expect(persisted(cms).ok).toBe(false); // nothing decided, nothing written
    awaiting.clear();
    await reconcile(KEY);
    expect(log).toEqual([`run ${KEY} forceDeletePods+recordRescheduleReason replay=false persisted=true`]);
  });

  it('persists the decision with its actions before acting, then clears the pending mark with the next journal write', async () => {
    const { reconcile, cms, log, states } = setup();
    const out = await reconcile(KEY);
    expect(log).toEqual([`run ${KEY} forceDeletePods+recordRescheduleReason replay=false persisted=true`]);
    // Fewer writes: the clear no longer is a write of its own right after acting (it was ['create', 'replace']
    // here): it waits for the journal's next commit, so a storm's clears share writes.
    expect(cms.writes.map((w) => w.verb)).toEqual(['create']);
    const ahead = persisted(cms);
    expect(ahead.ok && ahead.value.pending?.actions.map((a) => a.type)).toEqual(['forceDeletePods', 'recordRescheduleReason']);
    const seen = states.get(UID);
    expect(seen?.ok === true && seen.value.pending).toBeUndefined(); // the clear is seen in process at once
    await states.flush();
    expect(cms.writes.map((w) => w.verb)).toEqual(['create', 'replace']);
    const stored = persisted(cms);
    expect(stored.ok && stored.value.pending).toBeUndefined();
    expect(stored.ok && stored.value.state.active?.scope).toBe('job');
    expect(stored.ok && stored.value.state.acted).toHaveLength(1);
    expect(out.requeueAfterMs).toBeGreaterThan(0);
  });

  it('holds the journal clear until the decision\'s reason record landed (nobody waits for the record)', async () => {
    let landed!: (v: boolean) => void;
    const recording = new Promise<boolean>((r) => { landed = r; });
    const { reconcile, cms, states } = setup({ recording });
    await reconcile(KEY); // returns with the record still on its way
    const seen = states.get(UID);
    expect(seen?.ok === true && seen.value.pending).toBeUndefined(); // no replay in this process
    await states.flush();
    const held = persisted(cms);
    expect(held.ok && held.value.pending?.actions.map((a) => a.type)).toEqual(['forceDeletePods', 'recordRescheduleReason']); // a crash replays it
    landed(true);
    await new Promise((res) => setImmediate(res));
    await states.flush();
    const cleared = persisted(cms);
    expect(cleared.ok && cleared.value.pending).toBeUndefined();
  });

  it('logs where a fresh decision\'s time went: queued, decide, prepare, write-ahead, deletes (to find single-fault latency)', async () => {
    const { reconcile, ctx } = setup({ scheduledAtMs: 1_000_000 - 7 });
    const lines: Array<{ msg: string; fields?: object }> = [];
    const capture = { ...silentLogger, info: (msg: string, fields?: object) => { lines.push({ msg, ...(fields === undefined ? {} : { fields }) }); } };
    await reconcile(KEY, { ...ctx, log: capture });
    const carried = lines.find((l) => l.msg === 'job decision carried out');
    const stages = (carried?.fields as { stagesMs?: Record<string, number> } | undefined)?.stagesMs;
    expect(stages).toEqual({ queued: 7, decide: expect.any(Number), prepare: expect.any(Number), writeAhead: expect.any(Number), deletes: 12.3 });
    for (const k of ['decide', 'prepare', 'writeAhead'] as const) expect(stages![k]).toBeGreaterThanOrEqual(0);
  });

  it('a resync with nothing new writes nothing and acts on nothing', async () => {
    const { reconcile, cms, log } = setup();
    await reconcile(KEY);
    const writes = cms.writes.length;
    await reconcile(KEY);
    await reconcile(KEY);
    expect(cms.writes.length).toBe(writes);
    expect(log).toHaveLength(1);
  });

  it('after a crash between persisting and acting, finishes the same decision and decides nothing new', async () => {
    const harness = setup({ failFirstRun: true });
    const { reconcile, cms, log } = harness;
    await expect(reconcile(KEY)).rejects.toThrow('crash after persisting');
    const pending = persisted(cms);
    expect(pending.ok && pending.value.pending?.actions.map((a) => a.type)).toEqual(['forceDeletePods', 'recordRescheduleReason']);
    await reconcile(KEY);
    expect(log).toEqual([
      `run ${KEY} forceDeletePods+recordRescheduleReason replay=false persisted=true`,
      `run ${KEY} forceDeletePods+recordRescheduleReason replay=true persisted=true`,
    ]);
    const { states } = harness;
    await states.flush();
    const after = persisted(cms);
    expect(after.ok && after.value.pending).toBeUndefined();
    expect(after.ok && after.value.state.generation).toBe(1);
  });

  it('fault-scheduling absent: no deletion, no state ConfigMap for a pristine job', async () => {
    const { reconcile, cms, log } = setup({ labels: {} });
    await reconcile(KEY);
    expect(log).toEqual([]);
    expect(cms.writes).toEqual([]);
  });

  it('a fault hidden by a filter (the pipeline snapshot) is docs/rules.md#decision.hidden-by-filter: nothing until its window ends, then the job restarts', async () => {
    const { reconcile, log, advance } = setup({ hiddenUntilMs: 1_005_000 });
    const out = await reconcile(KEY);
    expect(log).toEqual([]);
    expect(out.requeueAfterMs).toBe(5_000); // wakes at the window's end without new intake
    advance(5_000);
    await reconcile(KEY);
    expect(log).toEqual([`run ${KEY} forceDeletePods+recordRescheduleReason replay=false persisted=true`]);
  });

  it('a decision on a visible fault names and times only it, not a fault still hidden on another rank', async () => {
    const { reconcile, log, chains } = setup({ hiddenUntilMs: 1_005_000, visibleOn3: true });
    await reconcile(KEY);
    expect(log).toHaveLength(1);
    expect(chains[0]).toContain('80E18401@node-3/Ascend910-1');
    expect(chains[0]).not.toContain('80E18402');
  });

  it('deletes the state of a job whose PodGroup is gone', async () => {
    const { reconcile, cms, groups, states } = setup();
    await reconcile(KEY);
    groups.remove(podGroupOf(NS, 'llama', UID));
    await reconcile(KEY);
    await states.flush();
    expect(cms.writes.at(-1)?.verb).toBe('delete');
    expect(cms.objects.size).toBe(0);
  });

  it('the breaker\'s last slot goes to one of two jobs decided in parallel: the other is held, nothing of it written ahead or carried out', async () => {
    // One slot: the gate admits the first key it sees (and that key again), nothing else.
    const admitted: string[] = [];
    const breaker: BreakerGate = {
      admit: (_kind, key) => {
        if (admitted.length === 0) admitted.push(key);
        return admitted.includes(key) ? { allowed: true } : { allowed: false, reason: 'held by the blast-radius breaker (cluster: 2 jobs rescheduled within 600 s > 1)' };
      },
    };
    const { reconcile, cms, log, states } = setup({ breaker, secondJob: true });
    await Promise.all([reconcile(KEY), reconcile(KEY2)]);
    expect(log).toHaveLength(1);
    expect(admitted).toHaveLength(1);
    await states.flush();
    const journal = cms.get('mindx-dl', journalCmName(0))?.data ?? {};
    expect(Object.keys(journal)).toHaveLength(1); // only the admitted job's record
    // Held is level-triggered: decided again later, still held, nothing carried out.
    await Promise.all([reconcile(KEY), reconcile(KEY2)]);
    expect(log).toHaveLength(1);
  });

  it('a pass never waits for the journal\'s commit: with the journal loop stopped it returns, acting on nothing until its write-ahead is written', async () => {
    const { r, ctx, cms, log, states } = setup({ journalStopped: true });
    const out = await r.reconcile(KEY, ctx); // used to wait for a commit only the journal loop would run
    expect(out).toEqual({});
    expect(log).toEqual([]);
    expect(cms.writes).toEqual([]);
    expect(states.unwritten(UID)).toBe(true);
    await r.reconcile(KEY, ctx); // another event meanwhile: nothing decided or acted again
    expect(log).toEqual([]);
    await states.flush(); // the journal's commit: the job is queued and its next pass acts
    expect(states.unwritten(UID)).toBe(false);
    await r.reconcile(KEY, ctx);
    expect(log).toEqual([`run ${KEY} forceDeletePods+recordRescheduleReason replay=false persisted=true`]);
  });

  it('a write-ahead that was not written fails the job\'s next pass (its queue backs off) and is decided again', async () => {
    const { r, reconcile, ctx, cms, log, states } = setup({ journalStopped: true });
    await r.reconcile(KEY, ctx);
    cms.failWrites = new Error('apiserver down');
    await states.flush().catch(() => undefined);
    await new Promise((res) => setImmediate(res));
    expect(states.get(UID)).toBeUndefined(); // forgotten: not written ahead, never carried out
    await expect(r.reconcile(KEY, ctx)).rejects.toThrow('apiserver down');
    cms.failWrites = undefined;
    await r.reconcile(KEY, ctx);
    await states.flush();
    await reconcile(KEY);
    expect(log).toEqual([`run ${KEY} forceDeletePods+recordRescheduleReason replay=false persisted=true`]);
  });

  it('a write-ahead left by a lost leadership is carried out as a replay when leadership comes back', async () => {
    const { r, ctx, log, states } = setup({ journalStopped: true });
    await r.reconcile(KEY, ctx);
    await states.flush(); // durable; then leadership is lost before its pass ran
    states.abandon();
    states.resume();
    await r.reconcile(KEY, ctx);
    expect(log).toEqual([`run ${KEY} forceDeletePods+recordRescheduleReason replay=true persisted=true`]);
  });
});
