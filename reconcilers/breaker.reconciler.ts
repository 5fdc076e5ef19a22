/**
 * Writes the breaker state to `mindx-dl/clusterd-ts-breaker` (the only writer) and applies the
 * operator's reset request found on it (schemas/breaker-state/breaker-state.ts has the protocol).
 *
 * One pass: (0) a state written by someone else (a newer object whose `state` is not our last write,
 * e.g. restored from a backup or edited by hand) is adopted when readable, so the ConfigMap stays the
 * truth; (1) a reset annotation is parsed and applied when it is newer than the trip (older ones
 * are stale: logged, the trip stands); either way the request is removed, and one that reset a
 * tripped scope is recorded in `clusterd-ts.io/breaker-last-reset` (one that reset nothing does not
 * replace the record); an unreadable one is logged, counted
 * (`clusterd_invalid_input_total{format="breaker_reset"}`) and removed; (2) due auto-resets;
 * (3) Events for trips, resets and held isolations; (4) the state, written when it changed: a
 * state that differs from the persisted one only by stamps that have aged out of the window since
 * is not a change (every reader prunes on load, by the window the state names), so an idle cluster
 * sees no breaker writes (it used to write once per stamp leaving the window);
 * (5) requeue at the next auto-reset.
 * A 409 (someone wrote the annotation meanwhile) goes back to the queue and the pass runs again on
 * the fresh copy; applying a reset twice is a no-op.
 */
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { Outcome, ReconcileContext, Reconciler } from '../runtime/reconciler.ts';
import {
  BREAKER_CM_NAME, BREAKER_LABELS, BREAKER_LAST_RESET_ANNOTATION, BREAKER_NAMESPACE, BREAKER_RESET_ANNOTATION, BREAKER_STATE_KEY,
  encodeBreakerState, encodeResetRequest, parseResetRequest, type BreakerState, type ResetRequest,
} from '../schemas/breaker-state/breaker-state.ts';
import { recordObjectEvent } from '../actions/object-event.action.ts';

export const BREAKER_RECONCILE_KEY = 'breaker';

export interface BreakerNote {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  /** Names the Event (one per key). */
  readonly key: string;
}

export interface BreakerReconcilerDeps {
  readonly desired: (nowMs: number) => { readonly state: BreakerState; readonly nextMs?: number };
  readonly applyReset: (req: ResetRequest) => { readonly reset: readonly string[]; readonly stale: readonly string[] };
  readonly autoReset: (nowMs: number) => readonly string[];
  readonly drainNotes: () => BreakerNote[];
  /** The state text found on the ConfigMap (adopted by the controller when someone else wrote it). */
  readonly observed: (text: string | undefined) => void;
  /** The state text this pass wrote (or found already written). */
  readonly written: (text: string) => void;
  /** A persisted state text as readers see it at `nowMs` (aged stamps dropped); undefined when unreadable. */
  readonly aged: (text: string, nowMs: number) => string | undefined;
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly events: KubeClient;
  readonly metrics: Metrics;
}

export function breakerReconciler(d: BreakerReconcilerDeps): Reconciler {
  return {
    name: 'breaker',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      // Our own last write when the informer has not caught up with it yet (never mistaken for an edit).
      const cm = d.writer.fresher(BREAKER_NAMESPACE, BREAKER_CM_NAME, d.actual());
      d.observed(cm?.data?.[BREAKER_STATE_KEY]);
      const raw = cm?.metadata?.annotations?.[BREAKER_RESET_ANNOTATION];
      const annotations: Record<string, string> = {};
      if (raw !== undefined) {
        const p = parseResetRequest(raw);
        if (!p.ok) {
          ctx.log.warn('breaker reset annotation unreadable, removed', { annotation: BREAKER_RESET_ANNOTATION, value: raw, reason: p.reason });
          d.metrics.invalidInput.inc({ format: 'breaker_reset', reason: p.kind ?? 'invalid' });
        } else {
          const r = d.applyReset(p.value);
          ctx.log.warn('breaker reset request', { scope: p.value.scope, by: p.value.by, at: new Date(p.value.atMs).toISOString(), reset: r.reset, stale: r.stale });
          // The record names who reset a trip: a request that reset nothing (no such scope, not
          // tripped, stale) is removed but does not replace it.
          if (r.reset.length > 0) annotations[BREAKER_LAST_RESET_ANNOTATION] = encodeResetRequest(p.value);
          else ctx.log.warn('breaker reset request reset nothing; the record of the last reset is kept', { scope: p.value.scope, by: p.value.by, stale: r.stale });
        }
      }
      d.autoReset(ctx.now());
      const { state, nextMs } = d.desired(ctx.now());
      const desired = encodeBreakerState(state);
      // Aging alone is no change: keep the persisted text when it reads as the desired one now.
      const persisted = cm?.data?.[BREAKER_STATE_KEY];
      const text = persisted !== undefined && persisted !== desired && d.aged(persisted, ctx.now()) === desired ? persisted : desired;
      const requeue: Outcome = nextMs === undefined ? {} : { requeueAfterMs: Math.max(nextMs - ctx.now(), 100) };
      // Nothing ever counted: no object is created (a cluster without incidents has no breaker state).
      if (cm === undefined && Object.keys(state.scopes).length === 0 && raw === undefined) return requeue;
      const res = await d.writer.ensure('breaker', {
        namespace: BREAKER_NAMESPACE, name: BREAKER_CM_NAME, labels: { ...BREAKER_LABELS },
        annotations, ...(raw === undefined ? {} : { removeAnnotations: [BREAKER_RESET_ANNOTATION] }),
        data: { [BREAKER_STATE_KEY]: text },
      }, cm);
      d.written(text);
      const obj = res.obj ?? cm;
      for (const n of d.drainNotes()) {
        try {
          await recordObjectEvent(d.events, {
            namespace: BREAKER_NAMESPACE,
            object: { apiVersion: 'v1', kind: 'ConfigMap', namespace: BREAKER_NAMESPACE, name: BREAKER_CM_NAME, ...(obj?.metadata?.uid ? { uid: obj.metadata.uid } : {}) },
            type: n.type, reason: n.reason, message: n.message, key: n.key, atMs: ctx.now(),
          });
        } catch (e) {
          ctx.log.warn('could not record the breaker Event', { reason: n.reason, err: String(e) });
        }
      }
      return requeue;
    },
  };
}
