import type { ConfigMap } from '../runtime/kube-objects.ts';
import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { ApiError, type KubeClient, type KubeObject } from '../runtime/kube-client.ts';
import { encodeResetConfigData, parseResetConfigData, type TaskResetInfo } from '../schemas/reset-config/reset-config.ts';
import { ResetConfigRefused, writeRecoveryResetConfig, type RecoveryResetDeps } from './recovery-reset-config.action.ts';

const NOW = 1_800_000_000_000;
const empty: TaskResetInfo = { RankList: [], UpdateTime: 1, RetryTime: 2, FaultFlushing: false, GracefulExit: 1, RestartFaultProcess: false };

function setUp(info: TaskResetInfo | undefined, opts: { labelled?: boolean; conflicts?: number } = {}) {
  let cm: ConfigMap | undefined = info === undefined ? undefined : {
    metadata: { name: 'reset-config-job', namespace: 'ns', resourceVersion: '1', labels: opts.labelled === false ? {} : { reset: 'true' } },
    data: { ...encodeResetConfigData(info), restartType: 'podReschedule' },
  };
  let conflicts = opts.conflicts ?? 0;
  const writes: ConfigMap[] = [];
  const client = {
    replace: async (_path: string, obj: KubeObject) => {
      if (conflicts-- > 0) throw new ApiError('PUT', _path, 409, {});
      const next = { ...(obj as ConfigMap), metadata: { ...obj.metadata, resourceVersion: String(Number(obj.metadata?.resourceVersion ?? 0) + 1) } };
      writes.push(next);
      cm = next;
      return next;
    },
    create: async () => { throw new Error('reset-config must never be created'); },
  } as unknown as KubeClient;
  const d: RecoveryResetDeps = { cached: () => cm, writer: new ConfigMapWriter(client), now: () => NOW };
  const read = () => parseResetConfigData(cm?.data, { verifyCheckCode: true });
  return { d, writes, read };
}

describe('reset-config writes of the recovery FSM (docs/rules.md#recover.reset-config-writes)', () => {
  it('fault list: ranks with Status fault, Go-compatible checkCode, RetryTime kept, restartType kept, GracefulExit reset', async () => {
    const t = setUp(empty);
    expect(await writeRecoveryResetConfig(t.d, 'ns', 'job', { op: 'fault', rankIds: [2, 3], restartFaultProcess: false })).toBe('written');
    const r = t.read();
    expect(r.ok && r.value.info).toEqual({
      RankList: [2, 3].map((RankId) => ({ RankId, LogicId: 0, Status: 'fault', Policy: '', InitialPolicy: '', ErrorCode: null, ErrorCodeHex: '' })),
      UpdateTime: NOW / 1000, RetryTime: 2, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false,
    });
    expect(r.ok && r.value.restartType).toBe('podReschedule');
  });

  it('flushing, restart-all (RetryTime+1) and clear; a clear of a clear reset.json still moves UpdateTime, as ClusterD', async () => {
    const t = setUp(empty);
    await writeRecoveryResetConfig(t.d, 'ns', 'job', { op: 'notifyFaultFlushing' });
    expect(t.read().ok && (t.read() as { value: { info: TaskResetInfo } }).value.info.FaultFlushing).toBe(true);
    await writeRecoveryResetConfig(t.d, 'ns', 'job', { op: 'restartAllProcess' });
    const r = t.read();
    expect(r.ok && [r.value.info.RetryTime, r.value.info.FaultFlushing]).toEqual([3, false]);
    await writeRecoveryResetConfig(t.d, 'ns', 'job', { op: 'clear' });
    const writes = t.writes.length;
    // Within the same second the bytes are the same: nothing to write.
    expect(await writeRecoveryResetConfig(t.d, 'ns', 'job', { op: 'clear' })).toBe('unchanged');
    expect(t.writes.length).toBe(writes);
    // Later: ClusterD rewrites the cleared file with its clock (setNewTaskInfo), so do we.
    expect(await writeRecoveryResetConfig({ ...t.d, now: () => NOW + 5_000 }, 'ns', 'job', { op: 'clear' })).toBe('written');
    const c = t.read();
    expect(c.ok && [c.value.info.UpdateTime, c.value.info.RankList]).toEqual([(NOW + 5_000) / 1000, []]);
  });

  it('only an existing ConfigMap labelled reset=true is written', async () => {
    expect(await writeRecoveryResetConfig(setUp(undefined).d, 'ns', 'job', { op: 'clear' })).toBe('absent');
    const unlabelled = setUp(empty, { labelled: false });
    expect(await writeRecoveryResetConfig(unlabelled.d, 'ns', 'job', { op: 'notifyFaultFlushing' })).toBe('absent');
    expect(unlabelled.writes).toEqual([]);
  });

  it('refused while the device plugin hot-resets a rank; retried on conflicts (3 tries)', async () => {
    const hot: TaskResetInfo = { ...empty, RankList: [{ RankId: 1, LogicId: 1, Status: 'unrecovered', Policy: 'reset', InitialPolicy: 'reset', ErrorCode: [1], ErrorCodeHex: '0x1' }] };
    await expect(writeRecoveryResetConfig(setUp(hot).d, 'ns', 'job', { op: 'clear' })).rejects.toThrow(ResetConfigRefused);
    expect(await writeRecoveryResetConfig(setUp(empty, { conflicts: 2 }).d, 'ns', 'job', { op: 'notifyFaultFlushing' })).toBe('written');
    await expect(writeRecoveryResetConfig(setUp(empty, { conflicts: 3 }).d, 'ns', 'job', { op: 'notifyFaultFlushing' })).rejects.toThrow(ApiError);
  });
});
