/**
 * A gauge of counts whose label values come from input (fault codes, node and chip names), kept
 * behind a SeriesCap: a label set gets its own series when it first becomes non-zero and the cap has
 * room, else its count goes to the overflow series (`other` in the input labels) and stays there
 * until it is back to zero. A series whose count reaches zero is removed and frees its place.
 */
import type { Gauge } from 'prom-client';
import type { SeriesCap } from './series-cap.ts';

export class CappedGauge<L extends string> {
  private readonly totals = new Map<string, number>();
  /** Overflow series key -> the sum of the counts aggregated into it. */
  private readonly overflow = new Map<string, number>();
  private readonly gauge: Gauge<L>;
  private readonly cap: SeriesCap;
  private readonly labelNames: readonly L[];
  private readonly overflowOf: (labels: Record<L, string>) => Record<L, string>;

  constructor(gauge: Gauge<L>, cap: SeriesCap, labelNames: readonly L[], overflowOf: (labels: Record<L, string>) => Record<L, string>) {
    this.gauge = gauge;
    this.cap = cap;
    this.labelNames = labelNames;
    this.overflowOf = overflowOf;
  }

  /** The key of a label set (also the SeriesCap key; it splits back into the values, for the log). */
  keyOf(labels: Record<L, string>): string { return this.labelNames.map((n) => labels[n]).join('\u0000'); }

  add(labels: Record<L, string>, delta: number): void {
    if (delta === 0) return;
    const k = this.keyOf(labels);
    const before = this.totals.get(k) ?? 0;
    const total = before + delta;
    if (total === 0) this.totals.delete(k);
    else this.totals.set(k, total);
    if (this.cap.has(k) || (before === 0 && this.cap.admit(k))) {
      if (total === 0) { this.gauge.remove(labels); this.cap.release(k); }
      else this.gauge.set(labels, total);
      return;
    }
    const o = this.overflowOf(labels);
    const ok = this.keyOf(o);
    const sum = (this.overflow.get(ok) ?? 0) + delta;
    if (sum === 0) { this.overflow.delete(ok); this.gauge.remove(o); }
    else { this.overflow.set(ok, sum); this.gauge.set(o, sum); }
  }
}
