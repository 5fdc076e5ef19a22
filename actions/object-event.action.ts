/**
 * A Kubernetes Event on any object (the breaker's ConfigMap, a Node whose isolation was held). The
 * name is derived from `key`, so the same note posted twice (a requeued pass) creates one Event.
 * Best effort: the caller logs a failure; it never fails a pass.
 */
import { isConflict, paths, type KubeClient } from '../runtime/kube-client.ts';
import { fingerprintHash } from '../policy/jobs/job-decision-id.ts';
import { EVENT_COMPONENT, truncateUtf8 } from './job-event.action.ts';

export interface ObjectEventSpec {
  /** Namespace of the Event (`default` for cluster-scoped objects). */
  readonly namespace: string;
  readonly object: { readonly apiVersion: string; readonly kind: string; readonly name: string; readonly namespace?: string; readonly uid?: string };
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  readonly key: string;
  readonly atMs: number;
}

export async function recordObjectEvent(client: KubeClient, e: ObjectEventSpec): Promise<boolean> {
  const at = new Date(e.atMs).toISOString();
  try {
    await client.create(paths.events(e.namespace), {
      apiVersion: 'v1', kind: 'Event',
      metadata: { name: `${e.object.name.slice(0, 200)}.${fingerprintHash(`${e.key}|${e.reason}`)}`, namespace: e.namespace },
      involvedObject: { ...e.object },
      reason: e.reason, message: truncateUtf8(e.message), type: e.type,
      firstTimestamp: at, lastTimestamp: at, count: 1,
      source: { component: EVENT_COMPONENT }, reportingComponent: EVENT_COMPONENT, reportingInstance: EVENT_COMPONENT,
    });
    return true;
  } catch (err) {
    if (isConflict(err)) return false;
    throw err;
  }
}
