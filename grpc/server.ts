/**
 * The ClusterD-compatible gRPC server (port 8899): transport only. Registers Recover, fault.Fault,
 * PubFault, TrainingDataTrace, config.Config and job.Job with the injected handlers, and applies
 * ClusterD's transport limits (docs/grpc.md#transport, docs/rules.md#timing.clusterd).
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { UnaryRateLimiter, type CallContext, type GrpcBound } from './call-context.ts';
import { CallerGate, type CallerCheck } from './peer.ts';
import { DEFAULT_MAX_PENDING_WRITES, type SignalStreamOptions } from './signal-stream.ts';
import { ConfigRegistry, configService } from './config.service.ts';
import { JobClientRegistry, jobService } from './job.service.ts';
import { DataTraceRegistry, dataTraceService } from './datatrace.service.ts';
import { faultService } from './fault.service.ts';
import { silentLogger, type Awaitable, type CountRequest, type GrpcHandlers, type GrpcLogger } from './handlers.ts';
import { listen, type ConnectionRefusal, type Listener } from './listener.ts';
import { loadClusterdServices } from './protos.ts';
import { pubFaultService } from './pubfault.service.ts';
import { KeyedBuckets, QueuedLimiter } from './rate-limit.ts';
import { recoverService } from './recover.service.ts';
import { DEFAULT_MAX_SERVE_JOBS, FaultRegistry, RecoverRegistry } from './registry.ts';
import { DEFAULT_PUBLIC_FAULT_RESOURCES } from './validate.ts';
import type { QueueClock } from '../runtime/clock.ts';

export const GRPC_PORT = 8899;
const MiB = 1024 * 1024;

export interface GrpcLimits {
  readonly maxReceiveMessageBytes: number;
  readonly maxSendMessageBytes: number;
  readonly maxConcurrentStreams: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerIp: number;
  /** A connection without the HTTP/2 client preface and SETTINGS after this long is closed (grpc-go's ConnectionTimeout). */
  readonly handshakeTimeoutMs: number;
  /** HTTP/2 pings after this idle time, and the wait for their ack. */
  readonly keepAliveTimeMs: number;
  readonly keepAliveTimeoutMs: number;
  /** Shared token bucket of every unary method except HealthCheck (rate = burst). */
  readonly unaryQps: number;
  readonly healthCheckQps: number;
  readonly faultQueryQps: number;
  readonly faultQueryBurst: number;
  readonly faultQueryQueue: number;
  readonly pubFaultBurst: number;
  readonly pubFaultRefillPerSec: number;
  readonly maxServeJobs: number;
  /** Interval of `keep-alive` ProcessManageSignals. */
  readonly keepAliveSignalMs: number;
  /** fault.Fault roles of one job; publishers registered from one address; publishers in total (0 = no cap, ClusterD). */
  readonly maxFaultRolesPerJob: number;
  readonly maxFaultPublishersPerClient: number;
  readonly maxFaultPublishers: number;
  /** Idle SubscribeNotifySwitch / SubscribeNotifyExecStressTest streams of one job (0 = no cap). */
  readonly maxSideStreamsPerJob: number;
  /** Writes a server stream may have queued for a client that does not read before it is dropped. */
  readonly maxStreamPendingWrites: number;
}

export const DEFAULT_LIMITS: GrpcLimits = {
  maxReceiveMessageBytes: 4 * MiB,
  maxSendMessageBytes: 8 * MiB,
  maxConcurrentStreams: 64,
  maxConnections: 1_024,
  maxConnectionsPerIp: 512,
  handshakeTimeoutMs: 120_000,
  keepAliveTimeMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  unaryQps: 1_000,
  healthCheckQps: 10_000,
  faultQueryQps: 10,
  faultQueryBurst: 10,
  faultQueryQueue: 50,
  pubFaultBurst: 100,
  pubFaultRefillPerSec: 1,
  maxServeJobs: DEFAULT_MAX_SERVE_JOBS,
  keepAliveSignalMs: 5_000,
  maxFaultRolesPerJob: 16,
  maxFaultPublishersPerClient: 64,
  maxFaultPublishers: DEFAULT_MAX_SERVE_JOBS,
  maxSideStreamsPerJob: 8,
  maxStreamPendingWrites: DEFAULT_MAX_PENDING_WRITES,
};

