/**
 * A cap on the series of one labelled metric whose label values come from input (fault codes,
 * namespaces): the first `max` distinct label sets get their own series, every later one is
 * aggregated into an `other` series, counted in `clusterd_bound_hits_total{bound="metric_series"}`
 * and logged. A gauge series that goes back to zero frees its place. One device-info with 10,000
 * distinct codes used to make 10,001 `clusterd_faults` series, so input could blow up /metrics.
 */
import { BOUNDS, type BoundReporter } from './bounds.ts';

/** Label value of the aggregated series. */
export const OVERFLOW_LABEL = 'other';
/** Default cap per metric (`--max-series-per-metric`). */
export const DEFAULT_MAX_SERIES_PER_METRIC = 1_000;

export class SeriesCap {
  private readonly admitted = new Set<string>();
  private readonly metric: string;
  private readonly bounds: BoundReporter;
  max: number;

  constructor(metric: string, max: number, bounds: BoundReporter) {
    this.metric = metric;
    this.max = max;
    this.bounds = bounds;
  }

  /** true when `key` has (or now gets) its own series; false = aggregate it into `other`. */
  admit(key: string): boolean {
    if (this.admitted.has(key)) return true;
    if (this.admitted.size < this.max) {
      this.admitted.add(key);
      return true;
    }
    this.bounds.hit(BOUNDS.metricSeries, 'metric series cap reached; further label values are aggregated into "other"', { metric: this.metric, maxSeries: this.max, labels: key.split('\u0000') });
    return false;
  }

  has(key: string): boolean { return this.admitted.has(key); }

  /** The series of `key` was removed (gauge back to zero): its place is free again. */
  release(key: string): void { this.admitted.delete(key); }

  get size(): number { return this.admitted.size; }
}
