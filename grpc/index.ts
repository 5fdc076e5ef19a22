// Public surface of the gRPC transport (no logic here).
export { startGrpcServer, DEFAULT_LIMITS, GRPC_PORT } from './server.ts';
export type { GrpcLimits, GrpcServerHandle, GrpcServerOptions } from './server.ts';
export type {
  Awaitable,
  CountRequest,
  FaultHandlers,
  GrpcHandlers,
  GrpcLogger,
  ProcessSignalSubscription,
  PubFaultHandlers,
  RecoverHandlers,
  RequestRecord,
  SignalStream,
  StreamCloseReason,
  StreamSubscription,
} from './handlers.ts';
export { Code, Info, reportReceived, status } from './codes.ts';
export type { Status } from './codes.ts';
export { processManageSignal } from './messages.ts';
export type * from './messages.ts';
export { RecoverRegistry, FaultRegistry, TASKD_ROLES, clientKind } from './registry.ts';
export type { RecoverJobEntry, ClientKind } from './registry.ts';
export { loadClusterdServices, SERVICE_NAMES } from './protos.ts';
