import { escalationStateReconciler } from './escalation-state.reconciler.ts';
import { fakeConfigMaps as fakeCluster } from '../test/support/fault-policy-test-kit.ts';
import type { ReconcileContext } from '../runtime/reconciler.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { emptyEscalationStateDoc, parseEscalationState, type EscalationStateDoc } from '../schemas/escalation-state/escalation-state.ts';

const ctx = (now: number): ReconcileContext => ({ log: silentLogger, signal: new AbortController().signal, now: () => now });

const track = { node: 'n1', device: 'Ascend910-0', code: '80E18005', baseLevel: 'RestartNPU', active: false, instanceMs: 1, duration: null, occurrences: [1, 2], lastFaultMs: 2, lastRecoverMs: 3, upgrade: null };

describe('escalation-state reconciler', () => {
  it('writes the state, then nothing while only savedAtMs moves, then again when the content changes', async () => {
    const c = fakeCluster();
    let doc: EscalationStateDoc | undefined;
    const r = escalationStateReconciler({ desired: (now) => (doc === undefined ? undefined : { ...doc, savedAtMs: now }), actual: () => c.objects.get('cs/clusterd-ts-escalation-state'), writer: c.writer, namespace: 'cs' });
    await r.reconcile('k', ctx(1));
    expect(c.writes).toEqual([]); // not restored yet: never overwrite the persisted state
    doc = { ...emptyEscalationStateDoc(0), escalation: { tracks: { 'n1/Ascend910-0/80E18005': track } } };
    await r.reconcile('k', ctx(2));
    await r.reconcile('k', ctx(3));
    expect(c.writes).toEqual([{ verb: 'create', path: '/api/v1/namespaces/cs/configmaps' }]);
    const stored = parseEscalationState(c.objects.get('cs/clusterd-ts-escalation-state')!.data!['escalation-state.json']!);
    expect(stored.ok && stored.value.escalation.tracks['n1/Ascend910-0/80E18005']?.occurrences).toEqual([1, 2]);
    doc = { ...doc, escalation: { tracks: {} } };
    await r.reconcile('k', ctx(4));
    expect(c.writes.map((w) => w.verb)).toEqual(['create', 'update']);
  });
});
