/**
 * A step that waits, on each side, for its own scheduling-exception check to report a job's entry
 * with a condition (its status or reason, e.g. PodGroupPending, PodPending; at most two of its 10 s checks). The allow-list entry `exception-check-phase` lets
 * an entry be present on one side only at a step's end (each side checks on its own phase); this
 * step makes sure neither side leaves it out for good, and the entries are compared once both are in.
 */
import { paths } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { SCHEDULING_EXCEPTION_CM_NAME } from '../../schemas/scheduling-exception/scheduling-exception.ts';
import { eventually } from '../support/cluster.ts';
import type { Step } from './runner.ts';

/** Two checks and the write's latency. */
const TWO_CHECKS_MS = 25_000;

export function exceptionReported(what: string, jobNames: readonly string[], condition: string): Step {
  return {
    name: `each side's check reports ${what} (${condition})`,
    perSide: async (ctx) => {
      const reported = async (): Promise<boolean> => {
        const cm = await ctx.admin.getOrUndefined<ConfigMap>(paths.configMap('cluster-system', SCHEDULING_EXCEPTION_CM_NAME));
        const data = cm?.data ?? {};
        return jobNames.every((job) => Object.entries(data).some(([k, v]) => k.startsWith(`${job}.`) && v.includes(condition)));
      };
      await eventually(reported, TWO_CHECKS_MS, 250).catch(() => { throw new Error(`${ctx.side}: scheduling-exception-report has no ${condition} entry of ${jobNames.join(', ')} within ${TWO_CHECKS_MS} ms`); });
    },
  };
}
