/**
 * In-memory client registries of the gRPC server (docs/grpc.md#fault-service, #taskd-sequence, #server-behaviour).
 *
 * Recover: per job, Init -> Register -> one subscription stream. Init and Register are idempotent
 * once done (a reconnecting TaskD redoes both before each re-subscribe, and they must be no-ops); a
 * second subscriber for a job replaces the first (whose stream then ends with status OK). Registered
 * jobs count against the served-jobs cap (10,000 -> 500 OutOfMaxServeJobs).
 *
 * Fault: publishers keyed by (jobId, role); registering again for a key replaces the previous
 * publisher, which ends its stream. ClusterD bounds only the jobs (10,000); here the roles of one
 * job, the publishers registered from one client address and the publishers in total are capped
 * too (0 = no cap, as ClusterD), so a client inventing roles cannot grow the server without bound.
 */
import { Code, Info, status, type Status } from './codes.ts';
import type { Awaitable, StreamCloseReason } from './handlers.ts';
import type { ClientInfo } from './messages.ts';

export const DEFAULT_MAX_SERVE_JOBS = 10_000;

/** The roles real TaskD clients use (docs/grpc.md#client-discovery): the Go manager and the legacy Python client. */
export const TASKD_ROLES = ['taskd', 'master agent'] as const;
export type ClientKind = 'taskd' | 'master agent' | 'other';
export const clientKind = (role: string): ClientKind =>
  role === 'taskd' || role === 'master agent' ? role : 'other';

/** Something the registry can close: a subscription stream. */
export interface Closable {
  readonly id: number;
  close(reason: StreamCloseReason): void;
}

export interface RecoverJobEntry {
  readonly jobId: string;
  /** Role of the latest Init/Register/Subscribe (ClusterD only logs it). */
  readonly role: string;
  readonly kind: ClientKind;
  readonly initialized: boolean;
  readonly registered: boolean;
  readonly initializedAtMs?: number;
  readonly registeredAtMs?: number;
  readonly streamId?: number;
  readonly subscriptions: number;
}

export interface RecoverRegistryDeps {
  /** Is there a job / PodGroup for this jobId (the AscendJob UID)? */
  readonly jobExists: (jobId: string) => Awaitable<boolean>;
  readonly maxServeJobs?: number;
  /** Idle O&M notify streams held per job (0 = no cap). */
  readonly maxSideStreamsPerJob?: number;
  /** The controller's clock's time (runtime/clock.ts). */
  readonly now: () => number;
}

interface MutableEntry {
  jobId: string;
  role: string;
  initialized: boolean;
  registered: boolean;
  initializedAtMs?: number;
  registeredAtMs?: number;
  stream?: Closable;
  /** Idle SubscribeNotifySwitch / SubscribeNotifyExecStressTest streams of the job. */
  side: Set<Closable>;
  subscriptions: number;
}

export class RecoverRegistry {
  private readonly jobs = new Map<string, MutableEntry>();
  private readonly inflightInit = new Map<string, Promise<Status>>();
  private readonly inflightRegister = new Map<string, Promise<Status>>();
  private readonly deps: RecoverRegistryDeps;
  readonly maxServeJobs: number;
  readonly maxSideStreamsPerJob: number;

  constructor(deps: RecoverRegistryDeps) {
    this.deps = deps;
    this.maxServeJobs = deps.maxServeJobs ?? DEFAULT_MAX_SERVE_JOBS;
    this.maxSideStreamsPerJob = deps.maxSideStreamsPerJob ?? 0;
  }

  private now(): number {
    return this.deps.now();
  }

  private touch(client: ClientInfo): MutableEntry {
    let e = this.jobs.get(client.jobId);
    if (e === undefined) {
      e = { jobId: client.jobId, role: client.role, initialized: false, registered: false, side: new Set(), subscriptions: 0 };
      this.jobs.set(client.jobId, e);
    }
    e.role = client.role;
    return e;
  }

  /**
   * Init: 0 at once if the job was initialised before; 502 when the job is unknown; otherwise the
   * handler decides (0 / 403 / 502) and a 0 marks the job initialised. Concurrent Inits share one run.
   */
  init(client: ClientInfo, decide: (client: ClientInfo) => Awaitable<Status>): Promise<Status> {
    const known = this.jobs.get(client.jobId);
    if (known?.initialized === true) {
      known.role = client.role;
      return Promise.resolve(status(Code.OK, Info.initSuccess(client.jobId)));
    }
    const running = this.inflightInit.get(client.jobId);
    if (running !== undefined) return running;
    const run = (async (): Promise<Status> => {
      if (!(await this.deps.jobExists(client.jobId))) {
        return status(Code.OperatePodGroupError, `jobId=${client.jobId} get pod group failed`);
      }
      const s = await decide(client);
      if (s.code === Code.OK) {
        const e = this.touch(client);
        e.initialized = true;
        e.initializedAtMs = this.now();
      }
      return s;
    })().finally(() => this.inflightInit.delete(client.jobId));
    this.inflightInit.set(client.jobId, run);
    return run;
  }

