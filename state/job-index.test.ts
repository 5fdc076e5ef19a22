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

describe('job index: the last complete placement (ClusterD PreServerList)', () => {
  const KEY = 'team-a/llama-u1';
  function twoRanks(keepPlacements = true, withPods = true) {
    const pods = new FakeStore<KubeObject>();
    const groups = new FakeStore<KubeObject>();
    const pg = podGroupOf('team-a', 'llama', 'u1', { 'process-recover-enable': 'on' }, 2);
    groups.put(pg);
    const index = new JobIndex({ pods, podGroups: groups, ...ownerJobsOf(groups) } as unknown as JobIndexSources, 'annotation', { keepPlacements });
    index.applyPodGroup({ type: 'add', obj: pg });
    const add = (p: KubeObject): void => { pods.put(p); index.apply({ type: 'add', obj: p }); };
    const update = (p: KubeObject): void => { const old = pods.get(`${p.metadata!.namespace}/${p.metadata!.name}`)!; pods.put(p); index.apply({ type: 'update', old, obj: p }); };
    const del = (p: KubeObject): void => { pods.remove(p); index.apply({ type: 'delete', obj: p }); };
    const r0 = podOf('team-a', 'llama', 'u1', 0, 'node-0', ['Ascend910-0', 'Ascend910-1']);
    const r1 = podOf('team-a', 'llama', 'u1', 1, 'node-1', ['Ascend910-2', 'Ascend910-3']);
    if (withPods) { add(r0); add(r1); }
    return { index, groups, pg, add, update, del, r0, r1 };
  }
  /** A pod of rank `rank` requesting 2 NPUs (it counts only once its chips are allocated). */
  const asking = (rank: number, node: string | undefined, npus: string[], podUid?: string): KubeObject => {
    const p = podOf('team-a', 'llama', 'u1', rank, node, npus, podUid === undefined ? {} : { podUid });
    return { ...p, spec: { ...(p as { spec?: object }).spec, containers: [{ name: 'train', resources: { limits: { 'huawei.com/Ascend910': '2' } } }] } } as KubeObject;
  };
  const placed = (index: JobIndex) => index.job(KEY, { placement: true })?.placement?.pods.map((p) => [p.rank, p.name, p.uid, p.node, p.npus.join(',')]);

  it('a deleted pod keeps its rank, node and chips in the job until the job is complete again', () => {
    const w = twoRanks();
    expect(placed(w.index)).toEqual([[0, 'llama-worker-0', 'llama-0-uid', 'node-0', 'Ascend910-0,Ascend910-1'], [1, 'llama-worker-1', 'llama-1-uid', 'node-1', 'Ascend910-2,Ascend910-3']]);
    // The scheduler deletes rank 1 before anyone read the job since it was complete.
    const w2 = twoRanks();
    w2.del(w2.r1);
    expect(w2.index.job(KEY)?.view.pods.map((p) => p.name)).toEqual(['llama-worker-0']);
    expect(placed(w2.index)?.[1]).toEqual([1, 'llama-worker-1', 'llama-1-uid', 'node-1', 'Ascend910-2,Ascend910-3']);
    // Its node still maps to the job for placement readers, not for readers of the current pods.
    expect([...w2.index.jobKeysOnNodes(['node-1'], true)]).toEqual([KEY]);
    expect([...w2.index.jobKeysOnNodes(['node-1'])]).toEqual([]);
    // The replacement, pending and then placed without chips, does not complete the job: the old placement stays.
    w2.add(asking(1, undefined, [], 'llama-1-new'));
    w2.update(asking(1, 'node-2', [], 'llama-1-new'));
    expect(placed(w2.index)?.[1]).toEqual([1, 'llama-worker-1', 'llama-1-uid', 'node-1', 'Ascend910-2,Ascend910-3']);
    // Chips allocated: the job is complete again and the new placement replaces the old.
    w2.update(asking(1, 'node-2', ['Ascend910-5', 'Ascend910-6'], 'llama-1-new'));
    expect([...w2.index.jobKeysOnNodes(['node-1'], true)]).toEqual([]);
    expect(placed(w2.index)?.[1]).toEqual([1, 'llama-worker-1', 'llama-1-new', 'node-2', 'Ascend910-5,Ascend910-6']);
    expect([...w2.index.jobKeysOnNodes(['node-2'], true)]).toEqual([KEY]);
  });

  it('a pod marked for deletion, then deleted, leaves the placement as it was before the mark', () => {
    const w = twoRanks();
    const marked: KubeObject = { ...w.r1, metadata: { ...w.r1.metadata!, deletionTimestamp: '2030-01-01T00:00:00Z' } as KubeObject['metadata'] };
    w.update(marked);
    w.del(marked);
    expect(placed(w.index)?.map((p) => p[3])).toEqual(['node-0', 'node-1']);
  });

  it('a job never complete has no placement; a pod that asks for NPUs counts only once its chips are allocated', () => {
    const w = twoRanks(true, false);
    w.add(w.r0);
    expect(w.index.job(KEY, { placement: true })?.placement).toBeUndefined();
    w.add(asking(1, 'node-1', []));
    expect(w.index.job(KEY, { placement: true })?.placement).toBeUndefined();
    w.update(asking(1, 'node-1', ['Ascend910-2', 'Ascend910-3']));
    expect(placed(w.index)?.map((p) => p[3])).toEqual(['node-0', 'node-1']);
  });

  it('the placement goes with the job (its PodGroup deleted), and an index that does not keep placements has none', () => {
    const w = twoRanks();
    w.del(w.r1);
    w.groups.remove(w.pg);
    w.index.applyPodGroup({ type: 'delete', obj: w.pg });
    expect(w.index.placement(KEY)).toBeUndefined();
    expect([...w.index.jobKeysOnNodes(['node-1'], true)]).toEqual([]);
    const off = twoRanks(false);
    off.del(off.r1);
    expect(off.index.job(KEY, { placement: true })?.placement).toBeUndefined();
    expect([...off.index.jobKeysOnNodes(['node-1'], true)]).toEqual([]);
  });

  it('without a minMember, the pods left after a deletion are no smaller complete job', () => {
    const pods = new FakeStore<KubeObject>();
    const groups = new FakeStore<KubeObject>();
    const pg = podGroupOf('team-a', 'llama', 'u1', {});
    groups.put(pg);
    const index = new JobIndex({ pods, podGroups: groups, ...ownerJobsOf(groups) } as unknown as JobIndexSources, 'annotation', { keepPlacements: true });
    const r = [0, 1].map((rank) => podOf('team-a', 'llama', 'u1', rank, `node-${rank}`, [`Ascend910-${rank}`]));
    for (const p of r) { pods.put(p); index.apply({ type: 'add', obj: p }); }
    pods.remove(r[1]!);
    index.apply({ type: 'delete', obj: r[1]! });
    // Looked at afresh (a rebuild recomputes every job), rank 0 alone is no complete job.
    index.rebuild();
    expect(placed(index)?.map((p) => p[3])).toEqual(['node-0', 'node-1']);
  });

  it('a job losing all its pods is computed once, not once per pod', () => {
    const pods = new FakeStore<KubeObject>();
    const groups = new FakeStore<KubeObject>();
    const n = 64;
    const pg = podGroupOf('team-a', 'llama', 'u1', {}, n);
    groups.put(pg);
    let reads = 0;
    const counted = { store: pods.store, get: (k: string) => { reads++; return pods.get(k); } };
    const index = new JobIndex({ pods: counted, podGroups: groups, ...ownerJobsOf(groups) } as unknown as JobIndexSources, 'annotation', { keepPlacements: true });
    const all = Array.from({ length: n }, (_, rank) => podOf('team-a', 'llama', 'u1', rank, `node-${rank}`, [`Ascend910-${rank}`]));
    for (const p of all) { pods.put(p); index.apply({ type: 'add', obj: p }); }
    reads = 0;
    for (const p of all) {
      const marked: KubeObject = { ...p, metadata: { ...p.metadata!, deletionTimestamp: '2030-01-01T00:00:00Z' } as KubeObject['metadata'] };
      pods.put(marked);
      index.apply({ type: 'update', old: p, obj: marked });
    }
    for (const p of all) { pods.remove(p); index.apply({ type: 'delete', obj: p }); }
    expect(reads).toBeLessThanOrEqual(2 * n);
    expect(index.placement(KEY)?.pods).toHaveLength(n);
  });
});

