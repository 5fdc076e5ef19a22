import { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { FakeConfigMaps } from '../test/support/job-fakes.ts';
import { encodeResetConfigData, parseResetConfigData, type TaskResetInfo } from '../schemas/reset-config/reset-config.ts';
import { reconcileResetConfig } from './job-reset-config.action.ts';

const initial: TaskResetInfo = { RankList: [], UpdateTime: 1_732_180_000, RetryTime: 2, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false };

async function setup(labels: Record<string, string> | undefined) {
  const cms = new FakeConfigMaps();
  if (labels !== undefined) {
    await cms.client().create('/api/v1/namespaces/team-a/configmaps', {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'reset-config-llama', namespace: 'team-a', labels },
      data: { ...encodeResetConfigData(initial), restartType: 'hotReset' },
    } as never);
  }
  const deps = { cached: (ns: string, name: string) => cms.get(ns, name), writer: new ConfigMapWriter(cms.client()) };
  const info = () => {
    const p = parseResetConfigData(cms.get('team-a', 'reset-config-llama')?.data);
    if (!p.ok) throw new Error(p.reason);
    return p.value;
  };
  return { cms, deps, info };
}

describe('reset-config (job-level uses)', () => {
  it('sets GracefulExit with a valid checkCode, drops restartType (the data map replaced, as the plugin), writes nothing twice', async () => {
    const { cms, deps, info } = await setup({ reset: 'true' });
    expect(await reconcileResetConfig(deps, 'team-a', 'llama', { type: 'gracefulExit', value: 1 })).toBe('written');
    expect(await reconcileResetConfig(deps, 'team-a', 'llama', { type: 'gracefulExit', value: 1 })).toBe('unchanged');
    expect(info()).toEqual({ info: { ...initial, GracefulExit: 1 }, checkCode: expect.stringMatching(/^[0-9a-f]{64}$/), restartType: undefined });
    expect(cms.writes.map((w) => w.verb)).toEqual(['create', 'replace']);
  });

  it('after a pod-level reschedule: RankList=[], RetryTime as resolved, restartType podReschedule (idempotent)', async () => {
    const { deps, info } = await setup({ reset: 'true' });
    const change = { type: 'podRescheduled', retryTime: 3, updateTimeS: 1_732_190_000 } as const;
    await reconcileResetConfig(deps, 'team-a', 'llama', change);
    expect(await reconcileResetConfig(deps, 'team-a', 'llama', change)).toBe('unchanged');
    expect(info()).toMatchObject({ info: { ...initial, RetryTime: 3, UpdateTime: 1_732_190_000 }, restartType: 'podReschedule' });
  });

  it('never creates the ConfigMap and leaves one without label reset=true alone', async () => {
    const none = await setup(undefined);
    expect(await reconcileResetConfig(none.deps, 'team-a', 'llama', { type: 'gracefulExit', value: 1 })).toBe('absent');
    expect(none.cms.writes).toEqual([]);
    const unlabelled = await setup({ app: 'x' });
    expect(await reconcileResetConfig(unlabelled.deps, 'team-a', 'llama', { type: 'gracefulExit', value: 1 })).toBe('absent');
    expect(unlabelled.cms.writes).toHaveLength(1);
  });
});