  /**
   * Register: 0 if registered before; 408 before Init; 402 when the job is gone; 500 when the cap is
   * reached; otherwise the handler decides (0 / 502) and a 0 marks the job registered.
   */
  register(client: ClientInfo, decide: (client: ClientInfo) => Awaitable<Status>): Promise<Status> {
    const e = this.jobs.get(client.jobId);
    if (e?.registered === true) {
      e.role = client.role;
      return Promise.resolve(status(Code.OK, Info.registerSuccess));
    }
    if (e?.initialized !== true) {
      return Promise.resolve(status(Code.UnInit, `jobId=${client.jobId} not init, please init first`));
    }
    const running = this.inflightRegister.get(client.jobId);
    if (running !== undefined) return running;
    if (this.registeredCount() + this.inflightRegister.size >= this.maxServeJobs) {
      return Promise.resolve(
        status(Code.OutOfMaxServeJobs, `serve jobs reach the max number ${this.maxServeJobs}, jobId=${client.jobId}`),
      );
    }
    const run = (async (): Promise<Status> => {
      if (!(await this.deps.jobExists(client.jobId))) {
        return status(Code.JobNotExist, `jobId=${client.jobId} pod group not exist`);
      }
      const s = await decide(client);
      if (s.code === Code.OK) {
        const entry = this.touch(client);
        entry.registered = true;
        entry.registeredAtMs = this.now();
      }
      return s;
    })().finally(() => this.inflightRegister.delete(client.jobId));
    this.inflightRegister.set(client.jobId, run);
    return run;
  }

  isRegistered(jobId: string): boolean {
    return this.jobs.get(jobId)?.registered === true;
  }

  registeredCount(): number {
    let n = 0;
    for (const e of this.jobs.values()) if (e.registered) n++;
    return n;
  }

  /**
   * Make `stream` the job's subscription. The previous one, if any, is closed with `replaced` first
   * (ClusterD cancels the first subscriber's stream, which ends with status OK).
   */
  attachStream(client: ClientInfo, stream: Closable): void {
    const e = this.touch(client);
    const previous = e.stream;
    e.stream = stream;
    e.subscriptions++;
    if (previous !== undefined && previous.id !== stream.id) previous.close('replaced');
  }

  /** Forget `stream` if it is still the job's subscription. */
  detachStream(jobId: string, stream: Closable): void {
    const e = this.jobs.get(jobId);
    if (e?.stream?.id === stream.id) delete e.stream;
  }

  /**
   * Track an idle O&M notify stream of a registered job (closed with the job): 'unregistered', or
   * 'cap' when the job already holds `maxSideStreamsPerJob` of them (the new one is refused).
   */
  attachSideStream(jobId: string, stream: Closable): 'ok' | 'unregistered' | 'cap' {
    const e = this.jobs.get(jobId);
    if (e?.registered !== true) return 'unregistered';
    if (this.maxSideStreamsPerJob > 0 && e.side.size >= this.maxSideStreamsPerJob) return 'cap';
    e.side.add(stream);
    return 'ok';
  }

  sideStreamCount(jobId: string): number {
    return this.jobs.get(jobId)?.side.size ?? 0;
  }

  detachSideStream(jobId: string, stream: Closable): void {
    this.jobs.get(jobId)?.side.delete(stream);
  }

  /** Drop a job (its PodGroup was deleted): its streams end, and the next client must Init again. */
  forget(jobId: string): void {
    const e = this.jobs.get(jobId);
    if (e === undefined) return;
    this.jobs.delete(jobId);
    e.stream?.close('forgotten');
    for (const s of [...e.side]) s.close('forgotten');
  }

  /** Close every stream (server shutdown). */
  closeAll(reason: StreamCloseReason): void {
    for (const e of this.jobs.values()) {
      e.stream?.close(reason);
      for (const s of [...e.side]) s.close(reason);
    }
  }

  entry(jobId: string): RecoverJobEntry | undefined {
    const e = this.jobs.get(jobId);
    if (e === undefined) return undefined;
    const { stream, side: _side, ...rest } = e;
    return { ...rest, kind: clientKind(e.role), ...(stream !== undefined ? { streamId: stream.id } : {}) };
  }

  entries(): RecoverJobEntry[] {
    return [...this.jobs.keys()].flatMap((id) => this.entry(id) ?? []);
  }
}

