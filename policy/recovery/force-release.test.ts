import { applyFaultJobInfoOps, clearDelayMs, forceReleasePlan, pruneFaultJobInfo, type FaultJobInfoOp, type ForceReleaseInput } from './force-release.ts';
import { encodeFaultJobEntry } from '../../schemas/fault-job-info/fault-job-info.ts';

// Two SuperPods: node-a, node-b in 0; node-c in 1. Rank pods 0-2 on node-a, node-b, node-c.
const input = (o: Partial<ForceReleaseInput> = {}): ForceReleaseInput => ({
  jobId: 'uid-1',
  servers: [{ podRank: 0, node: 'node-a', superPodId: 0 }, { podRank: 1, node: 'node-b', superPodId: 0 }, { podRank: 2, node: 'node-c', superPodId: 1 }],
  faultPodRanks: [0],
  superPodNodes: [
    { superPodId: 1, node: 'node-c', devices: [['0', '200']] },
    { superPodId: 0, node: 'node-a', devices: [['1', '101'], ['0', '100']] },
    { superPodId: 0, node: 'node-b', devices: [['0', '110']] },
  ],
  nowSec: 1700000000,
  ...o,
});

describe('forceReleasePlan (GetJobFaultSdIdAndNodeName)', () => {
  it('lists every chip of the fault nodes by SuperPod, with the job\'s other nodes of that SuperPod', () => {
    const p = forceReleasePlan(input());
    expect(p.write && encodeFaultJobEntry(p.entry)).toBe('{"0":{"SdIds":["100","101"],"FaultNodes":{"node-a":{}},"NodeNames":["node-b"],"FaultTimes":1700000000,"JobId":"uid-1"}}');
  });

  it('a SuperPod with fault nodes and no other node of the job has NodeNames null; FaultNodes lists all fault nodes', () => {
    const p = forceReleasePlan(input({ faultPodRanks: [0, 2] }));
    expect(p.write && encodeFaultJobEntry(p.entry)).toBe('{"0":{"SdIds":["100","101"],"FaultNodes":{"node-a":{},"node-c":{}},"NodeNames":["node-b"],"FaultTimes":1700000000,"JobId":"uid-1"},'
      + '"1":{"SdIds":["200"],"FaultNodes":{"node-a":{},"node-c":{}},"NodeNames":null,"FaultTimes":1700000000,"JobId":"uid-1"}}');
  });

  it('no entry: a pod outside any SuperPod, no other node, or no fault node in a SuperPod', () => {
    expect(forceReleasePlan(input({ servers: [...input().servers, { podRank: 3, node: 'node-d', superPodId: -1 }] })).write).toBe(false);
    expect(forceReleasePlan(input({ faultPodRanks: [0, 1, 2] })).write).toBe(false);
    expect(forceReleasePlan(input({ superPodNodes: [] })).write).toBe(false);
  });
});

describe('fault-job-info operations (CreateOrUpdateSuperPodFaultInfo, runRecoverFaultJobInfoCmTask)', () => {
  const nodes = (v: string) => (v === 'bad' ? undefined : new Set(v.split(',')));
  const pub = (jobId: string, value: string): FaultJobInfoOp => ({ kind: 'publish', jobId, value, dueMs: 0 });
  const clr = (jobId: string, node = ''): FaultJobInfoOp => ({ kind: 'clear', jobId, node, cause: node === '' ? 'recover-success' : 'reschedule-in-place', dueMs: 0 });

  it('a publish creates the ConfigMap (job not marked updated) or updates it (marked); a clear drops the key', () => {
    const created = applyFaultJobInfoOps(undefined, [pub('j1', 'a'), pub('j2', 'b')], new Set(), nodes);
    expect(created.data).toEqual({ j1: 'a', j2: 'b' });
    expect([...created.updated]).toEqual(['j2']);
    const cleared = applyFaultJobInfoOps(created.data, [clr('j2'), clr('j3')], created.updated, nodes);
    expect(cleared.data).toEqual({ j1: 'a' });
    expect(cleared.updated.size).toBe(0);
    expect(cleared.outcomes.map((o) => o.outcome)).toEqual(['cleared', 'no-entry']);
    expect(applyFaultJobInfoOps(undefined, [clr('j1')], new Set(), nodes).data).toBeUndefined();
  });

  it('a reschedule-in-place clear needs the node among the entry\'s fault nodes', () => {
    const r = applyFaultJobInfoOps({ j1: 'n1,n2', j2: 'bad' }, [clr('j1', 'n3'), clr('j2', 'n1'), clr('j1', 'n2')], new Set(), nodes);
    expect(r.outcomes.map((o) => o.outcome)).toEqual(['not-a-fault-node', 'unreadable-entry', 'cleared']);
    expect(r.data).toEqual({ j2: 'bad' });
  });

  it('waits: 10 s, and 70 s for a reschedule-in-place of a job whose entry created the ConfigMap', () => {
    expect(clearDelayMs('recover-success', false)).toBe(10_000);
    expect(clearDelayMs('podgroup-deleted', false)).toBe(10_000);
    expect(clearDelayMs('reschedule-in-place', true)).toBe(10_000);
    expect(clearDelayMs('reschedule-in-place', false)).toBe(70_000);
  });

  it('the prune keeps known jobs only', () => {
    expect(pruneFaultJobInfo({ a: '1', b: '2' }, (j) => j === 'a')).toEqual({ data: { a: '1' }, dropped: ['b'] });
  });
});
