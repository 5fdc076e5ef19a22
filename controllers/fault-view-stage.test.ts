/**
 * The fault-view stage (controllers/fault-view-stage.ts) in virtual time: inputs only enqueue node
 * keys, one pass per burst evaluates and publishes, time-based changes are the stage's own keys, a
 * read never emits, and a failing evaluation gets the queue's backoff, a log line and a metric.
 */
import { faultKey, type FaultRecord } from '../vocabulary/fault-types.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { ManualClock, rec, recordingLogger, settle, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { AWAIT_EVALUATION_LIMIT_MS, FaultView } from './fault-view.ts';
import { FaultViewStage, type SchedulerFilters } from './fault-view-stage.ts';
import type { FaultPolicy } from './device-faults.controller.ts';

const WINDOW_MS = 5_000;

/** Hides every record for 5 s from its first sight, then shows it (the custom filter's shape). */
const hideFiveSeconds: SchedulerFilters = {
  evaluate: (_n, job, nowMs) => {
    const open = job.filter((r) => nowMs < r.firstSeenMs + WINDOW_MS);
    return {
      visible: job.filter((r) => !open.includes(r)), dropped: [], relevelled: [], reported: [], uce: {},
      hidden: open.map((record) => ({ record, by: 'custom-filter', reasons: [], untilMs: record.firstSeenMs + WINDOW_MS })),
      recheckAtMs: open.length === 0 ? undefined : Math.min(...open.map((r) => r.firstSeenMs + WINDOW_MS)),
    };
  },
};

function world(opts: { policy?: FaultPolicy; filters?: SchedulerFilters; start?: boolean } = {}) {
  const clock = new ManualClock();
  const records = new Map<string, FaultRecord[]>();
  const store = { records: (n: string) => records.get(n) ?? [], nodeState: () => ({}) } as unknown as FaultStore;
  const view = new FaultView(store, clock.now);
  const lines: LogLine[] = [];
  const metrics = new Metrics();
  let evaluations = 0;
  const policy: FaultPolicy = opts.policy ?? { effective: (_n, rs) => { evaluations++; return rs; } };
  const stage = new FaultViewStage({ view, policy, ...(opts.filters ? { filters: opts.filters } : {}), clock, log: recordingLogger(lines), metrics });
  if (opts.start !== false) stage.start();
  const changes: Array<{ version: number; nodes: string[]; atMs: number }> = [];
  view.changes$.subscribe((c) => changes.push({ version: c.version, nodes: [...c.nodes], atMs: c.atMs }));
  const errors = async (): Promise<number> =>
    (await metrics.reconciles.get()).values.find((v) => v.labels.controller === 'fault_view' && v.labels.result === 'error')?.value ?? 0;
  return { clock, records, view, stage, changes, lines, errors, policyEvaluations: () => evaluations };
}

