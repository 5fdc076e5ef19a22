/**
 * Who called: the IP of a gRPC call's peer, and the gate that lets a call act on a job only from the
 * address of one of the job's pods (TaskD, the Elastic Agent and MindIO run inside the job's pods),
 * and a call that names a namespace (TrainingDataTrace by `namespace/name`, config.Config by MindIE
 * job id, job.Job's signals) only from a pod in that namespace or a system caller.
 * ClusterD checks nothing here (component/clusterd/pkg/application/recover/fault_recover_service.go
 * Init/Register, application/fault/grpc_service.go Register): any client that knows a job UID may
 * initialise, register and subscribe for it. The check itself is injected (controllers/grpc-caller.ts
 * reads the pod cache); without one the gate is open, as ClusterD.
 */
import { isIP } from 'node:net';
import type { Awaitable, GrpcLogger, Visibility } from './handlers.ts';

export type { Visibility } from './handlers.ts';
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

/** Who calls from an address, as the pod cache sees it. */
export interface Caller {
  /**
   * A system component: a pod of the controller's namespace or of a system namespace (a
   * hostNetwork pod has its node's address), or a loopback address that is no pod's (kubectl
   * port-forward, a sidecar). It may act on and read every namespace's jobs.
   */
  readonly system: boolean;
  /** The namespaces with a pod at the address; none for an address that is no pod's. */
  readonly namespaces: ReadonlySet<string>;
}

/**
 * The injected check. `onJob`: is `ip` the address of a pod of job `jobId` (or, for `namespace`, of
 * a pod in its namespace)? `whois`: who is at `ip` (calls that name a namespace, not a job).
 */
export interface CallerCheck {
  readonly onJob: (jobId: string, ip: string, scope: CallerScope) => Awaitable<boolean>;
  readonly whois: (ip: string) => Caller;
}

const seesAll: Visibility = () => true;

const LOG_INTERVAL_MS = 60_000;

/**
 * Refuses a call on a job from an address that is no pod of the job, and a call naming a namespace
 * from an address that is neither a pod in it nor a system caller: gRPC PERMISSION_DENIED. One
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
    if (ip !== '' && (await this.check.onJob(jobId, ip, scope))) return undefined;
    return this.refuse(method, 'grpc call refused: the caller is not a pod of the job', ip, { jobId: clip(jobId), scope },
      `is not a pod ${scope === 'job' ? 'of' : 'in the namespace of'} job ${clip(jobId)}`);
  }

  /**
   * undefined when the caller is a system caller or a pod in one of `namespaces` (the namespace a
   * call names, or those of the jobs a MindIE job id names), else the refusal's details.
   */
  namespaceRefusal(method: string, namespaces: readonly string[], peer: string): string | undefined {
    if (this.check === undefined) return undefined;
    const sees = this.visibility(peer);
    if (namespaces.some(sees)) return undefined;
    const shown = clip(namespaces.join(','));
    return this.refuse(method, 'grpc call refused: the caller is neither a pod in the namespace nor a system caller', peerIp(peer), { namespace: shown },
      `is neither a system caller nor a pod in namespace ${shown}`);
  }

  /** undefined when the caller is a system caller or some pod, else the refusal's details (an address no pod has). */
  strangerRefusal(method: string, peer: string): string | undefined {
    if (this.check === undefined) return undefined;
    const ip = peerIp(peer);
    const who = ip === '' ? undefined : this.check.whois(ip);
    if (who !== undefined && (who.system || who.namespaces.size > 0)) return undefined;
    return this.refuse(method, 'grpc call refused: the caller is neither a pod nor a system caller', ip, {}, 'is neither a pod nor a system caller');
  }

  /** Which namespaces' jobs the caller may see (every one without a check, as ClusterD). */
  visibility(peer: string): Visibility {
    if (this.check === undefined) return seesAll;
    const ip = peerIp(peer);
    if (ip === '') return () => false;
    const who = this.check.whois(ip);
    return who.system ? seesAll : (ns) => who.namespaces.has(ns);
  }

  private refuse(method: string, message: string, ip: string, fields: Record<string, unknown>, what: string): string {
    this.onRefused(method);
    const now = this.now();
    const last = this.lastLog.get(method);
    if (last !== undefined && now - last.atMs < LOG_INTERVAL_MS) {
      last.suppressed++;
    } else {
      this.log.warn(message, {
        method, ...fields, peer: ip || 'unknown', ...(last !== undefined && last.suppressed > 0 ? { suppressedSinceLastLine: last.suppressed } : {}),
      });
      this.lastLog.set(method, { atMs: now, suppressed: 0 });
    }
    return `caller ${ip === '' ? 'unknown' : ip} ${what}`;
  }
}
