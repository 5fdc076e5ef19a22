/**
 * Kubernetes Events on a job's PodGroup carrying a decision's reason chain (docs/CONVENTIONS.md#logs-and-metrics). The Event
 * name is derived from the decision id, so a replayed decision creates nothing twice (409 is fine).
 * Best effort: an Event that cannot be written is logged by the caller and never fails a decision.
 */
import { isConflict, paths, type KubeClient } from '../runtime/kube-client.ts';
import { fingerprintHash } from '../policy/jobs/job-decision-id.ts';
import type { Metrics } from '../telemetry/metrics.ts';

export const EVENT_MESSAGE_MAX_BYTES = 1024;
export const EVENT_COMPONENT = 'clusterd-ts';

export interface InvolvedPodGroup {
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
}

export interface JobEventSpec {
  readonly object: InvolvedPodGroup;
  readonly decisionId: string;
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  readonly atMs: number;
}

/** Cuts a string to at most `max` UTF-8 bytes without splitting a character; marks the cut with `…`. */
export function truncateUtf8(s: string, max = EVENT_MESSAGE_MAX_BYTES): string {
  if (Buffer.byteLength(s, 'utf8') <= max) return s;
  let out = '';
  let bytes = 0;
  const budget = max - Buffer.byteLength('…', 'utf8');
  for (const ch of s) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > budget) break;
    out += ch;
    bytes += n;
  }
  return `${out}…`;
}

export const eventNameOf = (podGroupName: string, decisionId: string, reason: string): string =>
  `${podGroupName.slice(0, 200)}.${fingerprintHash(`${decisionId}|${reason}`)}`;

/** Creates the Event; answers false when it already existed (a replay). */
export async function recordJobEvent(client: KubeClient, e: JobEventSpec, metrics?: Metrics): Promise<boolean> {
  const at = new Date(e.atMs).toISOString();
  const body = {
    apiVersion: 'v1', kind: 'Event',
    metadata: { name: eventNameOf(e.object.name, e.decisionId, e.reason), namespace: e.object.namespace },
    involvedObject: {
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', namespace: e.object.namespace, name: e.object.name,
      ...(e.object.uid === undefined ? {} : { uid: e.object.uid }),
    },
    reason: e.reason,
    message: truncateUtf8(e.message),
    type: e.type,
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
    source: { component: EVENT_COMPONENT },
    reportingComponent: EVENT_COMPONENT,
    reportingInstance: EVENT_COMPONENT,
  };
  try {
    await client.create(paths.events(e.object.namespace), body);
    metrics?.apiWrites.inc({ kind: 'event', result: 'success' });
    return true;
  } catch (err) {
    if (isConflict(err)) return false;
    metrics?.apiWrites.inc({ kind: 'event', result: 'error' });
    throw err;
  }
}