export interface GrpcServerOptions {
  /** Default `0.0.0.0` (ClusterD binds `$POD_IP`, or 127.0.0.1 with -useProxy). */
  readonly host?: string;
  /** Default 8899; 0 picks a free port (tests). */
  readonly port?: number;
  /** PEM certificate chain and key. Absent: plaintext h2c, as ClusterD and every real client. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  readonly limits?: Partial<GrpcLimits>;
  /** Does a job / PodGroup exist for this jobId (AscendJob UID)? Used by Recover and Fault. */
  readonly jobExists: (jobId: string) => Awaitable<boolean>;
  /**
   * Fault's Register: a job id or a MindIE job id whose instance job has `app=<role>` (ClusterD's
   * preRegistry); default jobExists.
   */
  readonly faultJobExists?: (jobId: string, role: string) => Awaitable<boolean>;
  readonly publicFaultResources?: readonly string[];
  readonly logger?: GrpcLogger;
  readonly countRequest?: CountRequest;
  /** A connection was refused at a listener cap (counted in clusterd_bound_hits_total). */
  readonly onConnectionRefused?: (cap: ConnectionRefusal) => void;
  /**
   * Is this address a pod of that job? Calls that act on a job are refused (PERMISSION_DENIED)
   * otherwise. Absent: any address may act on any job, as ClusterD.
   */
  readonly callerCheck?: CallerCheck;
  /** A call was refused by the caller check (method path). */
  readonly onCallerRefused?: (method: string) => void;
  /** A registration or stream was refused or dropped at a cap (the wiring counts and logs it). */
  readonly onBoundHit?: (bound: GrpcBound, message: string, fields: Record<string, unknown>) => void;
  /** The controller's clock (runtime/clock.ts): token buckets, the query queue, keep-alive signals. */
  readonly clock: QueueClock;
  readonly protoDir?: string;
}

export interface GrpcServerHandle {
  readonly host: string;
  readonly port: number;
  /** `host:port` to dial. */
  readonly address: string;
  readonly tls: boolean;
  readonly limits: GrpcLimits;
  readonly recoverRegistry: RecoverRegistry;
  readonly faultRegistry: FaultRegistry;
  /** TrainingDataTrace subscriptions, one per job id. */
  readonly dataTraceRegistry: DataTraceRegistry;
  /** config.Config registrations and rank-table streams (push a job's global rank table here). */
  readonly configRegistry: ConfigRegistry;
  /** job.Job clients: broadcast each job summary signal here. */
  readonly jobRegistry: JobClientRegistry;
  /** Open TCP connections (in total, or from one IP). */
  connections(ip?: string): number;
  /** Drop a job from both registries (its PodGroup was deleted): its streams end with status OK. */
  forgetJob(jobId: string): void;
  /** Stop accepting, end every stream (handlers see `shutdown`), then close; forced after `graceMs`. */
  shutdown(graceMs?: number): Promise<void>;
}

