/**
 * The gRPC handlers (grpc/handlers.ts) wired to the controller (docs/grpc.md#server-behaviour, docs/rules.md#recover.register to #recover.software-entry):
 * - Recover: Init reads the PodGroup (0 / 403 / 502), Register patches `process-recover-enable=on`
 *   and creates the job's FSMs (0 / 502), a subscription resets them and carries their signals, and
 *   the four reports become FSM events; ReportRecoverStrategy / ReportRecoverStatus go to the
 *   hot-switch FSM while a hot switch runs.
 * - Fault: grpc-fault.ts.
 * - PubFault: checked against the public-fault rules and fed to the intake's public-fault path.
 * - TrainingDataTrace: grpc-datatrace.ts; config.Config: grpc-config.ts; job.Job: grpc-job.ts.
 *
 * Reply codes: a report the FSM took (consumed or queued in its one-slot buffer) is answered
 * `{0, "jobId=<id>, uuid=<uuid>, receive <rpc>"}`. ClusterD blocks a second unsolicited report of a
 * kind until a reset and then answers 599 `chan closed`; we answer that 599 at once instead of
 * holding the call. ReportProcessFault is always `{0, "receive ReportProcessFault"}`.
 */
import { Code, Info, reportReceived, status, type Status } from '../grpc/codes.ts';
import type { GrpcHandlers } from '../grpc/handlers.ts';
import type { PublicFaultRequest } from '../grpc/messages.ts';
import { validatePublicFault } from '../schemas/public-fault/public-fault.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { PublicFaultIntake } from './device-faults.controller.ts';
import type { FaultPublisher } from './grpc-fault.ts';
import { dataTraceHandlers, type DataTraceWiringDeps } from './grpc-datatrace.ts';
import { PROCESS_RECOVER_ENABLE_LABEL, type RecoveryService } from './recovery.controller.ts';

/** Origin prefix of public faults sent over gRPC (`grpc-pubfault/<resource>`), in logs and the store. */
export const GRPC_PUBLIC_FAULT_SOURCE = 'grpc-pubfault';

export interface GrpcWiringDeps {
  readonly recovery: RecoveryService;
  readonly deviceFaults: PublicFaultIntake;
  readonly faults: FaultPublisher;
  readonly log: Logger;
  readonly now: () => number;
  readonly dataTrace: Omit<DataTraceWiringDeps, 'log'>;
  readonly config: GrpcHandlers['config'];
  readonly job: GrpcHandlers['job'];
}

const received = (jobId: string, uuid: string, rpc: string, accepted: boolean): Status =>
  accepted ? reportReceived(jobId, uuid, rpc) : status(Code.ServerInnerError, `${Info.reportChanClosed(jobId, uuid)}: an earlier ${rpc} is still queued`);

/** A public fault sent over gRPC: checked, then handed to the intake as a public-fault message. */
export function ingestPublicFault(deviceFaults: PublicFaultIntake, req: PublicFaultRequest): Status {
  const checked = validatePublicFault({
    id: req.id, timestamp: req.timestamp, version: req.version, resource: req.resource,
    faults: req.faults.map((f) => ({
      faultId: f.faultId, faultType: f.faultType, faultCode: f.faultCode, faultTime: f.faultTime, assertion: f.assertion,
      faultLocation: { ...f.faultLocation }, influence: f.influence.map((x) => ({ nodeName: x.nodeName, nodeSN: x.nodeSN, deviceIds: [...x.deviceIds] })),
      description: f.description,
    })),
  });
  if (!checked.ok) return status(Code.InvalidReqParam, checked.reason);
  // The intake's public-fault path (one fault per node and resource + faultId, whoever sent it),
  // then the changed nodes are announced to cluster-info and the jobs pipeline.
  const rejection = deviceFaults.submitPublicFault({ origin: `${GRPC_PUBLIC_FAULT_SOURCE}/${req.resource}`, info: checked.value });
  if (rejection !== undefined) return status(Code.InvalidReqParam, rejection.reason);
  return status(Code.OK, Info.pubFaultSuccess);
}

export function grpcHandlers(d: GrpcWiringDeps): GrpcHandlers {
  const { recovery, log } = d;
  return {
    recover: {
      init: (c) => {
        const found = recovery.lookup(c.jobId);
        if (found === undefined) return status(Code.OperatePodGroupError, `jobId=${c.jobId} get pod group failed`);
        const k = found.entry.knobs;
        if (k.processRecoverEnable !== 'on' && k.subHealthyStrategy !== 'hotSwitch') {
          return status(Code.ProcessRecoverEnableOff, `jobId=${c.jobId} ${PROCESS_RECOVER_ENABLE_LABEL} is not on and subHealthyStrategy is not hotSwitch`);
        }
        return status(Code.OK, Info.initSuccess(c.jobId));
      },
      register: async (c) => {
        const out = await recovery.register(c.jobId);
        if (out === 'ok') return status(Code.OK, Info.registerSuccess);
        if (out === 'no-job') return status(Code.JobNotExist, `jobId=${c.jobId} pod group not exist`);
        return status(Code.OperatePodGroupError, `jobId=${c.jobId} patch pod group label failed`);
      },
      subscribe: (stream) => recovery.attach(stream.client.jobId, stream),
      reportStopComplete: async (r) => {
        const o = await recovery.feedReport(r.jobId, { machine: 'recovery', event: { type: 'stopCompleteReported', code: r.status.code, faultRanks: r.faultRanks } });
        return o === undefined ? status(Code.UnRegistry, `jobId=${r.jobId} is not registered`) : received(r.jobId, o.uuid, 'ReportStopComplete', o.accepted);
      },
      reportRecoverStrategy: async (r) => {
        const o = await recovery.feedReport(r.jobId, { machine: 'route', event: { type: 'recoverStrategyReported', strategies: r.strategies, faultRanks: r.faultRanks } });
        return o === undefined ? status(Code.UnRegistry, `jobId=${r.jobId} is not registered`) : received(r.jobId, o.uuid, 'ReportRecoverStrategy', o.accepted);
      },
      reportRecoverStatus: async (r) => {
        const o = await recovery.feedReport(r.jobId, {
          machine: 'route', event: { type: 'recoverStatusReported', code: r.status.code, strategy: r.strategy, isolateRankIds: r.isolateRankIds },
        });
        return o === undefined ? status(Code.UnRegistry, `jobId=${r.jobId} is not registered`) : received(r.jobId, o.uuid, 'ReportRecoverStatus', o.accepted);
      },
      reportProcessFault: async (r) => {
        const o = await recovery.feedReport(r.jobId, { machine: 'recovery', event: { type: 'processFaultReported', faultRanks: r.faultRanks } });
        if (o === undefined) return status(Code.UnRegistry, `jobId=${r.jobId} is not registered`);
        if (!o.accepted) log.info('ReportProcessFault not taken by the FSM', { jobId: r.jobId });
        return status(Code.OK, Info.processFaultReceived);
      },
      om: recovery.om,
    },
    fault: {
      subscribe: (stream) => d.faults.subscribe(stream),
      query: (jobId) => d.faults.query(jobId),
    },
    pubFault: {
      sendPublicFault: (req) => {
        const s = ingestPublicFault(d.deviceFaults, req);
        if (s.code !== Code.OK) log.warn('public fault rejected', { id: req.id, resource: req.resource, reason: s.info });
        return s;
      },
    },
    dataTrace: dataTraceHandlers({ ...d.dataTrace, log }),
    config: d.config,
    job: d.job,
  };
}
