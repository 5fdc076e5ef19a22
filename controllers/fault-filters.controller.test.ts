import { Metrics } from '../telemetry/metrics.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { ManualClock, recordingLogger, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { FaultFiltersController } from './fault-filters.controller.ts';
import { fakeSources, pod, podGroup, rec } from '../test/support/fault-filters-fakes.ts';

const S = 1000;
const NS = 'team-a';

function setup(opts: { annotations?: Record<string, string>; podLabels?: Record<string, string>; subscribed?: () => boolean; npuClaims?: 'verified' | 'annotation' } = {}) {
  const clock = new ManualClock();
  const t0 = clock.now();
  const { pods, podGroups, sources } = fakeSources();
  const lines: LogLine[] = [];
  const metrics = new Metrics({ processMetrics: false });
  const records = new Map<string, FaultRecord[]>();
  const notified: string[][] = [];
  let stateChanges = 0;
  const c = new FaultFiltersController({
    sources, log: recordingLogger(lines), metrics, clock,
    jobView: (n) => records.get(n) ?? [],
    notify: (nodes) => notified.push([...nodes]),
    onStateChange: () => { stateChanges++; },
    subscriptions: { subscribed: () => opts.subscribed?.() ?? false },
    ...(opts.npuClaims === undefined ? {} : { npuClaims: opts.npuClaims }),
  });
  c.start();
  podGroups.put(podGroup(NS, 'llama', 'u1', { annotations: opts.annotations ?? {} }));
  pods.put(pod(NS, 'llama', 'u1', 0, 'n1', ['Ascend910-0', 'Ascend910-1'], opts.podLabels));
  pods.put(pod(NS, 'llama', 'u1', 1, 'n2', ['Ascend910-0']));
  const view = (n: string): string[] => c.schedulerView(n, records.get(n) ?? [], clock.now()).map((r) => `${r.device}/${r.code}`);
  return { c, clock, t0, pods, podGroups, lines, metrics, records, notified, view, stateChanges: () => stateChanges };
}

const verdictCount = async (m: Metrics, filter: string, verdict: string): Promise<number> =>
  (await m.filterVerdicts.get()).values.find((v) => v.labels.filter === filter && v.labels.verdict === verdict)?.value ?? 0;

