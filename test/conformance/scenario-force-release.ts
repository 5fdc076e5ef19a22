/**
 * SuperPod IPC force release (docs/rules.md#recover.force-release, #recover.fault-job-info-clear): the
 * job of scenario-process-recovery.ts (rank pods on node-a and node-b, the device plugin's allocation
 * annotation, whose absent `super_pod_id` reads as 0) on A3 nodes of SuperPod 0: the Nodes carry the
 * device plugin's `superPodID`, `serverIndex`, `serverType=A3` and `baseDeviceInfos`, device-info
 * its SuperPodID and ServerIndex. The PodGroup allows recover, so a chip fault takes the stopTrain /
 * globalFault path; MindIO offers dump and exit only, so no recover success clears the entry.
 *
 * Compared: `cluster-system/fault-job-info` as both sides leave it after each step (ClusterD lists a
 * node's SuperPod device IDs in Go map order, normalise.ts rule 10), and a record of each side's
 * first entry and its timing against the client's globalFault (written before it, globalFault about
 * 10 s later: ClusterD's real wait, ours by default). NodeD writes nothing back (ClusterD only waits),
 * so nobody plays it. Then the scenario plays Volcano: `reschedule-in-place=true` on the pod of
 * node-a (no fault node: the entry stays) and on the pod of node-b (the fault node: cleared 70 s
 * later, since the entry created the ConfigMap). Nobody replaces pods (`--rescheduling=false`).
 */
import { paths } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import { sortFaultJobSdIds } from './normalise.ts';
import type { Scenario, SideContext } from './runner.ts';
import type { Write } from './world.ts';
import { chipFault, client, exchange, JOB, jobObjects, NS, startTaskdClient } from './scenario-process-recovery.ts';

const NODES = ['node-a', 'node-b', 'node-c'] as const;
const FJI = paths.configMap('cluster-system', 'fault-job-info');
const SEEN = 'fault-job-info seen';
/** SuperDeviceID of chip c of the node with server index i. */
const sdid = (i: number, c: number): number => i * 16 + c;

/** The device plugin's Node annotations on an A3 node of SuperPod 0. */
const a3Node = (name: string, i: number): Write => ({
  op: 'patch', path: paths.node(name), type: 'merge',
  body: { metadata: { annotations: {
    superPodID: '0', serverIndex: String(i), serverType: 'A3',
    baseDeviceInfos: JSON.stringify(Object.fromEntries(Array.from({ length: 8 }, (_, c) => [`Ascend910-${c}`, { IP: `192.168.${i}.${c}`, SuperDeviceID: sdid(i, c) }]))),
  } } },
});

const rescheduleInPlace = (rank: number): Write => ({ op: 'patch', path: paths.pod(NS, `${JOB}-worker-${rank}`), type: 'merge', body: { metadata: { annotations: { 'reschedule-in-place': 'true' } } } });

/** A saveAndExit came and the dump-exit changeStrategy followed. */
const dumpExited = (ev: readonly ClientEvent[]): boolean => {
  const i = ev.findIndex((e) => e.event === 'signal' && e.signalType === 'saveAndExit');
  return i >= 0 && ev.slice(i).some((e) => e.event === 'signal' && e.signalType === 'changeStrategy' && e.changeStrategy === 'exit');
};

/**
 * Polls the side's fault-job-info every 100 ms for the job's first entry and records it with its
 * timing: before globalFault or not, and how long before.
 */
async function watchEntry(ctx: SideContext): Promise<void> {
  const jobUid = (await ctx.admin.get<{ metadata?: { uid?: string } }>(paths.vcJob(NS, JOB))).metadata!.uid!;
  const seen: { atMs?: number; text?: string } = {};
  ctx.state.set(SEEN, seen);
  let on = true;
  const loop = (async () => {
    while (on && seen.atMs === undefined) {
      const text = (await ctx.admin.getOrUndefined<ConfigMap>(FJI).catch(() => undefined))?.data?.[jobUid];
      if (text !== undefined) Object.assign(seen, { atMs: Date.now(), text });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  ctx.cleanups.push(async () => { on = false; await loop; });
  ctx.records.set('fault-job-info first entry', (): Record<string, string> => {
    if (seen.atMs === undefined) return { entry: '(none)' };
    const global = client(ctx).signals.find((s) => s.signalType === 'globalFault');
    const gap = global === undefined ? undefined : global.t - seen.atMs;
    return {
      entry: sortFaultJobSdIds(seen.text!),
      'before globalFault': gap === undefined ? 'no globalFault' : String(gap > 0),
      'globalFault after': gap === undefined ? '-' : gap >= 9_000 && gap < 13_000 ? 'about 10 s' : `${Math.round(gap / 1000)} s`,
    };
  });
}

export const FORCE_RELEASE: Scenario = {
  name: 'force-release',
  nodes: NODES.map((name, i) => ({ name, superPodId: 0, serverIndex: i })),
  ourFlags: ['--rescheduling=false'],
  setup: (w, now) => [
    ...NODES.flatMap((n, i) => [...w.createNode(n, now), a3Node(n, i), w.deviceInfo(n, now)]),
    ...jobObjects('recover,dump,exit'),
  ],
  steps: [
    {
      name: 'TaskD client inits, registers, subscribes (MindIO offers dump and exit)',
      perSide: async (ctx) => {
        await startTaskdClient(ctx, ['-strategies=dump,exit'], '-force-release');
        await watchEntry(ctx);
      },
    },
    { name: 'chip fault 80E18402 on node-b chip 1 (rank 3)', writes: (w, now) => [chipFault(w, 'node-b', 1, '80E18402', now)] },
    { name: 'exchange after the chip fault', perSide: (ctx) => exchange(ctx, dumpExited, 90_000) },
    // Volcano places rank 0's pod back on node-a, no fault node: nothing to clear (70 s later).
    { name: 'reschedule-in-place=true on the pod of node-a', writes: () => [rescheduleInPlace(0)] },
    // Rank 1's pod back on node-b, the fault node: ClusterD clears the entry 10 s + 60 s later (the
    // entry created the ConfigMap, so the job is not one it "refreshed").
    { name: 'reschedule-in-place=true on the pod of node-b', writes: () => [rescheduleInPlace(1)] },
    { name: 'entry still there 60 s later', waitSince: 'reschedule-in-place=true on the pod of node-b', ms: 60_000 },
    { name: 'entry cleared 70 s later', waitSince: 'reschedule-in-place=true on the pod of node-b', ms: 78_000 },
  ],
};
