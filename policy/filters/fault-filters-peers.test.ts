/** Which nodes the cluster-info reconciler re-renders with a changed node (recover-in-place jobs). */
import { fakeSources, pod, podGroup } from '../../test/support/fault-filters-fakes.ts';
import { recoverInPlacePeers } from './fault-filters-peers.ts';

function world() {
  // The sources' one job index, as the Manager hands it to recoverInPlacePeers.
  const { pods, podGroups, sources } = fakeSources();
  const index = sources.jobIndex.index;
  const job = (name: string, uid: string, nodes: string[], meta: Parameters<typeof podGroup>[3] = {}) => {
    podGroups.put(podGroup('team', name, uid, meta));
    nodes.forEach((n, rank) => pods.put(pod('team', name, uid, rank, n, ['Ascend910-0'])));
  };
  return { index, job };
}

describe('recoverInPlacePeers', () => {
  it('names every node of a recover-in-place job on the changed nodes, and nothing for other jobs', () => {
    const w = world();
    w.job('rip', 'u1', ['n1', 'n2', 'n3'], { labels: { 'process-recover-enable': 'on' }, annotations: { 'recover-strategy': 'recover-in-place,recover' } });
    w.job('plain', 'u2', ['n4', 'n5']);
    w.job('off', 'u3', ['n6', 'n7'], { labels: { 'process-recover-enable': 'off' }, annotations: { 'recover-strategy': 'recover-in-place' } });
    expect(recoverInPlacePeers(w.index, ['n2'])).toEqual(new Set(['n1', 'n2', 'n3']));
    expect(recoverInPlacePeers(w.index, ['n4', 'n6'])).toEqual(new Set());
    expect(recoverInPlacePeers(w.index, ['nowhere'])).toEqual(new Set());
  });
});
