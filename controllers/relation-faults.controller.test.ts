import { Subject } from 'rxjs';
import type { KubeClient } from '../runtime/kube-client.ts';
import { Metrics } from '../telemetry/metrics.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { SWITCH_LINK_DOWN } from '../policy/faults/relation-fault-config.ts';
import { ManualClock, recordingLogger, settle, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { RelationFaultsController } from './relation-faults.controller.ts';
import { fakeSources, pod, podGroup, rec } from '../test/support/fault-filters-fakes.ts';

const S = 1000;
const NS = 'team-a';
const JOB = `${NS}/llama-u1`;

function setup(opts: { dryRun?: boolean; a3?: boolean } = {}) {
  const clock = new ManualClock();
  const t0 = clock.now();
  const { pods, podGroups, sources } = fakeSources();
  const lines: LogLine[] = [];
  const metrics = new Metrics({ processMetrics: false });
  const faults = new Map<string, FaultRecord[]>();
  const nodes$ = new Subject<readonly string[]>();
  const patches: Array<{ path: string; body: unknown }> = [];
  const client = { patch: async (path: string, body: unknown) => { patches.push({ path, body }); return {}; } } as unknown as KubeClient;
  let stateChanges = 0;
  const c = new RelationFaultsController({
    sources, faultsOf: (n) => faults.get(n) ?? [], faultNodes$: nodes$, a3Node: () => opts.a3 ?? false,
    client, log: recordingLogger(lines, {}, () => clock.now()), metrics, clock, dryRun: opts.dryRun ?? false,
    onStateChange: () => { stateChanges++; },
  });
  c.start();
  podGroups.put(podGroup(NS, 'llama', 'u1'));
  pods.put(pod(NS, 'llama', 'u1', 0, 'n1', ['Ascend910-0', 'Ascend910-1']));
  pods.put(pod(NS, 'llama', 'u1', 1, 'n2', ['Ascend910-0']));
  /** Sets a node's faults at time `at` and lets the batch run. */
  const fault = async (node: string, list: FaultRecord[]): Promise<void> => {
    faults.set(node, list);
    nodes$.next([node]);
    await clock.run(200);
  };
  return { c, clock, t0, pods, podGroups, lines, metrics, faults, patches, fault, stateChanges: () => stateChanges };
}

const decided = async (m: Metrics, strategy: string): Promise<number> =>
  (await m.relationDecisions.get()).values.find((v) => v.labels.strategy === strategy)?.value ?? 0;

describe('RelationFaultsController', () => {
  it('81078603 on a job NPU + 8C1F860B on the same job within the window -> fault-type=Separate on the pod of that node, once', async () => {
    const s = setup();
    s.c.restore({ jobs: {} });
    s.c.startActing();
    await s.clock.run(S);
    const link = rec('n1', 'Ascend910-1', '81078603', 'NotHandleFault', s.clock.now(), 'network');
    await s.fault('n1', [link]);
    expect(s.lines.find((l) => l.msg === 'relation fault waiting for a trigger')).toMatchObject({ job: JOB, node: 'n1', npu: 'Ascend910-1', code: '81078603', deadlineMs: link.firstSeenMs + 300 * S });
    await s.clock.run(10 * S);
    await s.fault('n2', [rec('n2', 'Ascend910-0', '8C1F860B', 'NotHandleFault', s.clock.now())]);
    const line = s.lines.find((l) => l.msg === 'relation fault strategy decided');
    expect(line).toMatchObject({ job: JOB, node: 'n1', strategy: 'Separate' });
    expect(String(line?.reasons)).toMatch(/relation fault 81078603 on n1\/Ascend910-1.*trigger 8C1F860B on n2/);
    expect(await decided(s.metrics, 'Separate')).toBe(1);
    await s.c.labels.idle();
    expect(s.patches).toEqual([{ path: `/api/v1/namespaces/${NS}/pods/llama-worker-0`, body: { metadata: { uid: 'llama-0-uid', labels: { 'fault-type': 'Separate' } } } }]);
    expect(s.c.pending.size).toBe(0);
    expect(s.c.strategies(JOB)).toEqual({ n1: 'Separate' });
    expect(s.stateChanges()).toBeGreaterThan(0);
    // sticky: the same trigger again, and the job's new pod on that node, are not labelled again
    s.pods.put(pod(NS, 'llama', 'u1', 0, 'n1', ['Ascend910-0', 'Ascend910-1']));
    await s.fault('n2', [rec('n2', 'Ascend910-0', '8C1F860B', 'NotHandleFault', s.clock.now())]);
    await s.c.labels.idle();
    expect(s.patches).toHaveLength(1);
    await s.c.stop();
  });

  it('a switch link-down with no trigger gives SubHealth after 300 s; a device link-down gives nothing', async () => {
    const s = setup();
    s.c.restore({ jobs: {} });
    s.c.startActing();
    await s.clock.run(S);
    await s.fault('n2', [rec('n2', undefined, SWITCH_LINK_DOWN, 'SubHealthFault', s.clock.now(), 'switch'), rec('n2', 'Ascend910-0', '81078603', 'NotHandleFault', s.clock.now(), 'network')]);
    await s.clock.run(299 * S);
    expect(s.lines.some((l) => l.msg === 'relation fault strategy decided')).toBe(false);
    await s.clock.run(2 * S);
    expect(s.lines.find((l) => l.msg === 'relation fault strategy decided')).toMatchObject({ node: 'n2', strategy: 'SubHealth' });
    expect(s.lines.find((l) => l.msg === 'relation fault window over without a trigger; no strategy')).toMatchObject({ code: '81078603' });
    expect(await decided(s.metrics, 'none')).toBe(1);
    await settle();
    await s.c.labels.idle();
    expect(s.patches.map((p) => p.body)).toEqual([{ metadata: { uid: 'llama-1-uid', labels: { 'fault-type': 'SubHealth' } } }]);
    await s.c.stop();
  });

  it('the 300 s window ends from the deadline key alone, at its own time; a 100 ms batch is one observation', async () => {
    const s = setup();
    s.c.restore({ jobs: {} });
    await s.clock.run(S);
    const at = s.clock.now();
    s.faults.set('n2', [rec('n2', undefined, SWITCH_LINK_DOWN, 'SubHealthFault', at, 'switch')]);
    s.podGroups.put(podGroup(NS, 'llama', 'u1', { annotations: { touched: '1' } }));
    await s.clock.run(99);
    expect(s.lines.some((l) => l.msg === 'relation fault waiting for a trigger')).toBe(false); // the batch window is open
    await s.clock.run(1);
    expect(s.lines.filter((l) => l.msg === 'relation fault waiting for a trigger').map((l) => (l.nowMs as number) - at)).toEqual([100]);
    await s.clock.run(400 * S);
    expect(s.lines.filter((l) => l.msg === 'relation fault strategy decided').map((l) => [(l.nowMs as number) - at, l.node, l.strategy])).toEqual([[300 * S, 'n2', 'SubHealth']]);
    await s.c.stop();
  });

  it('nothing is decided before restore; a link-down older than the job\'s first sight still meets its trigger; a deleted job is forgotten', async () => {
    const s = setup();
    s.faults.set('n1', [rec('n1', 'Ascend910-0', '81078603', 'NotHandleFault', s.t0 - 60 * S, 'network'), rec('n1', 'Ascend910-0', '8C1F860B', 'NotHandleFault', s.t0)]);
    await s.clock.run(S);
    expect(s.c.state()).toEqual({ jobs: {} });
    s.c.restore({ jobs: { 'gone/job-x': { firstSeenMs: 0, a3: false, candidates: [], triggers: [], strategies: { n: 'Separate' } } } });
    expect(Object.keys(s.c.state().jobs)).toEqual([JOB]);
    expect(s.c.strategies(JOB)).toEqual({ n1: 'Separate' });
    s.podGroups.remove(s.podGroups.get(JOB)!);
    await s.clock.run(200);
    expect(s.c.state()).toEqual({ jobs: {} });
    await s.c.stop();
  });

  it('dry run decides and logs but labels nothing; labels wait for leadership', async () => {
    const s = setup({ dryRun: true });
    s.c.restore({ jobs: {} });
    await s.clock.run(S);
    await s.fault('n1', [rec('n1', 'Ascend910-0', '81078603', 'NotHandleFault', s.clock.now(), 'network'), rec('n1', 'Ascend910-0', '8C1F8609', 'NotHandleFault', s.clock.now())]);
    expect(s.c.strategies(JOB)).toEqual({ n1: 'SubHealth' });
    expect(s.c.pending.size).toBe(1);
    s.c.startActing();
    await settle();
    await s.c.labels.idle();
    expect(s.patches).toEqual([]);
    expect(s.lines.find((l) => l.msg === 'dry run: pod not labelled fault-type')).toMatchObject({ pod: 'llama-worker-0', faultType: 'SubHealth' });
    await s.c.stop();
  });
});
