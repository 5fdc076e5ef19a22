/**
 * Leader election over a coordination.k8s.io/v1 Lease, in the manner of client-go's: a candidate
 * takes the lease when it is free or when the holder has not renewed it for a full lease duration
 * *as observed locally* (so clock skew between replicas does not matter); the leader renews every
 * retry period and gives up leadership when it cannot renew within the renew deadline. Losing the
 * lease is reported once; the caller should stop acting at once (main.ts exits and restarts).
 */
import type { QueueClock } from './clock.ts';
import { isConflict, isNotFound, paths, type KubeClient, type KubeObject } from './kube-client.ts';

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export interface LeaderElectionOptions {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly onStartedLeading: () => void;
  readonly onStoppedLeading: () => void;
  readonly onNewLeader?: (identity: string) => void;
  readonly log?: { info(m: string, f?: object): void; warn(m: string, f?: object): void };
  /** The controller's clock (runtime/clock.ts): the retry period and the locally observed times. */
  readonly clock: QueueClock;
}

const micro = (ms: number): string => new Date(ms).toISOString().replace('Z', '000Z');

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly o: Required<Omit<LeaderElectionOptions, 'onNewLeader' | 'log'>> & Pick<LeaderElectionOptions, 'onNewLeader' | 'log'>;
  private timer: unknown;
  private leading = false;
  private stopped = false;
  private lastRenewMs = 0;
  private observedRv = '';
  private observedAtMs = 0;
  private observedHolder = '';

  constructor(client: KubeClient, opts: LeaderElectionOptions) {
    this.client = client;
    this.o = {
      leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, ...opts,
    };
    if (this.o.renewDeadlineMs >= this.o.leaseDurationMs) throw new Error('renew deadline must be shorter than the lease duration');
  }

  get isLeader(): boolean { return this.leading; }
  get leader(): string { return this.observedHolder; }

  start(): void {
    this.stopped = false;
    void this.tick();
  }

  /** Stops campaigning; a leader releases the lease so a standby can take over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer);
    if (this.leading) {
      this.leading = false;
      try {
        const lease = await this.client.get<Lease>(paths.lease(this.o.namespace, this.o.name));
        if (lease.spec?.holderIdentity === this.o.identity) {
          await this.client.replace(paths.lease(this.o.namespace, this.o.name), { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 } });
        }
      } catch (e) {
        this.o.log?.warn('could not release the leader lease', { err: String(e) });
      }
    }
  }

  /** Stops campaigning without releasing: what a killed process looks like to the others (tests). */
  abandon(): void {
    this.stopped = true;
    this.leading = false;
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimeout(() => void this.tick(), this.o.retryPeriodMs);
  }

  private async tick(): Promise<void> {
    let ok = false;
    try {
      ok = await this.tryAcquireOrRenew();
    } catch (e) {
      this.o.log?.warn('leader election request failed', { err: String(e) });
    }
    const now = this.o.clock.now();
    if (ok) {
      this.lastRenewMs = now;
      if (!this.leading && !this.stopped) {
        this.leading = true;
        this.o.log?.info('became leader', { lease: `${this.o.namespace}/${this.o.name}`, identity: this.o.identity });
        this.o.onStartedLeading();
      }
    } else if (this.leading && now - this.lastRenewMs > this.o.renewDeadlineMs) {
      this.leading = false;
      this.o.log?.warn('lost leadership: could not renew the lease in time', { renewDeadlineMs: this.o.renewDeadlineMs });
      this.o.onStoppedLeading();
    }
    this.schedule();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.o.clock.now();
    const path = paths.lease(this.o.namespace, this.o.name);
    const durationS = Math.ceil(this.o.leaseDurationMs / 1000);
    let lease: Lease | undefined;
    try {
      lease = await this.client.get<Lease>(path);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    if (lease === undefined) {
      try {
        await this.client.create(paths.leases(this.o.namespace), {
          apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.o.name, namespace: this.o.namespace },
          spec: { holderIdentity: this.o.identity, leaseDurationSeconds: durationS, acquireTime: micro(now), renewTime: micro(now), leaseTransitions: 0 },
        });
        this.observe(this.o.identity, '', now);
        return true;
      } catch (e) {
        if (isConflict(e)) return false;
        throw e;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const rv = lease.metadata?.resourceVersion ?? '';
    if (rv !== this.observedRv) this.observe(holder, rv, now);
    const heldByOther = holder !== '' && holder !== this.o.identity;
    const expired = now - this.observedAtMs > (spec.leaseDurationSeconds ?? durationS) * 1000;
    if (heldByOther && !expired) return false;
    const taking = holder !== this.o.identity;
    const next: Lease = {
      ...lease,
      spec: {
        ...spec, holderIdentity: this.o.identity, leaseDurationSeconds: durationS, renewTime: micro(now),
        acquireTime: taking ? micro(now) : spec.acquireTime, leaseTransitions: (spec.leaseTransitions ?? 0) + (taking ? 1 : 0),
      },
    };
    try {
      const updated = await this.client.replace<Lease>(path, next);
      this.observe(this.o.identity, updated.metadata?.resourceVersion ?? '', now);
      return true;
    } catch (e) {
      if (isConflict(e)) return false;
      throw e;
    }
  }

  private observe(holder: string, rv: string, now: number): void {
    this.observedRv = rv;
    this.observedAtMs = now;
    if (holder !== this.observedHolder) {
      this.observedHolder = holder;
      if (holder !== '') this.o.onNewLeader?.(holder);
    }
  }
}
