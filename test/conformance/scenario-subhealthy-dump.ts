/**
 * A sub-healthy job with `subHealthyStrategy=graceExit` whose only recover strategies are `dump,exit`:
 * the job of scenario-process-recovery.ts with that PodGroup label. A SubHealthFault (81A3880C) on
 * rank 3's chip makes ClusterD dump (shouldDumpWhenOccurFault and skipHandleSubHealthyFaults in
 * component/clusterd/pkg/application/recover/controller.go, fault_recover_service.go): saveAndExit,
 * MindIO's dump result, dump-success and changeStrategy exit dump_exit. Every signal, answer,
 * reset-config version and the PodGroup's ProcessRecoverStatus are compared after each step.
 */
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Scenario } from './runner.ts';
import { chipFault, exchange, jobObjects, recoverChip, startTaskdClient } from './scenario-process-recovery.ts';

/** A saveAndExit came and the dump-exit changeStrategy followed. */
const dumpExited = (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && e.signalType === 'saveAndExit');
  return i >= 0 && ev.slice(i).some((e) => e.event === 'signal' && e.signalType === 'changeStrategy' && e.changeStrategy === 'exit');
};

export const SUBHEALTHY_DUMP: Scenario = {
  name: 'subhealthy-dump',
  nodes: [{ name: 'node-a' }, { name: 'node-b' }],
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [...[...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]), ...jobObjects('dump,exit', {}, { subHealthyStrategy: 'graceExit' })],
  steps: [
    { name: 'TaskD client inits, registers, subscribes', perSide: (ctx) => startTaskdClient(ctx, ['-strategies=dump,exit'], '-subhealthy-dump') },
    { name: 'SubHealthFault 81A3880C on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '81A3880C', now)] },
    { name: 'exchange until dump_exit', perSide: (ctx) => exchange(ctx, dumpExited, 90_000) },
    { name: 'nothing written for 30 s (after the dump)', ms: 30_000 },
    { name: 'sub-health fault recovered', writes: (w, now) => [recoverChip(w, 'node-b', 1, now)] },
  ],
};
