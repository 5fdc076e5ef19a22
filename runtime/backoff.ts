/** Exponential backoff with a cap and optional jitter; `reset()` after a success. */
export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly jitter: number;
  private readonly random: () => number;

  constructor(opts: { initialMs?: number; maxMs?: number; jitter?: number; random?: () => number } = {}) {
    this.initialMs = opts.initialMs ?? 500;
    this.maxMs = opts.maxMs ?? 30_000;
    this.jitter = opts.jitter ?? 0.2;
    this.random = opts.random ?? Math.random;
  }

  /** Delay before the next attempt, in ms. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    const spread = base * this.jitter * (this.random() * 2 - 1);
    return Math.max(0, Math.round(Math.min(this.maxMs, base + spread)));
  }

  reset(): void {
    this.attempt = 0;
  }
}