export async function startGrpcServer(opts: GrpcServerOptions, handlers: GrpcHandlers): Promise<GrpcServerHandle> {
  const limits: GrpcLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const log = opts.logger ?? silentLogger;
  const count = opts.countRequest ?? (() => {});
  const now = (): number => opts.clock.now();
  const boundHit = opts.onBoundHit ?? ((bound: GrpcBound, message: string, fields: Record<string, unknown>) => log.warn(message, { bound, ...fields }));
  const ctx: CallContext = {
    log, count, limiter: new UnaryRateLimiter(limits, now),
    gate: new CallerGate(opts.callerCheck, log, opts.onCallerRefused, now), boundHit,
  };
  const streamOptions: SignalStreamOptions = {
    maxPending: limits.maxStreamPendingWrites,
    onSlow: (s) => boundHit('grpc_stream_pending_writes', 'grpc stream dropped: the client does not read', {
      jobId: s.client.jobId, role: s.client.role, streamId: s.id, pendingWrites: s.pending,
    }),
  };
  const services = loadClusterdServices(opts.protoDir);

  const recoverRegistry = new RecoverRegistry({
    jobExists: opts.jobExists, maxServeJobs: limits.maxServeJobs, maxSideStreamsPerJob: limits.maxSideStreamsPerJob, now,
  });
  const faultRegistry = new FaultRegistry({
    maxServeJobs: limits.maxServeJobs, maxRolesPerJob: limits.maxFaultRolesPerJob,
    maxPublishersPerClient: limits.maxFaultPublishersPerClient, maxPublishers: limits.maxFaultPublishers,
  });
  const dataTraceRegistry = new DataTraceRegistry(limits.maxServeJobs);
  const jobRegistry = new JobClientRegistry(limits.maxServeJobs, now);
  const configRegistry = new ConfigRegistry(limits.maxServeJobs, (jobId) =>
    boundHit('grpc_config_registrations', 'config.Config registration forgotten: too many registrations', { jobId: jobId.slice(0, 128), cap: limits.maxServeJobs }));
  const queryLimiter = new QueuedLimiter(limits.faultQueryQps, limits.faultQueryBurst, limits.faultQueryQueue, opts.clock);
  const resources = opts.publicFaultResources ?? DEFAULT_PUBLIC_FAULT_RESOURCES;
  const pubLimiter = new KeyedBuckets(limits.pubFaultRefillPerSec, limits.pubFaultBurst, Math.max(resources.length, 1), now);

  const server = new Server({
    'grpc.max_receive_message_length': limits.maxReceiveMessageBytes,
    'grpc.max_send_message_length': limits.maxSendMessageBytes,
    'grpc.max_concurrent_streams': limits.maxConcurrentStreams,
    'grpc.keepalive_time_ms': limits.keepAliveTimeMs,
    'grpc.keepalive_timeout_ms': limits.keepAliveTimeoutMs,
  });
  server.addService(services.recover, recoverService({ ctx, registry: recoverRegistry, handlers: handlers.recover, keepAliveSignalMs: limits.keepAliveSignalMs, clock: opts.clock, streamOptions }));
  server.addService(services.fault, faultService({ ctx, registry: faultRegistry, handlers: handlers.fault, jobExists: opts.faultJobExists ?? opts.jobExists, queryLimiter, streamOptions }));
  server.addService(services.pubFault, pubFaultService({ ctx, handlers: handlers.pubFault, resources, limiter: pubLimiter }));
  server.addService(services.trainingDataTrace, dataTraceService({ ctx, registry: dataTraceRegistry, handlers: handlers.dataTrace, streamOptions }));
  server.addService(services.config, configService({ ctx, registry: configRegistry, handlers: handlers.config, streamOptions }));
  server.addService(services.job, jobService({ ctx, registry: jobRegistry, handlers: handlers.job, now, streamOptions }));

  const credentials = opts.tls
    ? ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(opts.tls.cert), private_key: Buffer.from(opts.tls.key) }], false)
    : ServerCredentials.createInsecure();
  const injector = server.createConnectionInjector(credentials);
  let listener: Listener;
  try {
    listener = await listen(opts.host ?? '0.0.0.0', opts.port ?? GRPC_PORT, injector, limits, log, opts.onConnectionRefused);
  } catch (err) {
    injector.destroy();
    server.forceShutdown();
    throw err;
  }
  const host = listener.host;
  const address = `${host.includes(':') ? `[${host}]` : host}:${listener.port}`;
  log.info('grpc server listening', { address, tls: opts.tls !== undefined });

  let stopping: Promise<void> | undefined;
  const shutdown = (graceMs = 5_000): Promise<void> => {
    stopping ??= (async () => {
      const closed = listener.close();
      recoverRegistry.closeAll('shutdown');
      faultRegistry.closeAll('shutdown');
      dataTraceRegistry.closeAll();
      configRegistry.closeAll();
      jobRegistry.closeAll();
      queryLimiter.close();
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        force.unref();
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      injector.destroy();
      // A peer that never answers the server's FIN keeps its socket, and so `closed`, open for
      // ever (and the Lease unreleased until the kubelet's SIGKILL): destroyed after the grace.
      const lingering = setTimeout(() => listener.destroyConnections(), graceMs);
      lingering.unref();
      await closed;
      clearTimeout(lingering);
      log.info('grpc server stopped', { address });
    })();
    return stopping;
  };

  return {
    host,
    port: listener.port,
    address,
    tls: opts.tls !== undefined,
    limits,
    recoverRegistry,
    faultRegistry,
    dataTraceRegistry,
    configRegistry,
    jobRegistry,
    connections: (ip?: string) => listener.connections(ip),
    forgetJob: (jobId: string) => {
      recoverRegistry.forget(jobId);
      faultRegistry.forget(jobId);
    },
    shutdown,
  };
}
