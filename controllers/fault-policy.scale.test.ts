/**
 * 16,000 nodes' worth of device-info at once (scale, and bad input): every ConfigMap goes through the
 * FaultStore (CheckCode verified) and the fault policy, the 20 s rule fires for thousands of nodes
 * in one timer pass, and the cluster view and the persisted state are built. Prints the time taken.
 */
import { FaultStore } from '../state/fault-store.ts';
import { FaultPolicyEngine } from './fault-policy-engine.ts';
import { PolicyConfigTracker } from '../state/fault-policy-config.ts';
import { ManualClock, settle } from '../test/support/fault-policy-test-kit.ts';
import { silentLogger } from '../telemetry/logger.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../schemas/device-info/device-info.ts';
import { encodeWithinBound } from '../reconcilers/escalation-state.reconciler.ts';
import { desiredShards, renderClusterInfo } from '../reconcilers/cluster-info.reconciler.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';

const NODES = 16_000;
const chips = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);

function deviceInfoCm(i: number, nowMs: number): ConfigMap {
  const faults = [];
  if (i % 4 === 0) faults.push(makeDeviceFault('CardNetworkUnhealthy', 'Ascend910-2', [{ code: '81078603', level: 'NotHandleFault', timeMs: nowMs - 5_000 }]));
  if (i % 8 === 1) faults.push(makeDeviceFault('CardUnhealthy', 'Ascend910-3', [{ code: '80E18402', level: 'SeparateNPU', timeMs: nowMs - 5_000 }]));
  if (i % 16 === 2) faults.push(makeDeviceFault('CardUnhealthy', 'Ascend910-5', [{ code: '80E18005', level: 'RestartNPU', timeMs: nowMs - 5_000 }]));
  const unhealthy = faults.filter((f) => f.fault_type === 'CardUnhealthy' && f.fault_level === 'SeparateNPU').map((f) => f.npu_name);
  return {
    metadata: { name: deviceInfoCmName(`scale-${i}`), namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS }, resourceVersion: String(i + 1) },
    data: encodeDeviceInfoData({ available: chips.filter((c) => !unhealthy.includes(c)), unhealthy, faults, updateTimeS: Math.floor(nowMs / 1000) }),
  };
}

describe('16,000 nodes of device-info at once', () => {
  it('is handled without a crash, escalates in one timer pass and renders the cluster view', async () => {
    const clock = new ManualClock();
    const store = new FaultStore();
    const tracker = new PolicyConfigTracker();
    tracker.updateFaultConfig(undefined);
    tracker.updateClusterdConfig(undefined);
    const changed = new Set<string>();
    const engine = new FaultPolicyEngine({
      log: silentLogger, metrics: new Metrics({ processMetrics: false }), clock,
      usage: { jobOf: () => undefined, inUse: () => false, nodeHasNpuPods: () => false },
      records: (n) => store.records(n), nodes: () => store.nodeNames(),
      onViewChange: (nodes) => { for (const n of nodes) changed.add(n); }, onStateChange: () => undefined,
      deviceRules: true, // the 81078603 20 s rule below is the --device-plugin-rules extension
    }, tracker.current);
    engine.restore(undefined, undefined, clock.now());

    const cms = Array.from({ length: NODES }, (_, i) => deviceInfoCm(i, clock.now()));
    const t0 = performance.now();
    for (const cm of cms) expect(store.applyDeviceInfo(cm, clock.now())).toBeUndefined();
    const tIntake = performance.now();
    engine.observe(store.drainDirty(), clock.now());
    const tPolicy = performance.now();
    const effective = (n: string) => engine.effective(n, store.records(n), clock.now());
    const shards = desiredShards(renderClusterInfo(store, effective, clock.now()), []);
    const tRender = performance.now();

    await clock.run(16_000); // 81078603 first seen 5 s ago: its 20 s rule fires now, from the deadline key alone
    await settle();
    const tTimer = performance.now();
    expect(changed.size).toBe(NODES / 4);
    expect(effective('scale-0').find((r) => r.code === '81078603')?.level).toBe('PreSeparateNPU');
    expect(effective('scale-1').find((r) => r.code === '80E18402')?.level).toBe('SeparateNPU');
    const doc = engine.persistedState(clock.now())!;
    expect(Object.keys(doc.escalation.tracks)).toHaveLength(NODES / 4 + NODES / 16);
    const enc = encodeWithinBound(doc);
    expect(enc.ok).toBe(true);
    const shards2 = desiredShards(renderClusterInfo(store, effective, clock.now()), []);
    const tEnd = performance.now();
    expect(shards2.get('cluster-info-device-0')).toContain('PreSeparateNPU');

    const ms = (a: number, b: number): string => `${Math.round(b - a)} ms`;
    process.stdout.write(`\n16,000 nodes: intake (parse + CheckCode) ${ms(t0, tIntake)}, policy ${ms(tIntake, tPolicy)}, cluster view ${ms(tPolicy, tRender)} (${shards.size} ConfigMaps), `
      + `20 s rule for ${changed.size} nodes ${ms(tRender, tTimer)}, state ${enc.ok ? Buffer.byteLength(enc.text) : 0} bytes (${enc.rederivable} re-derivable tracks left out) + view again ${ms(tTimer, tEnd)}; total ${ms(t0, tEnd)}\n`);
  }, 120_000);
});
