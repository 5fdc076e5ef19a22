/**
 * Nodes whose scheduler view reads other nodes' faults. The recover-in-place filter (docs/rules.md#filter.recover-in-place, policy/filters/fault-filters.ts `otherNode`) judges a node's L2/L3 fault from every rank of its job, so a
 * fault change on one node of such a job can change what the job's other nodes show although the
 * intake reports only the node that changed. The cluster-info reconciler re-renders these peers with
 * the nodes the intake names (its cache would otherwise keep their old entries).
 */
import type { JobLookup } from '../jobs/job-facts.ts';
import { jobNodes } from '../jobs/job-view.ts';

/** Every node of the recover-in-place jobs (the same knobs as controllers/fault-filters.controller.ts) with a pod on `nodes`. */
export function recoverInPlacePeers(index: JobLookup, nodes: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const key of index.jobKeysOnNodes(nodes)) {
    const e = index.job(key);
    if (e === undefined || e.knobs.processRecoverEnable !== 'on' || !e.knobs.recoverStrategies.includes('recover-in-place')) continue;
    for (const n of jobNodes(e.view)) out.add(n);
  }
  return out;
}
