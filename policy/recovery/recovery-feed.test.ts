import type { FaultRecord, NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { podViewFromMeta } from '../jobs/job-view.ts';
import { parseJobKnobs } from '../../schemas/job-knobs/job-knobs.ts';
import { knobsInputOf, type JobEntry } from '../../state/job-index.ts';
import { recoveryFeed, retryReportDevices, type FeedInput } from './recovery-feed.ts';
import type { Pod } from '../../runtime/kube-objects.ts';

const NOW = 1_800_000_000_000;

function pod(rank: number, extra: Record<string, string> = {}): Pod {
  return {
    metadata: {
      name: `w-${rank}${extra.podType === 'backup' ? '-hot-0001' : ''}`, namespace: 'ns', uid: `uid-${rank}${extra.podType === 'backup' ? 'b' : ''}`,
      annotations: { 'hccl/rankIndex': String(rank), 'huawei.com/AscendReal': 'Ascend910-4,Ascend910-5', ...extra },
    },
    spec: { nodeName: `n${rank}` }, status: { phase: 'Running' },
  };
}

function entry(pods: Pod[], labels: Record<string, string> = {}, annotations: Record<string, string> = {}): { entry: JobEntry; pod: (k: string) => Pod | undefined } {
  const { knobs } = parseJobKnobs({ 'process-recover-enable': 'on', 'fault-scheduling': 'force', framework: 'pytorch', ...labels }, { 'recover-strategy': 'retry,recover', ...annotations });
  const views = pods.map((p) => podViewFromMeta({ name: p.metadata!.name!, uid: p.metadata!.uid!, nodeName: p.spec!.nodeName!, phase: 'Running', annotations: p.metadata!.annotations! }));
  return {
    entry: {
      view: { key: 'ns/job-u1', namespace: 'ns', name: 'job', uid: 'u1', kind: 'vcjob', pods: views },
      knobs, knobsInput: knobsInputOf(knobs), warnings: [],
      podGroup: { metadata: { name: 'job-u1', namespace: 'ns' }, status: { phase: 'Running' } },
    },
    pod: (k) => pods.find((p) => `ns/${p.metadata!.name}` === k),
  };
}

const rec = (node: string, code: string, level: NpuFaultLevel, device?: string, source: FaultRecord['source'] = 'npu', firstSeenMs = NOW - 1_000): FaultRecord =>
  ({ node, source, code, level, reportedLevel: level, firstSeenMs, ...(device ? { device } : {}) });

function feed(pods: Pod[], records: FaultRecord[], over: Partial<FeedInput> = {}, labels: Record<string, string> = {}) {
  const e = entry(pods, labels);
  return recoveryFeed({
    entry: e.entry, pod: e.pod, faultsOf: (n) => records.filter((r) => r.node === n), nowMs: NOW,
    hotSwitchDowngraded: false, holdsReschedulingRole: true, ...over,
  });
}

describe('recovery feed (what the FSMs see of a job)', () => {
  const pods = [0, 1, 2].map((r) => pod(r));

  it('maps a chip fault to its global rank (pod rank x NPUs per pod + index in AscendReal)', () => {
    const f = feed(pods, [rec('n1', '80E18402', 'SeparateNPU', 'Ascend910-5')]);
    expect(f.config.ranksPerPod).toBe(2);
    expect(f.ranks).toEqual([{ rankId: 3, faultType: '1' }]);
    expect(f.jobHealth).toBe('UnHealthy');
  });

  it('types UCE "0" and HCCL "2" when the business plane reported the rank; a normal fault on the same rank wins; recent L2/L3 may restart in place', () => {
    const reported = (rankId: number, atMs: number, faultType: '0' | '2' = '0') => ({ retryReports: [{ rankId, faultType, atMs }] });
    expect(feed(pods, [rec('n2', '80E01801', 'RestartBusiness', 'Ascend910-4')], reported(4, NOW - 500)).ranks).toEqual([{ rankId: 4, faultType: '0', restartInPlace: true }]);
    expect(feed(pods, [rec('n2', '8C1F860B', 'RestartBusiness', 'Ascend910-4', 'npu', NOW - 120_000)], reported(4, NOW - 115_000, '2')).ranks).toEqual([{ rankId: 4, faultType: '2' }]);
    const mixed = feed(pods, [rec('n2', '80E01801', 'RestartBusiness', 'Ascend910-4'), rec('n2', '80E18402', 'SeparateNPU', 'Ascend910-4')], reported(4, NOW - 500));
    expect(mixed.ranks).toEqual([{ rankId: 4, faultType: '1', restartInPlace: true }]);
  });

  it('a retry code only the device plugin reported is a normal fault (ClusterD CanDoStepRetry: no business-plane RecoverTime)', () => {
    const uce = rec('n2', '80E01801', 'RestartBusiness', 'Ascend910-4', 'npu', NOW - 30_000);
    expect(feed(pods, [uce]).ranks).toEqual([{ rankId: 4, faultType: '1', restartInPlace: true }]);
    // Another rank's report does not count; one 15 s after the fault and 15 s ago is too late.
    expect(feed(pods, [uce], { retryReports: [{ rankId: 5, faultType: '0', atMs: NOW - 1_000 }] }).ranks.find((r) => r.rankId === 4)?.faultType).toBe('1');
    expect(feed(pods, [uce], { retryReports: [{ rankId: 4, faultType: '0', atMs: NOW - 15_000 }] }).ranks).toEqual([{ rankId: 4, faultType: '1', restartInPlace: true }]);
    // Within 10 s after the fault, or within the last 10 s: a step retry.
    expect(feed(pods, [uce], { retryReports: [{ rankId: 4, faultType: '0', atMs: NOW - 25_000 }] }).ranks[0]?.faultType).toBe('0');
    expect(feed(pods, [uce], { retryReports: [{ rankId: 4, faultType: '0', atMs: NOW - 9_000 }] }).ranks[0]?.faultType).toBe('0');
  });

  it('node-wide faults hit every rank of the pod; NotReady marks nodeNotReadyOnly; NotHandle is dropped', () => {
    expect(feed(pods, [rec('n0', '2C000031', 'SeparateNPU', undefined, 'node')]).ranks.map((r) => r.rankId)).toEqual([0, 1]);
    expect(feed(pods, [rec('n0', 'heartbeatTimeOut', 'SeparateNPU', undefined, 'node-ready')]).ranks).toEqual([
      { rankId: 0, faultType: '1', nodeNotReadyOnly: true }, { rankId: 1, faultType: '1', nodeNotReadyOnly: true }]);
    expect(feed(pods, [rec('n1', '80E18402', 'NotHandleFault', 'Ascend910-4')]).ranks).toEqual([]);
  });

  it('sub-health: flagged ranks, SubHealthy job, the faulty pods for the hot switch', () => {
    const f = feed(pods, [rec('n1', '81A3880C', 'SubHealthFault', 'Ascend910-4')]);
    expect(f.ranks).toEqual([{ rankId: 2, faultType: '1', subHealth: true }]);
    expect(f.jobHealth).toBe('SubHealthy');
    expect(f.subHealthPods).toEqual([{ podName: 'w-1', podRank: 1, rankIds: [2, 3] }]); // every rank of the pod, as ClusterD's hot-switch signal
  });

  it('a rank moved by a hot switch is not switched again for the fault it left behind (the placement still names the old pod)', () => {
    const moved = pod(1, { podType: 'backup' });
    const { podType: _, ...annotations } = moved.metadata!.annotations!;
    const backup: Pod = { ...moved, metadata: { ...moved.metadata, annotations }, spec: { nodeName: 'n9' } };
    const placement = { pods: [0, 1, 2].map((r) => ({ name: `w-${r}`, uid: `uid-${r}`, node: `n${r}`, rank: r, npus: ['Ascend910-4', 'Ascend910-5'] })) };
    const e = entry([pods[0]!, backup, pods[2]!]);
    const f = recoveryFeed({
      entry: { ...e.entry, placement }, pod: e.pod, faultsOf: (n) => (n === 'n1' ? [rec('n1', '81A3880C', 'SubHealthFault', 'Ascend910-4')] : []),
      nowMs: NOW, hotSwitchDowngraded: false, holdsReschedulingRole: true,
    });
    expect(f.ranks).toEqual([{ rankId: 2, faultType: '1', subHealth: true }]);
    expect(f.subHealthPods).toEqual([]);
    // The pod the placement names is still the faulty one while it runs.
    const before = recoveryFeed({
      entry: { ...entry(pods).entry, placement }, pod: entry(pods).pod, faultsOf: (n) => (n === 'n1' ? [rec('n1', '81A3880C', 'SubHealthFault', 'Ascend910-4')] : []),
      nowMs: NOW, hotSwitchDowngraded: false, holdsReschedulingRole: true,
    });
    expect(before.subHealthPods).toEqual([{ podName: 'w-1', podRank: 1, rankIds: [2, 3] }]);
  });

  it('backup pods hold no rank but are hot-switch pods; retry reports are merged', () => {
    const withBackup = [...pods, pod(1, { podType: 'backup', backupSourcePodName: 'w-1' })];
    const f = feed(withBackup, [], { retryReports: [{ rankId: 5, faultType: '0', atMs: NOW }] });
    expect(f.pods.map((p) => p.name)).toEqual(['w-0', 'w-1', 'w-2']);
    expect(f.hotSwitchPods.map((p) => p.name)).toContain('w-1-hot-0001');
    expect(f.ranks).toEqual([{ rankId: 5, faultType: '0' }]);
  });

  it('a business-plane report alone lists its rank for 10 s (ClusterD ValidBusinessRecoverTime), not for its 60 s life', () => {
    const report = (ageMs: number) => ({ retryReports: [{ rankId: 3, faultType: '0' as const, atMs: NOW - ageMs }] });
    expect(feed(pods, [], report(10_000)).ranks).toEqual([{ rankId: 3, faultType: '0' }]);
    expect(feed(pods, [], report(10_001)).ranks).toEqual([]);
    expect(feed(pods, [], report(30_000)).ranks).toEqual([]);
    // The report still types a device-info UCE on that rank for its whole 60 s (CanDoStepRetry).
    const uce = rec('n1', '80E01801', 'RestartBusiness', 'Ascend910-5', 'npu', NOW - 32_000);
    expect(feed(pods, [uce], report(30_000)).ranks).toEqual([{ rankId: 3, faultType: '0', restartInPlace: true }]);
  });

  it('A5: a pod of the job on an A5 node; ra-block: the PodGroup annotation, any value (docs/rules.md#recover.force-release-a5, #recover.rack-wait)', () => {
    expect(feed(pods, [], { a5Node: (n) => n === 'n2' }).config).toMatchObject({ a5: true, rackBlock: false });
    expect(feed(pods, [], { a5Node: (n) => n === 'n9' }).config).toMatchObject({ a5: false });
    const e = entry(pods);
    const pg = { ...e.entry, podGroup: { ...e.entry.podGroup, metadata: { ...e.entry.podGroup.metadata, annotations: { 'ra-block': '' } } } };
    const f = recoveryFeed({ entry: pg, pod: e.pod, faultsOf: () => [], nowMs: NOW, hotSwitchDowngraded: false, holdsReschedulingRole: true });
    expect(f.config).toMatchObject({ a5: false, rackBlock: true });
  });

  it('config from the PodGroup knobs; a downgraded hot switch counts as ignore', () => {
    const f = feed(pods, [], { hotSwitchDowngraded: true }, { subHealthyStrategy: 'hotSwitch', 'pod-rescheduling': 'on' });
    expect(f.config).toEqual({ jobId: 'u1', strategies: ['retry', 'recover', 'exit'], jobRescheduling: true, podRescheduling: true, subHealthyStrategy: 'ignore', ranksPerPod: 2, waitRescheduleTimeoutS: 270, platformMode: false, a5: false, rackBlock: false });
    expect(f.hotSwitchConfig).toEqual({ jobId: 'u1', framework: 'pytorch', subHealthyStrategy: 'hotSwitch', holdsReschedulingRole: true, maxFaultPods: 10 });
    expect(f.podGroup).toEqual({ exists: true, phase: 'Running', platform: {} });
  });

  it('places agent-reported retry faults on their node and chip', () => {
    const e = entry(pods);
    expect(retryReportDevices(e.entry, (n) => e.pod(`ns/${n}`), [{ rankId: 3, faultType: '0', atMs: NOW }, { rankId: 99, faultType: '0', atMs: NOW }]))
      .toEqual([{ node: 'n1', device: 'Ascend910-5', atMs: NOW, faultType: '0' }]);
  });

  describe('the job\'s last complete placement (ClusterD PreServerList)', () => {
    const placement = { pods: pods.map((p, rank) => ({ name: p.metadata!.name!, uid: p.metadata!.uid!, node: `n${rank}`, rank, npus: ['Ascend910-4', 'Ascend910-5'] })) };
    const withPlacement = (live: Pod[]) => { const e = entry(live); return { entry: { ...e.entry, placement }, pod: e.pod }; };

    it('a fault on the chip of a pod the scheduler already deleted is still its rank\'s fault, and the job is unhealthy', () => {
      const e = withPlacement([pods[0]!, pods[2]!]);
      const f = recoveryFeed({ entry: e.entry, pod: e.pod, faultsOf: (n) => (n === 'n1' ? [rec('n1', '80E18402', 'SeparateNPU', 'Ascend910-5')] : []), nowMs: NOW, hotSwitchDowngraded: false, holdsReschedulingRole: false });
      expect(f.ranks).toEqual([{ rankId: 3, faultType: '1' }]);
      expect(f.jobHealth).toBe('UnHealthy');
      expect(f.config.ranksPerPod).toBe(2);
      // The FSM still sees only the pods there are.
      expect(f.pods.map((p) => p.podRank)).toEqual([0, 2]);
    });

    it('the placement, not a replacement pod on another node, holds the rank until the job is complete again', () => {
      const moved = pod(1);
      moved.spec = { nodeName: 'n9' };
      moved.metadata = { ...moved.metadata, uid: 'uid-1-new' };
      const e = withPlacement([pods[0]!, moved, pods[2]!]);
      const onN9 = recoveryFeed({ entry: e.entry, pod: e.pod, faultsOf: (n) => (n === 'n9' ? [rec('n9', '80E18402', 'SeparateNPU', 'Ascend910-4')] : []), nowMs: NOW, hotSwitchDowngraded: false, holdsReschedulingRole: false });
      expect(onN9.ranks).toEqual([]);
      expect(retryReportDevices(e.entry, (n) => e.pod(`ns/${n}`), [{ rankId: 3, faultType: '0', atMs: NOW }])).toEqual([{ node: 'n1', device: 'Ascend910-5', atMs: NOW, faultType: '0' }]);
    });
  });
});
