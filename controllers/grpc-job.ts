/**
 * job.Job's signals (docs/grpc.md#job-service) from the job summary (ClusterD's job cache), as
 * component/clusterd/pkg/application/jobv2/processor.go sends them and
 * application/jobinfo/jobinfo_utils.go BuildJobSignalFromJobInfo builds them:
 * - a job (re)entering pending: operator `add`, hccl.json `{"status":"initializing"}`;
 * - running / failed / complete: `add` with the job's rank table;
 * - pre-delete (PodGroup and pods gone): `delete` with the rank table;
 * each with a fresh time-based uuid, `time` = when the job was added, `cmIndex` 0, `total` its
 * ConfigMap count, `deleteTime` now once failed or complete, and for PyTorch `sharedTorIp` and
 * `masterAddr`. The List subscription first gets every job in batches of at most 40,000 NPUs
 * (application/jobinfo/job_grpc_service.go processJobSliceForBatchSignals).
 */
import type { JobSummarySignal } from '../grpc/messages.ts';
import { JOB_MAX_NPUS_PER_BATCH } from '../grpc/service-constants.ts';
import type { JobSummaryState } from '../policy/jobs/job-summary.ts';
import { DEFAULT_HCCL_JSON, encodeRankTable } from '../schemas/job-summary/job-summary.ts';
import type { JobSummaryChange } from '../reconcilers/job-summary.reconciler.ts';

export function jobSignal(s: JobSummaryState, hccl: string, operator: 'add' | 'delete', nowSec: number, uuid: string): JobSummarySignal {
  const pytorch = s.framework === 'pytorch';
  return {
    uuid, jobId: s.key, jobName: s.name, namespace: s.namespace, frameWork: s.framework, jobStatus: s.status,
    time: String(Math.trunc(s.addTimeSec)), cmIndex: '0', total: String(s.totalCmNum), HcclJson: hccl,
    deleteTime: s.status === 'failed' || s.status === 'complete' ? String(nowSec) : '',
    sharedTorIp: pytorch ? s.sharedTorIp : '', masterAddr: pytorch ? s.masterAddr : '', operator, sid: s.sid,
  };
}

/** The signal ClusterD sends for one job summary transition (none for the final removal). */
export function signalOfChange(c: JobSummaryChange, nowSec: number, uuid: string): JobSummarySignal | undefined {
  const next = c.next;
  if (next === undefined) return undefined;
  if (next.isPreDelete) return c.prev?.isPreDelete === true ? undefined : jobSignal(next, encodeRankTable(next.rankTable), 'delete', nowSec, uuid);
  if (next.status === 'pending') return jobSignal(next, DEFAULT_HCCL_JSON, 'add', nowSec, uuid);
  return jobSignal(next, encodeRankTable(next.rankTable), 'add', nowSec, uuid);
}

const npus = (s: JobSummaryState): number => (s.rankTable.servers ?? []).reduce((n, srv) => n + srv.devices.length, 0);

/** Every job in NPU-bounded batches; a job above the bound alone and without its hccl.json. */
export function jobBatches(jobs: Iterable<JobSummaryState>, nowSec: number, uuid: () => string): JobSummarySignal[][] {
  const out: JobSummarySignal[][] = [];
  let batch: JobSummarySignal[] = [];
  let acc = 0;
  for (const s of jobs) {
    const n = npus(s);
    if (n > JOB_MAX_NPUS_PER_BATCH) {
      if (batch.length > 0) { out.push(batch); batch = []; acc = 0; }
      out.push([jobSignal(s, '', 'add', nowSec, uuid())]);
      continue;
    }
    if (acc + n > JOB_MAX_NPUS_PER_BATCH && batch.length > 0) { out.push(batch); batch = []; acc = 0; }
    batch.push(jobSignal(s, encodeRankTable(s.rankTable), 'add', nowSec, uuid()));
    acc += n;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}
