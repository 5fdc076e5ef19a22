/**
 * recover.proto's ProcessManageSignal and FaultRank (docs/grpc.md#recover-service, #recover-vocabulary), the one definition that
 * policy/ builds and grpc/ sends and decodes. Field names as on the wire (keepCase).
 */

/** recover.proto FaultRank: decimal strings. */
export interface WireFaultRank {
  readonly rankId: string;
  readonly faultType: string;
}

/**
 * recover.proto ProcessManageSignal (field order as in the proto). `signalType` is a string because
 * a decoder sees whatever the peer sent; the signals we build use SIGNAL_TYPE (policy/recovery/recovery-signals.ts).
 * `timeout` is in seconds (int64 on the wire; below 2^53, longs: Number).
 */
export interface ProcessManageSignal {
  readonly uuid: string;
  readonly jobId: string;
  readonly signalType: string;
  readonly actions: readonly string[];
  readonly faultRanks: readonly WireFaultRank[];
  readonly changeStrategy: string;
  readonly timeout: number;
  readonly nodeRankIds: readonly string[];
  readonly extraParams: string;
}
