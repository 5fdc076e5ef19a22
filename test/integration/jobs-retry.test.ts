/**
 * The `fault-retry-times` budget and the job-reschedule-reason history on the real control plane:
 * failed pods restart the job while budget is left and the budget is visible in vcjob-fault-npu-cm;
 * 12 restarts keep 10 records, newest first; a history pushed over 950 KB is trimmed as Volcano does.
 */
import { paths } from '../../runtime/kube-client.ts';
import { eventually } from '../support/cluster.ts';
import { createBarePodGroup, failPod, jobPods, runningWithNpus, vcJob, type PodObj } from '../../tools/job-peer/world.ts';
import {
  encodeRescheduleHistory, parseRescheduleHistory, type RescheduleReason, type RescheduleRecord,
} from '../../schemas/job-reschedule-reason/job-reschedule-reason.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { jobsHarness, runningPods, uidOf, jobState, podGroupEvents, readCm, report, rescheduleReasonAfter, sleep, vcjobFaultNpu } from '../support/jobs-support.ts';

describe('jobs: retry budget and reschedule history', () => {
  const h = jobsHarness();
  const { client } = h;

  /** Fails the pod of `rank`, waits until the job runs again on new pods and the restart is complete. */
  async function failAndWait(ns: string, job: string, jobUid: string, rank: number, pods: number): Promise<PodObj[]> {
    const before = await jobPods(client, ns, job);
    await failPod(client, ns, before[rank]!.metadata!.name!);
    const old = new Set(before.map(uidOf));
    const after = await eventually(async () => {
      const ps = await jobPods(client, ns, job);
      return ps.length === pods && ps.every((p) => !old.has(uidOf(p)) && runningWithNpus(p)) ? ps : undefined;
    }, 20_000);
    await eventually(async () => (await jobState(client, jobUid))?.state.active === undefined, 10_000);
    return after;
  }

  it('a Failed pod with fault-retry-times=2 restarts the job twice, then no more; the budget is visible', async () => {
    const world = await h.startWorld({ nodes: 1, prefix: 'jt1' });
    await h.startManager();
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'bert', replicas: 2, npus: 4, labels: { 'fault-scheduling': 'force', 'fault-retry-times': '2' } }));
    const uid = job.metadata!.uid!;
    const jobKey = `${ns}/bert-${uid}`;
    await runningPods(client, ns, 'bert', 2);
    await eventually(async () => (await vcjobFaultNpu(client)).remainRetryTimes.get(jobKey)?.Times === 2);

    for (const left of [1, 0]) {
      await failAndWait(ns, 'bert', uid, 1, 2);
      await eventually(async () => (await vcjobFaultNpu(client)).remainRetryTimes.get(jobKey)?.Times === left, 10_000);
      report(`pod-failed restart done; remain-retry-times ${jobKey} = ${left}`);
    }
    const last = await jobPods(client, ns, 'bert');
    await failPod(client, ns, last[1]!.metadata!.name!);
    await eventually(async () => (await podGroupEvents(client, ns, `bert-${uid}`)).some((e) => e.reason === 'FaultNoAction' && (e.message ?? '').includes('retry budget exhausted')), 10_000);
    await sleep(2_000);
    const now = await jobPods(client, ns, 'bert');
    expect(now.map(uidOf)).toEqual(last.map(uidOf));
    expect(now[1]?.status?.phase).toBe('Failed');
    expect(world.peer.statsOf('bert').restarts).toBe(4);
    expect((await vcjobFaultNpu(client)).remainRetryTimes.get(jobKey)).toEqual({ UUID: uid, Times: 0 });
    const reason = await rescheduleReasonAfter(client, jobKey, 2);
    expect(reason?.TotalRescheduleTimes).toBe(2);
    expect(reason?.RescheduleRecords?.every((r) => r.ReasonOfTask?.[0]?.RescheduleReason === 'pod-failed')).toBe(true);
  }, 120_000);

  it('12 restarts keep 10 records newest first; a history pushed over 950 KB is trimmed and fits', async () => {
    const world = await h.startWorld({ nodes: 1, prefix: 'jt2' });
    const { manager } = await h.startManager();
    const { ns } = world;
    const job = await client.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'rec', replicas: 1, npus: 1, labels: { 'fault-scheduling': 'force', 'fault-retry-times': '30' } }));
    const uid = job.metadata!.uid!;
    const jobKey = `${ns}/rec-${uid}`;
    await runningPods(client, ns, 'rec', 1);
    const t0 = Date.now();
    let lastFailS = 0;
    for (let i = 0; i < 12; i++) {
      lastFailS = Math.floor(Date.now() / 1000);
      await failAndWait(ns, 'rec', uid, 0, 1);
    }
    report(`12 pod-failed restarts of a 1-pod job in ${Date.now() - t0} ms`);
    const reason = await rescheduleReasonAfter(client, jobKey, 12);
    expect(reason.TotalRescheduleTimes).toBe(12);
    const stamps = (reason.RescheduleRecords ?? []).map((r) => r.RescheduleTimeStamp);
    expect(stamps).toHaveLength(10);
    expect([...stamps].sort((a, b) => b - a)).toEqual(stamps);
    expect(stamps[0]).toBeGreaterThanOrEqual(lastFailS);

    // Push the history just over 950 KB with other jobs of the session (10 records of 10 tasks each)
    // and 5 jobs with a single record, then let one more restart write it.
    const cm = (await readCm(client, 'mindx-dl', 'job-reschedule-reason'))!;
    const current = parseRescheduleHistory(cm.data!['recent-reschedule-records']!);
    if (!current.ok) throw new Error(current.reason);
    const rec = (j: number, k: number): RescheduleRecord => ({
      LogFileFormatTime: 'I1121 10:00:00', RescheduleTimeStamp: 1_800_000_000 - k,
      ReasonOfTask: Array.from({ length: 10 }, (_, t) => ({ RescheduleReason: 'CardUnhealthy', PodName: `seed-${j}-worker-${t}-${'p'.repeat(48)}`, NodeName: `node-${'n'.repeat(32)}-${t}`, NodeRankIndex: String(t) })),
    });
    const seeded = new Map<string, RescheduleReason>();
    const history = new Map(current.value);
    const put = (j: number, n: number): void => {
      const key = `${ns}/seed-${j}`;
      const r: RescheduleReason = { JobID: key, TotalRescheduleTimes: n, RescheduleRecords: Array.from({ length: n }, (_, k) => rec(j, k)) };
      seeded.set(key, r);
      history.set(key, r);
    };
    let j = 0;
    for (let k = 0; k < 5; k++) put(j++, 1);
    while (Buffer.byteLength(encodeRescheduleHistory(history)) < 955 * 1024) put(j++, 10);
    for (let k = 0; k < j; k++) await createBarePodGroup(client, ns, `seed-${k}`);
    await eventually(() => [...seeded.keys()].every((k) => manager.sources.podGroups.get(k) !== undefined));
    const text = encodeRescheduleHistory(history);
    const bytes = Buffer.byteLength(text);
    report(`seeded job-reschedule-reason: ${bytes} bytes, ${seeded.size} extra jobs (trim threshold ${950 * 1024})`);
    expect(bytes).toBeGreaterThan(950 * 1024);
    expect(bytes).toBeLessThan(1024 * 1024);
    const saved = await client.replace<ConfigMap>(paths.configMap('mindx-dl', 'job-reschedule-reason'), { ...cm, data: { ...cm.data, 'recent-reschedule-records': text } });
    await eventually(() => manager.sources.mindxDlConfigMaps.get('mindx-dl/job-reschedule-reason')?.metadata?.resourceVersion === saved.metadata?.resourceVersion);

    await failAndWait(ns, 'rec', uid, 0, 1);
    const after = await eventually(async () => {
      const c = await readCm(client, 'mindx-dl', 'job-reschedule-reason');
      const p = parseRescheduleHistory(c?.data?.['recent-reschedule-records'] ?? '');
      return p.ok && p.value.get(jobKey)?.TotalRescheduleTimes === 13 ? { c: c!, h: p.value } : undefined;
    }, 10_000);
    const size = Buffer.byteLength(after.c.data!['recent-reschedule-records']!);
    report(`after one more restart: job-reschedule-reason ${size} bytes`);
    expect(size).toBeLessThanOrEqual(950 * 1024);
    for (const [key, want] of seeded) {
      const got = after.h.get(key)!.RescheduleRecords!;
      if (want.RescheduleRecords!.length === 1) expect(got).toEqual(want.RescheduleRecords);
      else expect(got).toEqual(want.RescheduleRecords!.slice(0, 9)); // one round: the oldest record of each job went
    }
    const ours = after.h.get(jobKey)!.RescheduleRecords!;
    expect(ours).toHaveLength(9);
    expect(ours[0]!.RescheduleTimeStamp).toBeGreaterThanOrEqual(stamps[0]!);

    // Jobs that leave the session leave the history.
    for (let k = 0; k < j; k++) await client.delete(paths.podGroup(ns, `seed-${k}`));
    await eventually(async () => {
      const c = await readCm(client, 'mindx-dl', 'job-reschedule-reason');
      const p = parseRescheduleHistory(c?.data?.['recent-reschedule-records'] ?? '');
      return p.ok && [...seeded.keys()].every((k) => !p.value.has(k)) && p.value.has(jobKey);
    }, 15_000);
  }, 180_000);
});
