import { ApiError, type KubeClient } from '../runtime/kube-client.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { Metrics } from '../telemetry/metrics.ts';
import type { PendingDecision } from '../schemas/job-state/job-state.ts';
import { JobActionExecutor, type PendingRecord } from './job-action-executor.ts';

/** Pods by name; DELETE answers 200 once, then 404 (the apiserver's view of a force delete). */
function podsClient(names: string[]): KubeClient {
  const live = new Set(names);
  return {
    async delete(path: string) {
      const name = path.split('/').pop()!;
      if (!live.delete(name)) throw new ApiError('DELETE', path, 404, { reason: 'NotFound' });
      return {};
    },
  } as unknown as KubeClient;
}

const decision: PendingDecision = {
  decisionId: 'u1/g1/start/x', atMs: 1_000, kind: 'job', phase: 'start', chain: 'c', faultSinceMs: 0,
  actions: [
    { type: 'forceDeletePods', pods: [{ name: 'w-0', uid: 'p0' }, { name: 'w-1', uid: 'p1' }], reasons: [] },
    { type: 'recordRescheduleReason', atMs: 1_000, tasks: [] },
  ],
};
const job = { key: 'ns/w-u1', namespace: 'ns', name: 'w', uid: 'u1' };
const counted = async (m: Metrics): Promise<number> => (await m.reschedules.get()).values.reduce((n, v) => n + v.value, 0);

describe('job action executor: a first run does not wait for its reason record', () => {
  it('counts the restart once the record landed', async () => {
    const metrics = new Metrics({ processMetrics: false });
    let landed!: (v: boolean) => void;
    const reasons = { add: (_r: PendingRecord) => new Promise<boolean>((res) => { landed = res; }) };
    const ex = new JobActionExecutor({ client: podsClient(['w-0', 'w-1']), log: silentLogger, metrics, now: () => 2_000, reasons, resetConfig: {} as never, handOff: async () => undefined });
    const s = await ex.run(job, decision, { replay: false, signal: new AbortController().signal });
    expect({ deleted: s.deleted, counted: await counted(metrics) }).toEqual({ deleted: ['w-0', 'w-1'], counted: 0 });
    landed(true);
    expect(await s.recording).toBe(true);
    expect(await counted(metrics)).toBe(1);
  });

  it('a record whose write failed: the replay that adds it counts the restart, so it is counted once', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const client = podsClient(['w-0', 'w-1']);
    let calls = 0;
    const reasons = { add: async (_r: PendingRecord) => { calls++; if (calls === 1) throw new Error('apiserver gone'); return true; } };
    const ex = new JobActionExecutor({ client, log: silentLogger, metrics, now: () => 2_000, reasons, resetConfig: {} as never, handOff: async () => undefined });
    const first = await ex.run(job, decision, { replay: false, signal: new AbortController().signal });
    await expect(first.recording).rejects.toThrow('apiserver gone');
    expect(await counted(metrics)).toBe(0);
    const replay = await ex.run(job, decision, { replay: true, signal: new AbortController().signal });
    expect({ deleted: replay.deleted, gone: replay.alreadyGone }).toEqual({ deleted: [], gone: ['w-0', 'w-1'] });
    expect(await replay.recording).toBe(true); // not waited for by the replay either: the clear is held on it
    expect(await counted(metrics)).toBe(1);
  });
});
