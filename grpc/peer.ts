/**
 * Who called: the IP of a gRPC call's peer, and the gate that lets a call act on a job only from the
 * address of one of the job's pods (TaskD, the Elastic Agent and MindIO run inside the job's pods).
 * ClusterD checks nothing here (component/clusterd/pkg/application/recover/fault_recover_service.go
 * Init/Register, application/fault/grpc_service.go Register): any client that knows a job UID may
 * initialise, register and subscribe for it. The check itself is injected (controllers/grpc-caller.ts
 * reads the pod cache); without one the gate is open, as ClusterD.
 */
import { isIP } from 'node:net';
import type { Awaitable, GrpcLogger } from './handlers.ts';
import { clip } from './validate.ts';

/** `a.b.c.d`, or IPv6 in lower case; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as its IPv4. */
export function normalizeIp(ip: string): string {
  const lower = ip.trim().toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  return mapped !== null ? mapped[1]! : lower;
}

/**
 * The IP in grpc-js's `call.getPeer()` (`<remoteAddress>:<remotePort>`, an IPv6 address unbracketed,
 * or `unknown`); '' when there is none.
 */
export function peerIp(peer: string): string {
  const cut = peer.lastIndexOf(':');
  const host = cut > 0 ? peer.slice(0, cut).replace(/^\[(.*)\]$/, '$1') : '';
  if (isIP(host) !== 0) return normalizeIp(host);
  return isIP(peer) !== 0 ? normalizeIp(peer) : '';
}

/**
 * How close to the job the caller must be: `job` = one of the job's pods (TaskD, the Elastic Agent
 * and MindIO run in them); `namespace` = a pod in the job's namespace (fault.Fault: a MindIE
 * controller subscribes for the server job it manages from a pod of its own, beside it).
 */
export type CallerScope = 'job' | 'namespace';

/** Is `ip` the address of a pod of job `jobId` (or, for `namespace`, of a pod in its namespace)? */
export type CallerCheck = (jobId: string, ip: string, scope: CallerScope) => Awaitable<boolean>;

const LOG_INTERVAL_MS = 60_000;

/**
 * Refuses a call on a job from an address that is no pod of the job: gRPC PERMISSION_DENIED. One
 * `warn` line per method a minute (a flood of refused calls must not become a flood of log lines).
 */
export class CallerGate {
  private readonly check: CallerCheck | undefined;
  private readonly log: GrpcLogger;
  private readonly onRefused: (method: string) => void;
  private readonly now: () => number;
  private readonly lastLog = new Map<string, { atMs: number; suppressed: number }>();

  constructor(check: CallerCheck | undefined, log: GrpcLogger, onRefused: ((method: string) => void) | undefined, now: () => number) {
    this.check = check;
    this.log = log;
    this.onRefused = onRefused ?? (() => {});
    this.now = now;
  }

  get open(): boolean {
    return this.check === undefined;
  }

  /** undefined when the caller may act on the job, else the refusal's details. */
  async refusal(method: string, jobId: string, peer: string, scope: CallerScope = 'job'): Promise<string | undefined> {
    if (this.check === undefined) return undefined;
    const ip = peerIp(peer);
    if (ip !== '' && (await this.check(jobId, ip, scope))) return undefined;
    const details = `caller ${ip === '' ? 'unknown' : ip} is not a pod ${scope === 'job' ? 'of' : 'in the namespace of'} job ${clip(jobId)}`;
    this.onRefused(method);
    const now = this.now();
    const last = this.lastLog.get(method);
    if (last !== undefined && now - last.atMs < LOG_INTERVAL_MS) {
      last.suppressed++;
    } else {
      this.log.warn('grpc call refused: the caller is not a pod of the job', {
        method, jobId: clip(jobId), peer: ip || 'unknown', scope, ...(last !== undefined && last.suppressed > 0 ? { suppressedSinceLastLine: last.suppressed } : {}),
      });
      this.lastLog.set(method, { atMs: now, suppressed: 0 });
    }
    return details;
  }
}
