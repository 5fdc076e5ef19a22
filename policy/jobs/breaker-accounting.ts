/**
 * What the blast-radius breaker counts for a job restart, and where its counts come from.
 *
 * A job restart is counted once per job and fault set (`restartCountKey`), not once per restart
 * generation: a job whose new pods land on the same faulty chip again restarts each generation (flap
 * damping's restart budget spaces those out), but it is one job with one fault, not a cluster-wide
 * event. A failed pod counts by its reason, not by the pod (each generation's pods are new).
 *
 * Where the counts come from, in words an operator can act on: the writer of
 * the fault behind a counted chip, node or restart. A public fault names its ConfigMap
 * (`public-fault <namespace>/<name>`) or gRPC sender (`public-fault grpc-pubfault/<resource>`);
 * device-info (the device plugin, chips and switch), node-info (NodeD), node-ready (the Node's Ready
 * condition) and pod (a failed pod) name the kind of writer. The metric label keeps only the kind
 * (`sourceKind`), so its values stay few.
 */
import type { FaultRecord, FaultSource } from '../../vocabulary/fault-types.ts';
import { fingerprintHash } from './job-decision-id.ts';

/** The hardware or reason of one restart cause. */
export interface CountedCause {
  readonly origin: FaultSource | 'pod';
  readonly node?: string | undefined;
  readonly device?: string | undefined;
  readonly code: string;
}

/** `<job uid>/f<hash of the causes>`: the same job restarted again for the same faults is the same key. */
export function restartCountKey(jobUid: string, causes: readonly CountedCause[]): string {
  const what = [...new Set(causes.map((c) => (c.origin === 'pod' ? `pod:${c.code}` : `${c.origin}:${c.node ?? '-'}/${c.device ?? '-'}/${c.code}`)))].sort();
  return `${jobUid}/f${fingerprintHash(what.join('\n'))}`;
}

const WRITER: Readonly<Record<FaultSource | 'pod', string>> = {
  npu: 'device-info', network: 'device-info', switch: 'device-info', node: 'node-info', 'node-ready': 'node-ready', public: 'public-fault', pod: 'pod',
};

/** One fault's writer: `public-fault <origin>` for public faults, else the writer's kind. */
export function sourceOf(r: { readonly source: FaultSource | 'pod'; readonly origin?: string | undefined }): string {
  return r.source === 'public' ? `${WRITER.public} ${r.origin ?? 'unknown'}` : WRITER[r.source];
}

/** The distinct writers of some faults, sorted, joined by `, ` ('' when none). */
export function sourcesOf(records: readonly Pick<FaultRecord, 'source' | 'origin'>[]): string {
  return [...new Set(records.map(sourceOf))].sort().join(', ');
}

/** The kinds of writer in a `sourcesOf` text, for a metric label: `public-fault`, `device-info+public-fault`, `unknown`. */
export function sourceKind(sources: string): string {
  const kinds = [...new Set(sources.split(', ').filter((s) => s !== '').map((s) => s.split(' ')[0]!))].sort();
  return kinds.length === 0 ? 'unknown' : kinds.join('+');
}

/** Per source, how many of `stamps` came from it, largest first: `public-fault t/pf: 600, device-info: 41`. */
export function bySource(stamps: readonly { readonly source?: string | undefined }[]): string {
  const n = new Map<string, number>();
  for (const s of stamps) n.set(s.source ?? 'unknown', (n.get(s.source ?? 'unknown') ?? 0) + 1);
  return [...n].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k, v]) => `${k}: ${v}`).join(', ');
}