describe('FaultViewStage', () => {
  it('a hide window\'s end is published at that instant by the node\'s key, with no reader', async () => {
    const w = world({ filters: hideFiveSeconds });
    const t0 = w.clock.now();
    w.records.set('n1', [rec('n1', 'Ascend910-0', '80E18402', 'SeparateNPU', t0)]);
    w.stage.intake({ nodes: ['n1'], atMs: t0 });
    await settle();
    expect(w.view.effective('n1')).toEqual([]);
    expect(w.changes.map((c) => c.nodes)).toEqual([['n1']]);
    await w.clock.run(WINDOW_MS + 1_000); // nobody reads
    expect(w.changes.map((c) => [c.nodes, c.atMs - t0])).toEqual([[['n1'], 0], [['n1'], WINDOW_MS]]);
    expect(w.changes.map((c) => c.version)).toEqual([1, 2]);
    expect(w.view.version).toBe(2);
    expect(w.view.effective('n1').map((r) => r.code)).toEqual(['80E18402']);
  });

  it('a window longer than one timer delay (1 h) is still published at its end', async () => {
    const HOURS_3 = 3 * 3_600_000;
    const w = world({
      filters: { evaluate: (_n, job, nowMs) => {
        const open = job.filter((r) => nowMs < r.firstSeenMs + HOURS_3);
        return { visible: job.filter((r) => !open.includes(r)), dropped: [], relevelled: [], reported: [], uce: {}, hidden: open.map((record) => ({ record, by: 'custom-filter', reasons: [], untilMs: record.firstSeenMs + HOURS_3 })), recheckAtMs: open.length === 0 ? undefined : open[0]!.firstSeenMs + HOURS_3 };
      } },
    });
    const t0 = w.clock.now();
    w.records.set('n1', [rec('n1', 'Ascend910-0', '80E18402', 'SeparateNPU', t0)]);
    w.stage.intake({ nodes: ['n1'], atMs: t0 });
    await settle();
    await w.clock.run(HOURS_3 + 1_000);
    expect(w.changes.map((c) => c.atMs - t0)).toEqual([0, HOURS_3]);
  });

  it('a read never emits: 1,000 reads past a window\'s end publish nothing; only the node\'s key does', async () => {
    const w = world({ filters: hideFiveSeconds });
    const t0 = w.clock.now();
    const fault = rec('n1', 'Ascend910-0', '80E18402', 'SeparateNPU', t0);
    w.records.set('n1', [fault]);
    w.stage.intake({ nodes: ['n1'], atMs: t0 });
    await settle();
    const published = w.changes.length;
    await w.stage.stop(); // the node's key never runs now
    w.clock.advance(WINDOW_MS + 1);
    for (let i = 0; i < 1_000; i++) {
      expect(w.view.effective('n1')).toEqual([]);
      expect(w.view.placement('n1')).toEqual([]);
      expect(w.view.withheld('n1')).toEqual([fault]);
      // The window is over but not yet re-evaluated: pending, never "over" with the old verdict.
      expect(w.view.jobSnapshot(['n1']).hidden.get(faultKey(fault))?.untilMs).toBeGreaterThan(w.clock.now());
    }
    await settle();
    expect(w.changes.length).toBe(published);
    expect(w.view.version).toBe(published);
    // With the key running (the first test), the same instant publishes the fault.
  });

  it('only a window that ended after the evaluation is reported pending; one already over when evaluated is over', async () => {
    const w = world({
      filters: { evaluate: (_n, job, nowMs) => ({ visible: [], dropped: [], relevelled: [], reported: [], uce: {}, hidden: job.map((record) => ({ record, by: 'custom-filter', reasons: [], untilMs: nowMs - 1 })), recheckAtMs: undefined }) },
    });
    const fault = rec('n1', 'Ascend910-0', '80E18402', 'SeparateNPU', w.clock.now());
    w.records.set('n1', [fault]);
    w.stage.intake({ nodes: ['n1'], atMs: w.clock.now() });
    await settle();
    expect(w.view.jobSnapshot(['n1']).hidden.get(faultKey(fault))?.untilMs).toBe(w.clock.now() - 1);
  });

  it('a throwing policy evaluation is retried with the queue\'s backoff, logged and counted; the others are not held back', async () => {
    let failures = 2;
    const w = world({
      policy: { effective: (n, rs) => { if (n === 'bad' && failures-- > 0) throw new Error('policy broke'); return rs; } },
    });
    const t0 = w.clock.now();
    w.records.set('bad', [rec('bad', 'Ascend910-0', '80E18402', 'SeparateNPU', t0)]);
    w.records.set('good', [rec('good', 'Ascend910-0', '80E18402', 'SeparateNPU', t0)]);
    w.stage.intake({ nodes: ['bad', 'good'], atMs: t0 });
    await settle();
    expect(await w.errors()).toBe(1);
    expect(w.lines.filter((l) => l.msg === 'reconcile failed; requeued')).toEqual([expect.objectContaining({ controller: 'fault_view', key: 'bad', err: 'Error: policy broke', retryInMs: 5 })]);
    // The good node's key ran its own pass, without the failing node.
    expect(w.changes.map((c) => c.nodes)).toEqual([['good']]);
    expect(w.view.effective('bad')).toEqual([]);
    await w.clock.run(4);
    expect(await w.errors()).toBe(1); // not before its 5 ms backoff
    await w.clock.run(1);
    expect(await w.errors()).toBe(2); // 2nd failure: 10 ms
    await w.clock.run(9);
    expect(w.changes.map((c) => c.nodes)).toEqual([['good']]);
    await w.clock.run(1);
    expect(w.changes.map((c) => c.nodes)).toEqual([['good'], ['bad']]); // emitted as an intake change although retried
    expect(w.view.effective('bad').map((r) => r.node)).toEqual(['bad']);
    expect(await w.errors()).toBe(2);
  });

  it('a queued node awaits its evaluation until its pass publishes; a node whose pass keeps failing stops holding readers back after the limit', async () => {
    const w = world({ start: false, policy: { effective: (n, rs) => { if (n === 'bad') throw new Error('policy broke'); return rs; } } });
    w.stage.notify(['n1', 'bad']);
    expect(w.view.awaitingAny(['n1'])).toBe(true);
    expect(w.view.awaitingAny(['n2'])).toBe(false);
    w.stage.start();
    await settle();
    await w.clock.run(20); // the first pass held both and failed; n1's own retry runs within the backoff
    expect(w.view.awaitingAny(['n1'])).toBe(false); // evaluated and published (unchanged: nothing emitted)
    expect(w.changes).toEqual([]);
    expect(w.view.awaitingAny(['bad'])).toBe(true);
    await w.clock.run(AWAIT_EVALUATION_LIMIT_MS);
    expect(w.view.awaitingAny(['bad'])).toBe(false);
    await w.stage.stop();
  });

  it('two intakes of the same node before its key runs coalesce into one evaluation and one publication', async () => {
    const w = world();
    const t0 = w.clock.now();
    w.records.set('n1', [rec('n1', 'Ascend910-0', '80E18402', 'SeparateNPU', t0)]);
    w.stage.intake({ nodes: ['n1'], atMs: t0 });
    w.records.set('n1', [rec('n1', 'Ascend910-1', '80E18402', 'SeparateNPU', t0)]);
    w.stage.intake({ nodes: ['n1'], atMs: t0 });
    w.stage.notify(['n1']);
    await settle();
    expect(w.policyEvaluations()).toBe(1);
    expect(w.stage.evaluations).toBe(1);
    expect(w.changes.map((c) => c.nodes)).toEqual([['n1']]);
    expect(w.view.effective('n1').map((r) => r.device)).toEqual(['Ascend910-1']);
  });

  it('an intake of many nodes is one pass and one publication; the other nodes\' keys find nothing to do', async () => {
    const w = world();
    const t0 = w.clock.now();
    const nodes = ['n1', 'n2', 'n3'];
    for (const n of nodes) w.records.set(n, [rec(n, 'Ascend910-0', '80E18402', 'SeparateNPU', t0)]);
    w.stage.intake({ nodes, atMs: t0 });
    await settle();
    expect(w.changes.map((c) => c.nodes)).toEqual([nodes]);
    expect(w.policyEvaluations()).toBe(3);
    expect(w.stage.evaluations).toBe(3);
  });
});
