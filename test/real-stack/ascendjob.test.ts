/**
 * AscendJobs under the real Ascend Operator, topology B: the stock vc-scheduler without the ascend
 * plugin, clusterd-ts holding the rescheduling role with the chart's defaults (scenarios and what
 * each proves: ascendjob-scenarios.ts).
 */
import { describeAscendJobs } from './ascendjob-scenarios.ts';

describeAscendJobs('B');
