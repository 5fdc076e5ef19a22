/**
 * Faults as the scenarios use them: inject through the device plugin simulator (the apiserver's
 * answer to its device-info write is time zero), wait for each thing the controller does about it,
 * and undo them (recover, wait until cluster-info is clean, bring the jobs' pods back).
 */
import type { BenchCluster } from './cluster.ts';
import { jobKey, type JobSpec } from './fixtures.ts';

/** SeparateNPU chip fault: the chip leaves `<P>`, jobs on it are rescheduled. */
export const CHIP_CODE = '80E18402';
/** A3 switch fault at level Separate (docs/formats.md#switch-fault-code-json). */
export const SWITCH_CODE = '[0x00f103b0,155904,na,na]';

export type Fault = { readonly kind: 'chip'; readonly node: string; readonly chip: string } | { readonly kind: 'switch'; readonly node: string };

export interface Injected {
  readonly fault: Fault;
  readonly ackMs: number;
  /**
   * When the write was sent. A decision logged after it belongs to this fault even when it comes
   * before the bench has handled the apiserver's answer (a quiet job is decided at once: under load
   * the decision can precede `ackMs`; its latency then counts as 0).
   */
  readonly sentMs: number;
  readonly job: JobSpec | undefined;
  /** Pod UIDs of the job when the fault was injected (a recreated pod is not "deleted"). */
  readonly uids: ReadonlyMap<string, string>;
}

export interface Outcome {
  /** cluster-info-device-* (or -switch-*) shows the fault. */
  readonly clusterInfoMs: number;
  /** The `job decision` log line (jobs controller), else the cluster-info write. */
  readonly decisionMs: number;
  readonly vcjobMs: number | undefined;
  readonly podsDeletedMs: number | undefined;
}

export async function inject(c: BenchCluster, fault: Fault): Promise<Injected> {
  const job = c.fleet.jobOf(fault.node);
  const uids = job === undefined ? new Map<string, string>() : c.fleet.podUids(job);
  const sentMs = Date.now();
  const ack = fault.kind === 'chip'
    ? await c.dp.injectChipFault({ node: fault.node, npu: fault.chip, code: CHIP_CODE, level: 'SeparateNPU' })
    : await c.dp.injectSwitchFault({ node: fault.node, code: SWITCH_CODE, level: 'Separate' });
  if (!ack.written) throw new Error(`fault on ${fault.node} changed nothing (already injected?)`);
  return { fault, sentMs, ackMs: ack.atMs, job, uids };
}

export const seen = (c: BenchCluster, f: Fault): number | undefined =>
  f.kind === 'chip' ? c.observer.deviceState(f.node, f.chip) : c.observer.switchState(f.node, true);

/** Absolute times (ms) at which each outcome of one injected fault was seen; NaN when not within timeoutMs. */
export async function awaitOutcome(c: BenchCluster, inj: Injected, timeoutMs: number): Promise<Outcome> {
  const o = c.observer;
  const { fault, job } = inj;
  const ci = o.waitFor(() => seen(c, fault), timeoutMs);
  if (!c.jobsController || job === undefined) {
    const t = await ci;
    return { clusterInfoMs: t, decisionMs: t, vcjobMs: undefined, podsDeletedMs: undefined };
  }
  const [clusterInfoMs, decisionMs, vcjobMs, podsDeletedMs] = await Promise.all([
    ci,
    o.waitFor(() => o.decision(jobKey(job), inj.sentMs, [fault.node]), timeoutMs),
    o.waitFor(() => o.vcjobFaultNode(fault.node, true), timeoutMs),
    o.waitFor(() => o.podsDeleted(job, inj.uids), timeoutMs),
  ]);
  return { clusterInfoMs, decisionMs, vcjobMs, podsDeletedMs };
}

/** Recovers the faults, waits until cluster-info and vcjob-fault-npu-cm are clean again, restores the jobs. */
export async function undo(c: BenchCluster, faults: readonly Fault[], timeoutMs = 120_000): Promise<void> {
  await Promise.all(faults.map((f) => (f.kind === 'chip'
    ? c.dp.recoverChipFault({ node: f.node, kind: 'card' })
    : c.dp.recoverSwitchFault(f.node))));
  const o = c.observer;
  const clean = (f: Fault): boolean =>
    (f.kind === 'chip' ? o.deviceState(f.node, undefined) !== undefined : o.switchState(f.node, false) !== undefined) &&
    (!c.jobsController || o.vcjobFaultNode(f.node, false) !== undefined);
  const t = await o.waitFor(() => (faults.every(clean) ? Date.now() : undefined), timeoutMs);
  if (Number.isNaN(t)) throw new Error(`faults not cleared from cluster-info within ${timeoutMs} ms`);
  const jobs = [...new Set(faults.map((f) => c.fleet.jobOf(f.node)).filter((j): j is JobSpec => j !== undefined))];
  await c.fleet.restore(jobs, timeoutMs);
}