export interface FaultRegistryDeps {
  readonly maxServeJobs?: number;
  /** Roles registered for one job (not the cluster-wide `-1`); 0 = no cap. */
  readonly maxRolesPerJob?: number;
  /** Publishers registered from one client address; 0 = no cap. */
  readonly maxPublishersPerClient?: number;
  /** Publishers in total; 0 = no cap. */
  readonly maxPublishers?: number;
}

/** Why a fault publisher was not registered (ok = registered or re-registered). */
export type FaultRegisterOutcome = 'ok' | 'max-serve-jobs' | 'roles-per-job' | 'publishers-per-client' | 'publishers';

const CLUSTER_WIDE = '-1';
const faultKey = (jobId: string, role: string): string => `${jobId}\u0000${role}`;
const bump = (m: Map<string, number>, k: string, by: number): void => {
  const n = (m.get(k) ?? 0) + by;
  if (n <= 0) m.delete(k);
  else m.set(k, n);
};

interface Publisher { jobId: string; role: string; client: string; stream?: Closable }

/** Fault publishers: (jobId, role) -> registered, with at most one stream each. */
export class FaultRegistry {
  private readonly publishers = new Map<string, Publisher>();
  /** jobId -> number of publishers (roles) of that job. */
  private readonly jobRefs = new Map<string, number>();
  /** client address -> number of publishers it registered. */
  private readonly clientRefs = new Map<string, number>();
  readonly maxServeJobs: number;
  readonly maxRolesPerJob: number;
  readonly maxPublishersPerClient: number;
  readonly maxPublishers: number;

  constructor(deps: FaultRegistryDeps = {}) {
    this.maxServeJobs = deps.maxServeJobs ?? DEFAULT_MAX_SERVE_JOBS;
    this.maxRolesPerJob = deps.maxRolesPerJob ?? 0;
    this.maxPublishersPerClient = deps.maxPublishersPerClient ?? 0;
    this.maxPublishers = deps.maxPublishers ?? 0;
  }

  /**
   * Register (or re-register, ending the previous publisher's stream) from client address `client`.
   * A new (jobId, role) is refused at a cap; re-registering a known one is always allowed.
   */
  register(jobId: string, role: string, client = ''): FaultRegisterOutcome {
    const key = faultKey(jobId, role);
    const previous = this.publishers.get(key);
    if (previous === undefined) {
      const refs = this.jobRefs.get(jobId) ?? 0;
      if (refs === 0 && this.jobRefs.size >= this.maxServeJobs) return 'max-serve-jobs';
      if (this.maxRolesPerJob > 0 && jobId !== CLUSTER_WIDE && refs >= this.maxRolesPerJob) return 'roles-per-job';
      if (this.maxPublishersPerClient > 0 && (this.clientRefs.get(client) ?? 0) >= this.maxPublishersPerClient) return 'publishers-per-client';
      if (this.maxPublishers > 0 && this.publishers.size >= this.maxPublishers) return 'publishers';
      bump(this.jobRefs, jobId, 1);
    } else {
      bump(this.clientRefs, previous.client, -1);
    }
    bump(this.clientRefs, client, 1);
    this.publishers.set(key, { jobId, role, client });
    previous?.stream?.close('replaced');
    return 'ok';
  }

  isRegistered(jobId: string, role: string): boolean {
    return this.publishers.has(faultKey(jobId, role));
  }

  /** Attach a stream to a registered publisher; a stream already attached is closed as `replaced`. */
  attachStream(jobId: string, role: string, stream: Closable): boolean {
    const p = this.publishers.get(faultKey(jobId, role));
    if (p === undefined) return false;
    const previous = p.stream;
    p.stream = stream;
    if (previous !== undefined && previous.id !== stream.id) previous.close('replaced');
    return true;
  }

  detachStream(jobId: string, role: string, stream: Closable): void {
    const p = this.publishers.get(faultKey(jobId, role));
    if (p?.stream?.id === stream.id) delete p.stream;
  }

  /** Drop every publisher of a job (job deleted). */
  forget(jobId: string): void {
    for (const [k, p] of this.publishers) {
      if (p.jobId !== jobId) continue;
      this.publishers.delete(k);
      bump(this.clientRefs, p.client, -1);
      p.stream?.close('forgotten');
    }
    this.jobRefs.delete(jobId);
  }

  closeAll(reason: StreamCloseReason): void {
    for (const p of this.publishers.values()) p.stream?.close(reason);
  }

  size(): number {
    return this.publishers.size;
  }

  jobCount(): number {
    return this.jobRefs.size;
  }

  /** Publishers registered from one client address. */
  clientCount(client: string): number {
    return this.clientRefs.get(client) ?? 0;
  }

  /** Publishers with an open stream. */
  streamCount(): number {
    let n = 0;
    for (const p of this.publishers.values()) if (p.stream !== undefined) n++;
    return n;
  }
}
