/**
 * Persists the fault policy's state (escalation counters and timers, ClusterD manual-separation
 * counters, relation and filter memories) in `<cluster-system>/clusterd-ts-escalation-state`, so a
 * restart or a leader handover continues where the last leader stopped (ClusterD loses them).
 * Desired = the engines' composed and pruned state; it is written only when its content differs
 * from the cached ConfigMap's (the `savedAtMs` stamp alone never causes a write). The controller
 * restores from the same ConfigMap before its first decision (fault-policy.controller.ts).
 */
import {
  ESCALATION_STATE_CM_NAME,
  ESCALATION_STATE_KEY,
  ESCALATION_STATE_MAX_BYTES,
  encodeEscalationState,
  parseEscalationState,
  type EncodedEscalationState,
  type EscalationStateDoc,
} from '../schemas/escalation-state/escalation-state.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';
import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';
import { TerminalError, type Outcome, type ReconcileContext, type Reconciler } from '../runtime/reconciler.ts';

export const ESCALATION_STATE_RECONCILE_KEY = 'escalation-state';
export const ESCALATION_STATE_LABELS = { 'app.kubernetes.io/managed-by': 'clusterd-ts' } as const;

export interface EscalationStateDeps {
  /** The state to persist; undefined = not restored yet (write nothing). */
  readonly desired: (nowMs: number) => EscalationStateDoc | undefined;
  /** The cached ConfigMap. */
  readonly actual: () => ConfigMap | undefined;
  readonly writer: ConfigMapWriter;
  readonly namespace: string;
}

/** The content without its save stamp, in the one encoding (unbounded: for comparison only). */
const canonical = (doc: EscalationStateDoc): string | undefined => {
  const enc = encodeEscalationState({ ...doc, savedAtMs: 0 }, Number.MAX_SAFE_INTEGER);
  return enc.ok ? enc.text : undefined;
};

/**
 * Encodes within the ConfigMap bound. Over it, FaultDuration tracks of faults still reported are left
 * out first (fewest counted occurrences first): after a restart they are re-derived from the faults'
 * own first-seen times, so only frequency counts can be lost. What still does not fit goes through
 * the encoder's own eviction order. One unbounded encode in the common case.
 */
export function encodeWithinBound(doc: EscalationStateDoc, maxBytes: number = ESCALATION_STATE_MAX_BYTES): EncodedEscalationState & { readonly rederivable: number } {
  const full = encodeEscalationState(doc, Number.MAX_SAFE_INTEGER);
  if (!full.ok) return { ...full, rederivable: 0 };
  let excess = Buffer.byteLength(full.text, 'utf8') - maxBytes;
  if (excess <= 0) return { ...full, rederivable: 0 };
  const candidates = Object.entries(doc.escalation.tracks)
    .filter(([, t]) => t.active && t.upgrade === null && t.duration !== null)
    .sort(([, a], [, b]) => a.occurrences.length - b.occurrences.length);
  const tracks = { ...doc.escalation.tracks };
  let dropped = 0;
  for (const [k, t] of candidates) {
    if (excess <= -maxBytes / 50) break; // 2 % headroom
    excess -= k.length + JSON.stringify(t).length + 4;
    delete tracks[k];
    dropped++;
  }
  return { ...encodeEscalationState({ ...doc, escalation: { tracks } }, maxBytes), rederivable: dropped };
}

export function escalationStateReconciler(deps: EscalationStateDeps): Reconciler {
  let cachedText: string | undefined;
  let cachedCanonical: string | undefined;
  const actualCanonical = (text: string): string | undefined => {
    if (text !== cachedText) {
      const p = parseEscalationState(text);
      cachedText = text;
      cachedCanonical = p.ok ? canonical(p.value) : undefined;
    }
    return cachedCanonical;
  };
  return {
    name: 'escalation_state',
    async reconcile(_key: string, ctx: ReconcileContext): Promise<Outcome> {
      const doc = deps.desired(ctx.now());
      if (doc === undefined) return {};
      const actual = deps.writer.fresher(deps.namespace, ESCALATION_STATE_CM_NAME, deps.actual());
      const text = actual?.data?.[ESCALATION_STATE_KEY];
      if (text !== undefined && actualCanonical(text) === canonical(doc)) return {};
      const enc = encodeWithinBound(doc);
      if (!enc.ok) throw new TerminalError(enc.reason);
      if (enc.rederivable > 0) ctx.log.warn('escalation state over its size bound; duration tracks of active faults left out (re-derived from fault times on restart)', { tracks: enc.rederivable });
      if (enc.evicted.length > 0) ctx.log.warn('escalation state over its size bound; least valuable entries not persisted', { evicted: enc.evicted.length, first: enc.evicted.slice(0, 10) });
      const res = await deps.writer.ensure('escalation_state', {
        namespace: deps.namespace, name: ESCALATION_STATE_CM_NAME, labels: { ...ESCALATION_STATE_LABELS }, data: { [ESCALATION_STATE_KEY]: enc.text },
      }, actual);
      if (res.written) {
        ctx.log.info('escalation state written', {
          bytes: Buffer.byteLength(enc.text, 'utf8'), tracks: Object.keys(doc.escalation.tracks).length,
          separated: Object.keys(doc.manualSeparation.separated).length, counters: Object.keys(doc.manualSeparation.counters).length,
        });
      }
      return {};
    },
  };
}