describe('FaultFiltersController', () => {
  it('hides a filtered fault until its window ends, then re-announces the node, logs each transition once and counts it', async () => {
    const s = setup({ annotations: { 'huawei.com/schedule.filter.faultCode': '80E18402:5' } });
    s.records.set('n1', [rec('n1', 'Ascend910-1', '80E18402', 'SeparateNPU', s.t0)]);
    expect(s.view('n1')).toEqual([]);
    expect(s.view('n1')).toEqual([]); // evaluated again: no second log line
    const hidden = s.lines.filter((l) => l.msg === 'fault hidden from the scheduler by a filter');
    expect(hidden).toHaveLength(1);
    expect(hidden[0]).toMatchObject({ node: 'n1', npu: 'Ascend910-1', code: '80E18402', faultLevel: 'SeparateNPU', filter: 'custom-filter', verdict: 'hide', untilMs: s.t0 + 5 * S + 1 });
    expect(String(hidden[0]?.reasons)).toContain('code 80E18402 hidden for 5 s');
    expect(await verdictCount(s.metrics, 'custom-filter', 'hide')).toBe(1);

    const snap = s.c.jobSnapshot(['n1', 'n2'], s.clock.now());
    expect(snap.faults.map((r) => r.code)).toEqual(['80E18402']);
    expect(snap.hidden.get('n1/Ascend910-1/npu/80E18402')).toEqual({ by: 'custom-filter', untilMs: s.t0 + 5 * S + 1 });

    await s.clock.run(4 * S);
    expect(s.notified).toEqual([]);
    await s.clock.run(2 * S);
    expect(s.notified).toEqual([['n1']]);
    expect(s.lines.find((l) => l.msg === 'fault reported to the scheduler by its filter')).toMatchObject({ code: '80E18402', filter: 'custom-filter', before: 'hide' });
    expect(s.view('n1')).toEqual(['Ascend910-1/80E18402']);
    expect(await verdictCount(s.metrics, 'custom-filter', 'report')).toBe(1);
  });

  it('a PodGroup filter annotation change re-announces the job nodes; removing it reports the fault', () => {
    const s = setup({ annotations: { 'huawei.com/schedule.filter.faultLevel': 'SeparateNPU:600' } });
    s.records.set('n2', [rec('n2', 'Ascend910-0', '80E18402', 'SeparateNPU', s.t0)]);
    expect(s.view('n2')).toEqual([]);
    s.podGroups.put(podGroup(NS, 'llama', 'u1', { annotations: {}, rv: '2' }));
    expect(s.notified.at(-1)?.sort()).toEqual(['n1', 'n2']);
    expect(s.view('n2')).toEqual(['Ascend910-0/80E18402']);
    expect(s.lines.at(-1)).toMatchObject({ msg: 'fault reported to the scheduler by its filter', reasons: 'filter no longer applies' });
    s.podGroups.put(podGroup(NS, 'llama', 'u1', { annotations: {}, rv: '3' })); // nothing the filters read changed
    expect(s.notified).toHaveLength(1);
  });

  it('a pod or PodGroup change re-announces only nodes that withhold a fault (no intake change needed)', () => {
    const s = setup({ annotations: { 'huawei.com/schedule.filter.faultCode': '80E18402:600' } });
    s.records.set('n1', [rec('n1', 'Ascend910-1', '80E18402', 'SeparateNPU', s.t0)]);
    expect(s.view('n1')).toEqual([]); // hidden: n1 withholds a fault
    expect(s.view('n2')).toEqual([]); // nothing on n2
    // rank 1's pod (n2) changes: n2 withholds nothing, no announcement
    s.pods.put({ ...pod(NS, 'llama', 'u1', 1, 'n2', ['Ascend910-0']), metadata: { ...pod(NS, 'llama', 'u1', 1, 'n2', ['Ascend910-0']).metadata, deletionTimestamp: '2026-11-21T00:00:00Z' } });
    expect(s.notified).toEqual([]);
    // rank 0's pod (n1) starts terminating: n1 is looked at again
    const p0 = pod(NS, 'llama', 'u1', 0, 'n1', ['Ascend910-0', 'Ascend910-1']);
    s.pods.put({ ...p0, metadata: { ...p0.metadata, deletionTimestamp: '2026-11-21T00:00:00Z' } });
    expect(s.notified).toEqual([['n1']]);
    // the PodGroup (and its filter annotations) goes: every withholding node is looked at again
    s.podGroups.remove(podGroup(NS, 'llama', 'u1', { annotations: {} }));
    expect(s.notified).toEqual([['n1'], ['n1']]);
  });

  it('UCE-accompany: the drop decision is persisted state; restore adopts decisions without overriding newer ones', () => {
    const s = setup();
    s.records.set('n3', [rec('n3', 'Ascend910-2', '80E01801', 'RestartBusiness', s.t0), rec('n3', 'Ascend910-2', '80C98009', 'RestartRequest', s.t0 + S)]);
    expect(s.view('n3')).toEqual(['Ascend910-2/80E01801']);
    expect(s.lines.find((l) => l.msg === 'fault dropped by a filter')).toMatchObject({ code: '80C98009', filter: 'uce-accompany', verdict: 'drop' });
    const key = `n3/Ascend910-2/npu/80C98009@${s.t0 + S}`;
    expect(s.c.state().uceAccompany).toEqual({ [key]: 'drop' });
    expect(s.stateChanges()).toBe(1);
    s.c.restore({ uceAccompany: { [key]: 'report', 'n9/Ascend910-0/npu/80CB8009@1': 'drop' }, linkDowns: {} });
    expect(s.c.state().uceAccompany).toEqual({ [key]: 'drop', 'n9/Ascend910-0/npu/80CB8009@1': 'drop' });
    s.records.set('n3', []);
    expect(s.view('n3')).toEqual([]);
    expect(s.c.state().uceAccompany).toEqual({ 'n9/Ascend910-0/npu/80CB8009@1': 'drop' });
  });

  it('withheld: what the last evaluation of a node hid or dropped, for cluster-info to leave out', async () => {
    const s = setup({ annotations: { 'huawei.com/schedule.filter.faultCode': '80E18402:5' } });
    s.records.set('n1', [rec('n1', 'Ascend910-1', '80E18402', 'SeparateNPU', s.t0)]);
    s.records.set('n3', [rec('n3', 'Ascend910-2', '80E01801', 'RestartBusiness', s.t0), rec('n3', 'Ascend910-2', '80C98009', 'RestartRequest', s.t0 + S)]);
    expect(s.c.withheld('n1')).toEqual([]); // not evaluated yet
    s.view('n1');
    s.view('n3');
    expect(s.c.withheld('n1').map((r) => `${r.device}/${r.code}`)).toEqual(['Ascend910-1/80E18402']);
    expect(s.c.withheld('n3').map((r) => `${r.device}/${r.code}`)).toEqual(['Ascend910-2/80C98009']); // dropped for good
    await s.clock.run(6 * S); // the window ends; the timer re-evaluates n1
    expect(s.c.withheld('n1')).toEqual([]);
    s.records.set('n3', []);
    s.view('n3');
    expect(s.c.withheld('n3')).toEqual([]);
  });

  it('an AIC error with no UCE is hidden 5 s, then the timer re-evaluates, reports it and re-announces the node', async () => {
    const s = setup();
    s.records.set('n4', [rec('n4', 'Ascend910-6', '80C98009', 'RestartRequest', s.t0)]);
    expect(s.view('n4')).toEqual([]);
    await s.clock.run(5 * S + 100);
    expect(s.notified).toEqual([['n4']]);
    expect(s.c.state().uceAccompany).toEqual({ [`n4/Ascend910-6/npu/80C98009@${s.t0}`]: 'report' });
    expect(s.view('n4')).toEqual(['Ascend910-6/80C98009']);
  });

  it('MindIE server pods of a subscribed job get the 60 s RestartRequest hold', () => {
    const labels = { jobID: 'mindie-1', app: 'mindie-ms-server' };
    const on = setup({ podLabels: labels, subscribed: () => true });
    on.records.set('n1', [rec('n1', 'Ascend910-0', '80C98008', 'RestartRequest', on.t0)]);
    expect(on.view('n1')).toEqual([]);
    expect(on.lines[0]).toMatchObject({ filter: 'custom-filter', reasons: expect.stringContaining('mindie-restart-request-hold') });
    const off = setup({ podLabels: labels, subscribed: () => false });
    off.records.set('n1', [rec('n1', 'Ascend910-0', '80C98008', 'RestartRequest', off.t0)]);
    expect(off.view('n1')).toEqual(['Ascend910-0/80C98008']);
  });
  it('a MindIE job subscribing or leaving changes its nodes\' view at once (job facts re-read, nodes announced)', () => {
    let subscribed = false;
    const s = setup({ podLabels: { jobID: 'mindie-1', app: 'mindie-ms-server' }, subscribed: () => subscribed });
    s.records.set('n1', [rec('n1', 'Ascend910-0', '80C98008', 'RestartRequest', s.t0)]);
    expect(s.view('n1')).toEqual(['Ascend910-0/80C98008']);
    subscribed = true;
    expect(s.view('n1')).toEqual(['Ascend910-0/80C98008']); // job facts are cached for up to 1 s
    s.c.jobFactsChanged('u1', ['n1', 'n2', 'n1']);
    expect(s.notified).toEqual([['n1', 'n2']]);
    expect(s.view('n1')).toEqual([]);
    subscribed = false;
    s.c.jobFactsChanged('u1', ['n1', 'n2']);
    expect(s.view('n1')).toEqual(['Ascend910-0/80C98008']);
  });

  it('another namespace\'s pod with no NPU request naming a job\'s chips lends its filter nothing; warned once, counted', async () => {
    for (const npuClaims of ['verified', 'annotation'] as const) {
      const s = setup({ npuClaims });
      // the tenant: its own PodGroup with a filter, a pod bound to n1 naming llama's chip, requesting no NPU
      s.podGroups.put(podGroup('tenant', 'quiet', 't1', { annotations: { 'huawei.com/schedule.filter.faultLevel': 'SeparateNPU:86400' } }));
      const forged = pod('tenant', 'quiet', 't1', 0, 'n1', ['Ascend910-1', 'Ascend910-7']);
      s.pods.put({ ...forged, spec: { nodeName: 'n1' } });
      s.records.set('n1', [rec('n1', 'Ascend910-1', '80E18402', 'SeparateNPU', s.t0), rec('n1', 'Ascend910-7', '80E18402', 'SeparateNPU', s.t0)]);
      if (npuClaims === 'annotation') { // ClusterD: the claim counts; the free chip is hidden (llama's pod, first to name Ascend910-1, decides that one)
        expect(s.view('n1')).toEqual(['Ascend910-1/80E18402']);
        expect(s.lines.filter((l) => l.msg === 'pod NPU claim not trusted')).toEqual([]);
        continue;
      }
      expect(s.view('n1')).toEqual(['Ascend910-1/80E18402', 'Ascend910-7/80E18402']);
      s.pods.put({ ...forged, spec: { nodeName: 'n1' }, metadata: { ...forged.metadata, labels: { touched: 'yes' } } }); // same claim again
      const warned = s.lines.filter((l) => l.msg === 'pod NPU claim not trusted');
      expect(warned).toEqual([expect.objectContaining({ pod: 'tenant/quiet-worker-0', node: 'n1', reason: 'no-npu-request', claimed: 'Ascend910-1,Ascend910-7', requested: 0 })]);
      expect((await s.metrics.npuClaimsUntrusted.get()).values).toEqual([expect.objectContaining({ labels: { reason: 'no-npu-request' }, value: 1 })]);
      // with the request it names, its claim counts: its own free chip is hidden, llama's is contested and shown
      s.pods.put(pod('tenant', 'quiet', 't1', 0, 'n1', ['Ascend910-1', 'Ascend910-7']));
      expect(s.view('n1')).toEqual(['Ascend910-1/80E18402']);
      expect(s.lines.find((l) => l.msg === 'fault reported to the scheduler by its filter' && l.npu === 'Ascend910-1')).toMatchObject({ reasons: expect.stringContaining('claimed by pods of 2 jobs') });
      expect((await s.metrics.npuClaimsUntrusted.get()).values.find((v) => v.labels.reason === 'contested')?.value).toBe(1);
    }
  });
});
