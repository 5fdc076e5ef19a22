/** The sources' one job index: each event applied once, before its readers hear of it, in their order. */
import { fakeSources, pod, podGroup } from '../../test/support/fault-filters-fakes.ts';

describe('JobIndexFeed', () => {
  it('applies each pod and PodGroup event once, whatever the number of readers, and every reader sees the index after it, in subscription order', () => {
    const { pods, podGroups, sources } = fakeSources();
    const feed = sources.jobIndex;
    const heard: string[] = [];
    // Four readers, as the filters, relation faults, jobs and recovery flows subscribe.
    for (const reader of ['filters', 'relations', 'jobs', 'recovery']) {
      feed.pods$.subscribe(({ keys }) => heard.push(`${reader}:${keys.join()}:${feed.index.job(keys[0]!)?.view.pods.length ?? 'none'}`));
      feed.podGroups$.subscribe((ev) => heard.push(`${reader}:pg:${feed.index.jobKeyOfUid(ev.obj.metadata?.ownerReferences?.[0]?.uid ?? '') ?? 'none'}`));
    }
    podGroups.put(podGroup('team-a', 'llama', 'u1'));
    pods.put(pod('team-a', 'llama', 'u1', 0, 'n1', ['Ascend910-0']));
    expect(feed.index.eventsApplied).toEqual({ pods: 1, podGroups: 1 });
    expect(heard).toEqual([
      'filters:pg:team-a/llama-u1', 'relations:pg:team-a/llama-u1', 'jobs:pg:team-a/llama-u1', 'recovery:pg:team-a/llama-u1',
      'filters:team-a/llama-u1:1', 'relations:team-a/llama-u1:1', 'jobs:team-a/llama-u1:1', 'recovery:team-a/llama-u1:1',
    ]);
    feed.stop();
    pods.put(pod('team-a', 'llama', 'u1', 1, 'n2', ['Ascend910-0']));
    expect(feed.index.eventsApplied.pods).toBe(1);
  });

  it('indexes events that come before any reader subscribes (the initial lists)', () => {
    const { pods, podGroups, sources } = fakeSources();
    podGroups.put(podGroup('team-a', 'llama', 'u1'));
    pods.put(pod('team-a', 'llama', 'u1', 0, 'n1', ['Ascend910-0']));
    expect(sources.jobIndex.index.job('team-a/llama-u1')?.view.pods.map((p) => p.node)).toEqual(['n1']);
    expect(sources.jobIndex.index.jobKeyOfUid('u1')).toBe('team-a/llama-u1');
  });
});
