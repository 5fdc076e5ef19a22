import type { JobSummaryState } from '../policy/jobs/job-summary.ts';
import { EMPTY_RANK_TABLE } from '../schemas/job-summary/job-summary.ts';
import { jobBatches, signalOfChange } from './grpc-job.ts';

const state = (over: Partial<JobSummaryState> = {}): JobSummaryState => ({
  name: 'train', framework: 'pytorch', key: 'uid-1', status: 'pending', addTimeSec: 100, sid: 's', totalCmNum: 1, sharedTorIp: '10.0.0.9', masterAddr: '10.0.0.1',
  namespace: 'ns', pgName: 'pg', jobType: 'Job', resourceType: 'huawei.com/Ascend910', replicas: 1, isPreDelete: false, deleteTimeSec: 0, rankTable: EMPTY_RANK_TABLE,
  ...over,
});
const table = { status: 'complete', servers: [{ devices: [{ deviceId: '0', deviceIp: 'x', rankId: '0', superDeviceId: '' }], serverId: 'a', hostIp: 'a', superPodId: -1, serverName: '', serverSn: '', podName: 'p', containerIds: null }], serverCount: '1', total: 1 } as unknown as JobSummaryState['rankTable'];

describe('job.Job signals of job summary transitions (ClusterD jobv2/processor.go)', () => {
  it('pending: add with the initializing hccl.json; running: add with the rank table; pre-delete: delete; removal: none', () => {
    const pending = signalOfChange({ key: 'uid-1', prev: undefined, next: state() }, 500, 'u1')!;
    expect(pending).toEqual({
      uuid: 'u1', jobId: 'uid-1', jobName: 'train', namespace: 'ns', frameWork: 'pytorch', jobStatus: 'pending', time: '100', cmIndex: '0', total: '1',
      HcclJson: '{"status":"initializing"}', deleteTime: '', sharedTorIp: '10.0.0.9', masterAddr: '10.0.0.1', operator: 'add', sid: 's',
    });
    const running = signalOfChange({ key: 'uid-1', prev: state(), next: state({ status: 'running', rankTable: table }) }, 500, 'u2')!;
    expect(running).toMatchObject({ operator: 'add', jobStatus: 'running', deleteTime: '' });
    expect(running.HcclJson).toContain('"server_list"');
    const gone = signalOfChange({ key: 'uid-1', prev: state({ status: 'running' }), next: state({ status: 'failed', isPreDelete: true, rankTable: table }) }, 500, 'u3')!;
    expect(gone).toMatchObject({ operator: 'delete', jobStatus: 'failed', deleteTime: '500' });
    expect(signalOfChange({ key: 'uid-1', prev: state(), next: undefined }, 500, 'u4')).toBeUndefined();
    expect(signalOfChange({ key: 'uid-1', prev: undefined, next: state({ framework: 'mindspore' }) }, 500, 'u5')).toMatchObject({ sharedTorIp: '', masterAddr: '' });
  });

  it('List batches: all jobs, NPU-bounded', () => {
    let n = 0;
    const b = jobBatches([state({ key: 'a', rankTable: table }), state({ key: 'b' })], 500, () => `u${++n}`);
    expect(b.map((x) => x.map((s) => s.jobId))).toEqual([['a', 'b']]);
  });
});
