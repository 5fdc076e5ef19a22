/**
 * AscendJobs under the real Ascend Operator, topology A (the MindCluster stack with clusterd-ts in
 * ClusterD's place): vc-scheduler with Huawei's ascend plugin deletes pods and writes
 * vcjob-fault-npu-cm, placing by the cluster-info clusterd-ts publishes; clusterd-ts yields the
 * rescheduling role and drives the hot switch (scenarios: ascendjob-scenarios.ts).
 */
import { describeAscendJobs } from './ascendjob-scenarios.ts';

describeAscendJobs('A');
