import type { KubeObject } from '../runtime/kube-client.ts';
import { FakeStore, ownerJobsOf, podGroupOf, podOf } from '../test/support/job-fakes.ts';
import { JobIndex, type JobIndexSources } from './job-index.ts';

const NPUS = ['Ascend910-0'];

/** The victim (team-a/llama uid u1, its Job exists) and a tenant's PodGroup + pod naming u1 from `tenant`. */
function world() {
  const pods = new FakeStore<KubeObject>();
  const groups = new FakeStore<KubeObject>();
  const victim = podGroupOf('team-a', 'llama', 'u1', { 'fault-scheduling': 'force' });
  const forged = podGroupOf('tenant', 'llama', 'u1', { 'fault-scheduling': 'force' });
  groups.put(victim);
  pods.put(podOf('team-a', 'llama', 'u1', 0, 'node-0', NPUS));
  const jobs = ownerJobsOf(groups, new Set(['tenant/llama-u1']));
  const index = new JobIndex({ pods, podGroups: groups, ...jobs } as unknown as JobIndexSources);
  index.applyPodGroup({ type: 'add', obj: victim });
  const addTenant = (): void => {
    groups.put(forged);
    pods.put(podOf('tenant', 'llama', 'u1', 0, 'node-9', NPUS));
    index.applyPodGroup({ type: 'add', obj: forged });
    index.rebuild();
  };
  index.rebuild();
  return { index, groups, forged, addTenant };
}

describe('job index: job identity', () => {
  it('a PodGroup whose owner exists with its namespace, name and UID is a job', () => {
    const w = world();
    expect(w.index.job('team-a/llama-u1')?.view).toMatchObject({ uid: 'u1', name: 'llama', namespace: 'team-a' });
    expect(w.index.jobKeyOfUid('u1')).toBe('team-a/llama-u1');
  });

  it('a PodGroup claiming another namespace\'s job UID is no job: not listed, no view, never the UID\'s job, whichever came first', () => {
    const w = world();
    w.addTenant();
    expect(w.index.job('tenant/llama-u1')).toBeUndefined();
    expect(w.index.jobKeys()).toEqual(['team-a/llama-u1']);
    expect(w.index.jobHeaders().map((h) => h.key)).toEqual(['team-a/llama-u1']);
    expect(w.index.jobKeyOfUid('u1')).toBe('team-a/llama-u1');
    // The victim's pods stay its own; the tenant's pod (other namespace) is not among them.
    expect(w.index.job('team-a/llama-u1')?.view.pods.map((p) => p.node)).toEqual(['node-0']);
    // The tenant's PodGroup going away leaves the victim the UID's job.
    w.groups.remove(w.forged);
    w.index.applyPodGroup({ type: 'delete', obj: w.forged });
    expect(w.index.jobKeyOfUid('u1')).toBe('team-a/llama-u1');
  });

  it('a pod in the job\'s namespace naming its UID under another owner name does not join it', () => {
    const w = world();
    const stray = podOf('team-a', 'other', 'u1', 1, 'node-1', NPUS);
    w.index.apply({ type: 'add', obj: stray });
    expect(w.index.job('team-a/llama-u1')?.view.pods.map((p) => p.name)).toEqual(['llama-worker-0']);
  });
});

describe('job index: a Volcano Job between its PodGroups (RestartJob)', () => {
  const UID = '0f6a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
  const KEY = `team-a/llama-${UID}`;
  function restarting(phase: string | undefined) {
    const pods = new FakeStore<KubeObject>();
    const groups = new FakeStore<KubeObject>();
    const vcJobs = new FakeStore<KubeObject>();
    const pg = podGroupOf('team-a', 'llama', UID, { 'fault-scheduling': 'grace', 'fault-retry-times': '2' }, 2);
    groups.put(pg);
    vcJobs.put({
      apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job',
      metadata: { namespace: 'team-a', name: 'llama', uid: UID, labels: { 'fault-scheduling': 'grace', 'fault-retry-times': '2' }, annotations: { 'recover-strategy': 'retry' } },
      spec: { minAvailable: 2 }, ...(phase === undefined ? {} : { status: { state: { phase } } }),
    });
    pods.put(podOf('team-a', 'llama', UID, 0, 'node-0', NPUS));
    const index = new JobIndex({ pods, podGroups: groups, vcJobs, ascendJobs: new FakeStore<KubeObject>() } as unknown as JobIndexSources);
    index.applyPodGroup({ type: 'add', obj: pg });
    index.rebuild();
    // Volcano's killJob deletes the PodGroup.
    groups.remove(pg);
    index.applyPodGroup({ type: 'delete', obj: pg });
    return index;
  }

  it('while Volcano restarts the Job (PodGroup deleted, Job Restarting or Pending), the job stays: same UID, knobs and minAvailable from the Job, its pods', () => {
    for (const phase of ['Restarting', 'Pending']) {
      const e = restarting(phase).job(KEY);
      expect(e?.view).toMatchObject({ uid: UID, name: 'llama', namespace: 'team-a', minAvailable: 2 });
      expect(e?.knobs).toMatchObject({ faultScheduling: 'grace', faultRetryTimes: 2 });
      expect(e?.view.pods.map((p) => p.node)).toEqual(['node-0']);
    }
  });

  it('a Job that finished (Completed, Failed, Aborted) or has no phase yet is gone with its PodGroup', () => {
    for (const phase of ['Completed', 'Failed', 'Aborted', undefined]) expect(restarting(phase).job(KEY)).toBeUndefined();
  });

  it('live job keys (what job-reschedule-reason keeps) hold a restarting Job, not a finished one', () => {
    expect(restarting('Restarting').liveJobKeys().has(KEY)).toBe(true);
    expect(restarting('Pending').liveJobKeys().has(KEY)).toBe(true);
    expect(restarting('Completed').liveJobKeys().has(KEY)).toBe(false);
  });
});
