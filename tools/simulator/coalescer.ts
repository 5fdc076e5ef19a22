/**
 * Per-key write coalescing: at most one write per key every `minIntervalMs` (the device plugin's
 * MinCMReportInterval = 1 s), requests that arrive meanwhile share the next write. A write starts
 * right away when the key has been quiet long enough. Plus a small limiter for requests in flight.
 */

interface Waiter<R> {
  readonly resolve: (r: R) => void;
  readonly reject: (e: unknown) => void;
}

interface KeyState<R> {
  lastStartMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  inFlight: Promise<void> | undefined;
  next: Array<Waiter<R>>;
}

export class Coalescer<R> {
  private readonly keys = new Map<string, KeyState<R>>();
  private readonly write: (key: string) => Promise<R>;
  private readonly minIntervalMs: number;
  private readonly now: () => number;
  private closed = false;
  /** Writes started, per key (tests and the benchmark read it). */
  readonly writes = new Map<string, number>();

  constructor(write: (key: string) => Promise<R>, minIntervalMs: number, now: () => number = Date.now) {
    this.write = write;
    this.minIntervalMs = minIntervalMs;
    this.now = now;
  }

  /** Resolves with the result of the first write of `key` that starts after this call. */
  request(key: string): Promise<R> {
    if (this.closed) return Promise.reject(new Error('coalescer is closed'));
    const st = this.stateOf(key);
    const p = new Promise<R>((resolve, reject) => st.next.push({ resolve, reject }));
    this.schedule(key, st);
    return p;
  }

  /** True when a write of key is waiting or running. */
  busy(key: string): boolean {
    const st = this.keys.get(key);
    return st !== undefined && (st.timer !== undefined || st.inFlight !== undefined || st.next.length > 0);
  }

  /** Waits until every requested write has finished (including the ones they cause). */
  async flush(): Promise<void> {
    for (;;) {
      const pending = [...this.keys.entries()].filter(([k]) => this.busy(k));
      if (pending.length === 0) return;
      await Promise.allSettled(pending.map(([k]) => this.settled(k)));
    }
  }

  /** Cancels waiting writes (their promises reject); running writes finish. */
  close(): void {
    this.closed = true;
    for (const st of this.keys.values()) {
      if (st.timer !== undefined) clearTimeout(st.timer);
      st.timer = undefined;
      const waiters = st.next.splice(0);
      for (const w of waiters) w.reject(new Error('coalescer closed before the write'));
    }
  }

  private settled(key: string): Promise<void> {
    const st = this.keys.get(key);
    if (st === undefined) return Promise.resolve();
    // Ride on the next write's promise; a closed coalescer rejects it, which allSettled absorbs.
    if (st.next.length > 0 || st.timer !== undefined) return new Promise<void>((res) => st.next.push({ resolve: () => res(), reject: () => res() }));
    return st.inFlight ?? Promise.resolve();
  }

  private stateOf(key: string): KeyState<R> {
    let st = this.keys.get(key);
    if (st === undefined) {
      st = { lastStartMs: -Infinity, timer: undefined, inFlight: undefined, next: [] };
      this.keys.set(key, st);
    }
    return st;
  }

  private schedule(key: string, st: KeyState<R>): void {
    if (this.closed || st.timer !== undefined || st.inFlight !== undefined || st.next.length === 0) return;
    const delay = Math.max(0, st.lastStartMs + this.minIntervalMs - this.now());
    st.timer = setTimeout(() => this.run(key, st), delay);
  }

  private run(key: string, st: KeyState<R>): void {
    st.timer = undefined;
    const waiters = st.next.splice(0);
    st.lastStartMs = this.now();
    this.writes.set(key, (this.writes.get(key) ?? 0) + 1);
    st.inFlight = this.write(key).then(
      (r) => { for (const w of waiters) w.resolve(r); },
      (e: unknown) => { for (const w of waiters) w.reject(e); },
    ).finally(() => {
      st.inFlight = undefined;
      this.schedule(key, st);
    });
  }
}

/** Runs at most `max` tasks at a time. */
export class Limiter {
  private active = 0;
  private readonly queue: Array<() => void> = [];
  private readonly max: number;

  constructor(max: number) {
    this.max = Math.max(1, max);
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.max) await new Promise<void>((res) => this.queue.push(res));
    this.active++;
    try {
      return await task();
    } finally {
      this.active--;
      this.queue.shift()?.();
    }
  }
}
