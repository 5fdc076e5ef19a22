/**
 * docs/rules.md#recover.stress-test, #recover.switch-nic: the request checks, ClusterD's reasons word for word
 * (CD/application/recover/om_service.go), and what a request resolves to on the job's rank table.
 */
import { checkStressTest, checkSwitchNic, rankTable } from './om-checks.ts';
import type { JobPodView } from '../jobs/job-view.ts';

const pod = (rank: number, node: string, npus: string[]): JobPodView => ({ name: `p${rank}`, uid: `u${rank}`, node, rank, npus, phase: 'Running', ready: true });
const servers = rankTable({ pods: [pod(1, 'n2', ['Ascend910-3', 'Ascend910-2']), pod(0, 'n1', ['Ascend910-0', 'Ascend910-1'])] }, 2);
const job = { exists: true, registered: true, servers };

describe('rank table', () => {
  it('orders pods by rank and chips by number: global rank = pod rank x chips + index', () => {
    expect(servers).toEqual([
      { node: 'n1', devices: [{ deviceId: '0', rankId: '0' }, { deviceId: '1', rankId: '1' }] },
      { node: 'n2', devices: [{ deviceId: '2', rankId: '2' }, { deviceId: '3', rankId: '3' }] },
    ]);
  });
});

describe('StressTest checks', () => {
  const req = (stressParam: Record<string, number[] | null>, allNodesOps: number[] = []) => ({ jobId: 'J', stressParam, allNodesOps });
  it.each([
    [{ ...job, exists: false }, req({ n1: [0] }), 'job:J not exist'],
    [{ ...job, registered: false }, req({ n1: [0] }), 'job:J is not registered'],
    [job, req({}), 'stress test node is nil'],
    [job, req({ n1: null }), 'node:n1 stress test ops is nil'],
    [job, req({ n1: [] }), 'node:n1 stress test ops is 0'],
    [job, req({ n9: [0] }), 'node:n9 not exist in job:J'],
    [job, req({ n1: [0, 2] }), 'op:2 not exist in support operation:[0 1]'],
    [job, req({ n1: [1, 1] }), 'node:n1 stress test ops should not repeat'],
    [job, req({}, [0, 0]), 'node:AllNodes stress test ops should not repeat'],
  ])('%#: refused with ClusterD\'s reason', (facts, r, info) => {
    expect(checkStressTest(r, facts)).toEqual({ ok: false, info });
  });

  it('per node: every rank of the node gets the ops', () => {
    const r = checkStressTest(req({ n2: [0, 1] }), job);
    expect(r.ok && r.start.stress).toEqual({ n2: { 2: [0, 1], 3: [0, 1] } });
    expect(r.ok && r.start.rankNode).toEqual({ 0: 'n1', 1: 'n1', 2: 'n2', 3: 'n2' });
  });

  it('allNodesOps: every rank of every node, the per-node map ignored', () => {
    const r = checkStressTest(req({ n9: [5] }, [1]), job);
    expect(r.ok && r.start.stress).toEqual({ n1: { 0: [1], 1: [1] }, n2: { 2: [1], 3: [1] } });
  });
});

describe('SwitchNicTrack checks', () => {
  const facts = { ...job, running: true, superPodId: (n: string) => (n === 'n1' ? 0 : n === 'n2' ? -1 : undefined) };
  const req = (nicOps: Record<string, { dev: string[]; op: boolean[] }>) => ({ jobId: 'J', nicOps });
  it.each([
    [{ ...facts, running: false }, req({ n1: { dev: ['0'], op: [true] } }), 'job:J is not running'],
    [facts, req({ n9: { dev: ['0'], op: [true] } }), 'node:n9 not exist in job:J'],
    [{ ...facts, superPodId: () => undefined }, req({ n1: { dev: ['0'], op: [true] } }), 'node:n1 not exist in job:J'],
    [facts, req({ n1: { dev: ['0', '1'], op: [true] } }), 'dev and op length is not equal'],
    [facts, req({ n1: { dev: [], op: [] } }), 'dev or op is empty'],
    [facts, req({ n1: { dev: ['7'], op: [true] } }), 'device:7 not exist in node:n1'],
    [facts, req({ n2: { dev: ['2'], op: [true] } }), 'node:n2 should operate in superPodID'],
  ])('%#: refused with ClusterD\'s reason', (f, r, info) => {
    expect(checkSwitchNic(r, f)).toEqual({ ok: false, info });
  });

  it('the devices become global ranks with their ops', () => {
    const r = checkSwitchNic(req({ n1: { dev: ['1', '0'], op: [false, true] } }), facts);
    expect(r.ok && { ranks: r.start.switchRanks, ops: r.start.switchOps }).toEqual({ ranks: ['1', '0'], ops: [false, true] });
  });
});
