/**
 * Values of the services that the controllers use outside a call (job batches, data-trace answers,
 * signal ids). Kept apart from the service modules so a replica that is not serving never loads the
 * transport (@grpc/grpc-js, its protos and Node's http2): controllers/grpc.controller.ts imports the
 * server when it starts listening, i.e. when this replica leads.
 */
import { randomUUID } from 'node:crypto';

/** job.Job, constant.MaxNPUsPerBatch: a List batch carries at most this many NPUs. */
export const JOB_MAX_NPUS_PER_BATCH = 40_000;

/** k8s.io/apimachinery uuid.NewUUID: google/uuid's New, a random (version 4) uuid. */
export const newUuid = (): string => randomUUID();

/** TrainingDataTrace, profiling/grpc_service.go: OK / ErrInvalidParam / ErrNotFound / ErrServerFault. */
export const DataTraceCode = { OK: 200, InvalidParam: 300, NotFound: 404, ServerFault: 500 } as const;