describe('job index: one index, read as each reader needs', () => {
  const KEY = 'team-a/llama-u1';
  function world(claims: 'verified' | 'annotation') {
    const pods = new FakeStore<KubeObject>();
    const groups = new FakeStore<KubeObject>();
    const pg = podGroupOf('team-a', 'llama', 'u1', {}, 2);
    groups.put(pg);
    const index = new JobIndex({ pods, podGroups: groups, ...ownerJobsOf(groups) } as unknown as JobIndexSources, claims, { keepPlacements: true });
    index.applyPodGroup({ type: 'add', obj: pg });
    const add = (p: KubeObject): void => { pods.put(p); index.apply({ type: 'add', obj: p }); };
    return { index, add };
  }
  const npusOf = (index: JobIndex, q?: Parameters<JobIndex['job']>[1]) => index.job(KEY, q)?.view.pods.map((p) => p.npus.join(','));

  it('counts AscendReal claims in its own mode unless a read asks for the other (an unrequested claim: verified drops it, annotation keeps it)', () => {
    // podOf's pods request no NPUs: their claims are unverified.
    const v = world('verified');
    v.add(podOf('team-a', 'llama', 'u1', 0, 'node-0', ['Ascend910-0']));
    expect(npusOf(v.index)).toEqual(['']);
    expect(npusOf(v.index, { claims: 'annotation' })).toEqual(['Ascend910-0']);
    expect(npusOf(v.index, { claims: 'verified' })).toEqual(['']);
    const a = world('annotation');
    a.add(podOf('team-a', 'llama', 'u1', 0, 'node-0', ['Ascend910-0']));
    expect(npusOf(a.index)).toEqual(['Ascend910-0']);
    expect(npusOf(a.index, { claims: 'verified' })).toEqual(['']);
  });

  it('only placement reads move the placement: a read of the current pods leaves it where its own readers last saw it', () => {
    const placedRanks = (index: JobIndex) => index.job(KEY, { placement: true })?.placement?.pods.map((p) => p.name);
    /** A second pod claiming rank 1: the job is not complete while it is there. */
    const dup = (w: ReturnType<typeof world>): void => {
      const p = podOf('team-a', 'llama', 'u1', 1, 'node-2', ['Ascend910-0'], { podUid: 'dup' });
      w.add({ ...p, metadata: { ...p.metadata, name: 'llama-worker-1b' } });
    };
    // Complete (ranks 0 and 1), read without placement, then a second rank-1 pod: no complete state was ever read with placement.
    const w = world('annotation');
    for (const r of [0, 1]) w.add(podOf('team-a', 'llama', 'u1', r, `node-${r}`, ['Ascend910-0']));
    expect(w.index.job(KEY)?.placement).toBeUndefined();
    dup(w);
    expect(placedRanks(w.index)).toBeUndefined();
    // The same with a placement read while complete: that placement is kept.
    const p = world('annotation');
    for (const r of [0, 1]) p.add(podOf('team-a', 'llama', 'u1', r, `node-${r}`, ['Ascend910-0']));
    expect(placedRanks(p.index)).toEqual(['llama-worker-0', 'llama-worker-1']);
    dup(p);
    expect(placedRanks(p.index)).toEqual(['llama-worker-0', 'llama-worker-1']);
  });
});
