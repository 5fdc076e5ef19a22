/**
 * The fault policy end to end on the real apiserver: device-info written as the device plugin writes
 * it, cluster-info-* read back as Volcano reads it. By default (as ClusterD) an 81078603 held past 20 s
 * keeps the device plugin's level and its chip; with --device-plugin-rules the 20 s parameter-plane
 * rule fires from the policy's own timer; ClusterD's manual separation lands in clusterd-manual-info-cm and an operator's
 * deletion releases it; mindx-dl-fault-config re-levels codes and its bad entries are ignored;
 * escalation counters survive a Manager restart. Each file gets its own cluster-system namespace
 * (--cluster-system-namespace) and unique node names: the control plane is shared.
 */
import { deviceEntry } from '../support/cluster-info-read.ts';
import { randomBytes } from 'node:crypto';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import { encodeDeviceInfoData, makeDeviceFault, type CodeAtLevel } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import type { DeviceFaultType } from '../../schemas/device-info/device-fault.ts';
import type { DeviceInfoEntry } from '../../schemas/cluster-info/cluster-info.ts';
import { DEFAULT_FAULT_CODE_CONFIG, encodeFaultCode } from '../../schemas/fault-code/fault-code.ts';
import { DEFAULT_FAULT_CUSTOMIZATION, encodeFaultCustomization } from '../../schemas/fault-customization/fault-customization.ts';
import { ESCALATION_STATE_CM_NAME, ESCALATION_STATE_KEY, parseEscalationState } from '../../schemas/escalation-state/escalation-state.ts';
import { MANUAL_INFO_CM_NAME } from '../../schemas/manual-info/manual-info.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { adminClient, ensureNamespace, eventually, newNamespace } from '../support/cluster.ts';
import { clockScheduler, realClock, type Clock, type QueueClock } from '../../runtime/clock.ts';

const P = 'huawei.com/Ascend910';
const chips = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);
const uniq = randomBytes(3).toString('hex');
const nodeName = (what: string): string => `pol-${what}-${uniq}`;
const sleepUntil = (t: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));

async function putCm(client: KubeClient, ns: string, name: string, data: Record<string, string>, labels: Record<string, string> = {}): Promise<ConfigMap> {
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap(ns, name));
  if (existing === undefined) return client.create(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels }, data });
  return client.replace(paths.configMap(ns, name), { ...existing, data });
}

/** Writes device-info as the device plugin does; `faults` of one type per chip. */
async function deviceInfo(client: KubeClient, node: string, faults: Array<{ type: DeviceFaultType; chip: string; codes: CodeAtLevel[] }> = [], unhealthy: string[] = []): Promise<ConfigMap> {
  return putCm(client, 'kube-system', deviceInfoCmName(node), encodeDeviceInfoData({
    available: chips.filter((c) => !unhealthy.includes(c)), unhealthy, updateTimeS: Math.floor(Date.now() / 1000),
    faults: faults.map((f) => makeDeviceFault(f.type, f.chip, f.codes)),
  }), DEVICE_INFO_LABELS);
}


/** Level of `code` on `chip` in the entry's `-Fault` list (undefined: not listed). */
function levelIn(e: DeviceInfoEntry | undefined, chip: string, code: string): string | undefined {
  const faults = JSON.parse(e?.DeviceList[`${P}-Fault`] ?? '[]') as Array<{ npu_name: string; fault_time_and_level_map: Record<string, { fault_level: string }> | null; fault_level: string }>;
  const f = faults.find((x) => x.npu_name === chip && (code === '' || x.fault_time_and_level_map?.[code] !== undefined));
  return code === '' ? f?.fault_level : f?.fault_time_and_level_map?.[code]?.fault_level;
}
const listed = (e: DeviceInfoEntry | undefined, key: string, chip: string): boolean => (e?.DeviceList[`${P}${key}`] ?? '').split(',').includes(chip);

describe('fault policy on the real apiserver', () => {
  const client = adminClient();
  const lines: LogLine[] = [];
  const metrics = new Metrics({ processMetrics: false });
  let skewMs = 0;
  const skewed: QueueClock = { ...realClock, now: () => Date.now() + skewMs };
  const skewedClock: Clock = { ...skewed, scheduler: clockScheduler(skewed) };
  let csNs = '';
  let manager: Manager;
  const newManager = (extra: string[] = []): Manager => new Manager({
    // Real timers on a skewed time (the skew stands for hours passing), one clock for queues and FSMs.
    clock: skewedClock,
    client, log: recordingLogger(lines), metrics,
    options: parseOptions(['--http-port=0', '--grpc-port=0', '--cluster-info-refresh-seconds=0', `--cluster-system-namespace=${csNs}`, ...extra], {}),
  });

  beforeAll(async () => {
    for (const ns of ['mindx-dl', 'kube-system']) await ensureNamespace(client, ns);
    csNs = await newNamespace(client, 'cs');
    manager = newManager();
    await manager.start();
  }, 60_000);

  afterAll(async () => { await manager.stop(); });

  it('by default (as ClusterD) 81078603 held 22 s keeps the device plugin\'s NotHandleFault and the chip stays available', async () => {
    // ClusterD keeps the level the device plugin wrote (faultdomain.splitDeviceFault) and applies no
    // FaultDuration rule: the 20 s rule is the device plugin's own (its faultCustomization.json).
    const held = nodeName('kept');
    const t0 = Date.now();
    await deviceInfo(client, held, [{ type: 'CardNetworkUnhealthy', chip: 'Ascend910-2', codes: [{ code: '81078603', level: 'NotHandleFault', timeMs: t0 }] }]);
    await eventually(async () => levelIn(await deviceEntry(client, held), 'Ascend910-2', '81078603') === 'NotHandleFault');
    await sleepUntil(t0 + 22_000);
    await manager.clusterInfo.idle();
    const e = await deviceEntry(client, held);
    expect(levelIn(e, 'Ascend910-2', '81078603')).toBe('NotHandleFault');
    expect(listed(e, '', 'Ascend910-2')).toBe(true);
    expect(listed(e, '-NetworkUnhealthy', 'Ascend910-2')).toBe(false);
    expect(lines.filter((l) => l.msg === 'fault escalated' && l.node === held)).toEqual([]);
  }, 60_000);

  it('3 hardware faults in 24 h on a job NPU -> ManuallySeparateNPU in clusterd-manual-info-cm and cluster-info; deleting it from Total releases it', async () => {
    const node = nodeName('manual');
    const ns = await newNamespace(client, 'job');
    await client.create(paths.pods(ns), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'worker-0', namespace: ns, annotations: { 'huawei.com/AscendReal': 'Ascend910-1', 'scheduling.k8s.io/group-name': 'job-a' } },
      spec: { nodeName: node, containers: [{ name: 'main', image: 'busybox', resources: { limits: { 'huawei.com/Ascend910': '1' } } }] },
    });
    await eventually(() => manager.faultPolicy.usage.jobOf(node, 'Ascend910-1') === `${ns}/job-a`);
    const code = '8C084E00';
    for (let i = 0; i < 3; i++) {
      await deviceInfo(client, node, [{ type: 'CardUnhealthy', chip: 'Ascend910-1', codes: [{ code, level: 'FreeRestartNPU', timeMs: Date.now() }] }]);
      await eventually(() => manager.deviceFaults.effective(node).some((r) => r.code === code));
      await deviceInfo(client, node);
      await eventually(() => !manager.deviceFaults.effective(node).some((r) => r.code === code));
    }
    // ClusterD judges a job's faults 30 s after the first one (software vs hardware): skip ahead instead of waiting.
    skewMs += 31_000;
    manager.faultPolicy.reevaluate();
    const info = await eventually(async () => (await client.getOrUndefined<ConfigMap>(paths.configMap(csNs, MANUAL_INFO_CM_NAME)))?.data?.[node]);
    expect(JSON.parse(info)).toEqual({ Total: ['Ascend910-1'], Detail: { 'Ascend910-1': [{ FaultCode: code, FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: expect.any(Number) }] } });
    const e = await eventually(async () => {
      const x = await deviceEntry(client, node);
      return levelIn(x, 'Ascend910-1', '') === 'ManuallySeparateNPU' ? x : undefined;
    });
    // ClusterD's injected fault: no code, no time map (the recovered code is not listed again)
    expect(JSON.parse(e!.DeviceList[`${P}-Fault`] ?? '[]')).toEqual([expect.objectContaining({ npu_name: 'Ascend910-1', fault_code: '', fault_time_and_level_map: {}, fault_level: 'ManuallySeparateNPU' })]);
    expect(listed(e, '-Unhealthy', 'Ascend910-1')).toBe(true);
    expect(lines.find((l) => l.msg === 'fault escalated' && l.node === node)).toMatchObject({ npu: 'Ascend910-1', code, faultLevel: 'ManuallySeparateNPU', rule: 'manual-separation', reasons: expect.stringContaining('hardware fault counted') });
    // the operator deletes the NPU from Total
    const cm = await client.get<ConfigMap>(paths.configMap(csNs, MANUAL_INFO_CM_NAME));
    const t0 = Date.now();
    await client.replace(paths.configMap(csNs, MANUAL_INFO_CM_NAME), { ...cm, data: { ...cm.data, [node]: JSON.stringify({ Total: [], Detail: {} }) } });
    await eventually(async () => levelIn(await deviceEntry(client, node), 'Ascend910-1', '') === undefined, 15_000);
    process.stdout.write(`manual separation released ${Date.now() - t0} ms after the operator's edit of Total\n`);
    // the node leaves the ConfigMap (deleted altogether once no NPU is separated, as ClusterD)
    await eventually(async () => (await client.getOrUndefined<ConfigMap>(paths.configMap(csNs, MANUAL_INFO_CM_NAME)))?.data?.[node] === undefined, 15_000);
    expect(listed(await deviceEntry(client, node), '-Unhealthy', 'Ascend910-1')).toBe(false);
  }, 60_000);

  describe('with --device-plugin-rules (extension)', () => {
    beforeAll(async () => {
      await manager.stop();
      skewMs = 0; // the manual-separation test skipped ahead; the 20 s rule below runs on real time
      manager = newManager(['--device-plugin-rules']);
      await manager.start();
    }, 60_000);

    it('81078603 held > 20 s escalates to PreSeparateNPU with no new device-info write; held <= 20 s stays NotHandleFault', async () => {
      const held = nodeName('held');
      const brief = nodeName('brief');
      const t0 = Date.now();
      const link = (): Array<{ type: DeviceFaultType; chip: string; codes: CodeAtLevel[] }> => [{ type: 'CardNetworkUnhealthy', chip: 'Ascend910-2', codes: [{ code: '81078603', level: 'NotHandleFault', timeMs: t0 }] }];
      const written = await deviceInfo(client, held, link());
      await deviceInfo(client, brief, link());
      await eventually(async () => levelIn(await deviceEntry(client, held), 'Ascend910-2', '81078603') === 'NotHandleFault' && levelIn(await deviceEntry(client, brief), 'Ascend910-2', '81078603') === 'NotHandleFault');
      await sleepUntil(t0 + 15_000);
      await deviceInfo(client, brief); // recovered after 15 s
      expect(levelIn(await deviceEntry(client, held), 'Ascend910-2', '81078603')).toBe('NotHandleFault');
      const entry = await eventually(async () => {
        const e = await deviceEntry(client, held);
        return levelIn(e, 'Ascend910-2', '81078603') === 'PreSeparateNPU' ? e : undefined;
      }, 30_000);
      const after = Date.now() - t0;
      process.stdout.write(`81078603 escalated to PreSeparateNPU in cluster-info ${after} ms after its fault_time\n`);
      expect(after).toBeGreaterThan(20_000);
      expect(listed(entry, '-NetworkUnhealthy', 'Ascend910-2')).toBe(true);
      expect(listed(entry, '', 'Ascend910-2')).toBe(false);
      const cm = await client.get<ConfigMap>(paths.configMap('kube-system', deviceInfoCmName(held)));
      expect(cm.metadata?.resourceVersion).toBe(written.metadata?.resourceVersion); // no new device-info write
      await sleepUntil(t0 + 22_000);
      const b = await deviceEntry(client, brief);
      expect(levelIn(b, 'Ascend910-2', '81078603')).toBeUndefined();
      expect(listed(b, '-NetworkUnhealthy', 'Ascend910-2')).toBe(false);
      const esc = lines.filter((l) => l.msg === 'fault escalated');
      expect(esc.filter((l) => l.node === brief)).toEqual([]);
      const line = esc.find((l) => l.node === held);
      expect(line).toMatchObject({ node: held, npu: 'Ascend910-2', code: '81078603', faultLevel: 'PreSeparateNPU', rule: 'FaultDuration', controller: 'fault_policy' });
      expect(String(line?.reasons)).toMatch(/^81078603 -> NotHandleFault \(base-level.*-> PreSeparateNPU \(FaultDuration \[detect\.duration-escalation\]: held longer than FaultTimeout 20 s/);
      expect((await metrics.escalations.get()).values.find((v) => v.labels.rule === 'parameter_plane' && v.labels.level === 'PreSeparateNPU')?.value).toBeGreaterThanOrEqual(1);
    }, 60_000);

    describe('with kube-system/mindx-dl-fault-config', () => {
      afterEach(async () => {
        await client.delete(paths.configMap('kube-system', 'mindx-dl-fault-config')).catch(() => undefined);
        await eventually(() => !manager.faultPolicy.currentConfig.fault.central);
      });

      it('faultCode.json re-levels a code centrally; without the ConfigMap the reported level is trusted', async () => {
        const node = nodeName('central');
        await deviceInfo(client, node, [{ type: 'CardUnhealthy', chip: 'Ascend910-6', codes: [{ code: '80E21007', level: 'RestartNPU', timeMs: Date.now() }] }], ['Ascend910-6']);
        await eventually(async () => levelIn(await deviceEntry(client, node), 'Ascend910-6', '80E21007') === 'RestartNPU');
        const faultCode = encodeFaultCode({ ...DEFAULT_FAULT_CODE_CONFIG, NotHandleFaultCodes: DEFAULT_FAULT_CODE_CONFIG.NotHandleFaultCodes.filter((c) => c !== '80E21007'), SeparateNPUCodes: [...DEFAULT_FAULT_CODE_CONFIG.SeparateNPUCodes, '80E21007'] });
        await putCm(client, 'kube-system', 'mindx-dl-fault-config', { 'faultCode.json': faultCode });
        const e = await eventually(async () => {
          const x = await deviceEntry(client, node);
          return levelIn(x, 'Ascend910-6', '80E21007') === 'SeparateNPU' ? x : undefined;
        });
        expect(levelIn(e, 'Ascend910-6', '')).toBe('SeparateNPU');
        await client.delete(paths.configMap('kube-system', 'mindx-dl-fault-config'));
        await eventually(async () => levelIn(await deviceEntry(client, node), 'Ascend910-6', '80E21007') === 'RestartNPU');
      });

      it('an out-of-range faultCustomization entry is ignored with a warning and the defaults apply', async () => {
        const node = nodeName('custom');
        const text = encodeFaultCustomization({
          ...DEFAULT_FAULT_CUSTOMIZATION,
          GraceTolerance: { ...DEFAULT_FAULT_CUSTOMIZATION.GraceTolerance, WaitProcessReadCMTime: 999 },
          // would separate 80E18005 at its first occurrence if it were taken
          FaultFrequency: [{ EventId: ['80E18005'], TimeWindow: 30, Times: 1, FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 60 }, ...DEFAULT_FAULT_CUSTOMIZATION.FaultFrequency],
        });
        const before = (await metrics.invalidInput.get()).values.find((v) => v.labels.format === 'fault-config')?.value ?? 0;
        await putCm(client, 'kube-system', 'mindx-dl-fault-config', { 'faultCustomization.json': text });
        const warn = await eventually(() => lines.find((l) => l.level === 'warn' && /FaultFrequency\[0\] ignored: TimeWindow 30 outside 60-864000/.test(String(l.reason))));
        expect(warn).toMatchObject({ msg: 'fault configuration value ignored; default or last good value used', controller: 'fault_policy' });
        expect(lines.some((l) => l.level === 'warn' && /WaitProcessReadCMTime=999 outside 5-90; default 30 used/.test(String(l.reason)))).toBe(true);
        expect((await metrics.invalidInput.get()).values.find((v) => v.labels.format === 'fault-config')?.value).toBeGreaterThanOrEqual(before + 2);
        expect(manager.faultPolicy.currentConfig.fault.customization).toEqual(DEFAULT_FAULT_CUSTOMIZATION);
        await deviceInfo(client, node, [{ type: 'CardUnhealthy', chip: 'Ascend910-5', codes: [{ code: '80E18005', level: 'RestartNPU', timeMs: Date.now() }] }], ['Ascend910-5']);
        await eventually(async () => levelIn(await deviceEntry(client, node), 'Ascend910-5', '80E18005') === 'RestartNPU');
        expect(manager.faultPolicy.verdicts(node).find((v) => v.device === 'Ascend910-5')?.level).toBe('RestartNPU');
      });
    });

    it('escalation counters and escalations survive a Manager restart', async () => {
      const node = nodeName('restart');
      const hit = async (m: Manager, chip: string, code: string): Promise<void> => {
        await deviceInfo(client, node, [{ type: 'CardUnhealthy', chip, codes: [{ code, level: 'RestartNPU', timeMs: Date.now() }] }], [chip]);
        await eventually(() => m.deviceFaults.effective(node).some((r) => r.code === code && r.device === chip));
        await deviceInfo(client, node);
        await eventually(() => !m.deviceFaults.effective(node).some((r) => r.code === code));
      };
      for (let i = 0; i < 3; i++) await hit(manager, 'Ascend910-0', '80E18005'); // FaultFrequency 3 in 24 h -> ManuallySeparateNPU
      for (let i = 0; i < 2; i++) await hit(manager, 'Ascend910-4', '80E18005'); // two so far
      await eventually(async () => levelIn(await deviceEntry(client, node), 'Ascend910-0', '') === 'ManuallySeparateNPU');
      const persisted = await eventually(async () => {
        const text = (await client.getOrUndefined<ConfigMap>(paths.configMap(csNs, ESCALATION_STATE_CM_NAME)))?.data?.[ESCALATION_STATE_KEY];
        const p = text === undefined ? undefined : parseEscalationState(text);
        return p?.ok === true && p.value.escalation.tracks[`${node}/Ascend910-4/80E18005`]?.occurrences.length === 2 ? p.value : undefined;
      });
      expect(persisted.escalation.tracks[`${node}/Ascend910-0/80E18005`]?.upgrade?.level).toBe('ManuallySeparateNPU');

      await manager.stop();
      const t0 = Date.now();
      manager = newManager(['--device-plugin-rules']);
      await manager.start();
      process.stdout.write(`manager restarted and state restored in ${Date.now() - t0} ms\n`);
      expect(manager.faultPolicy.verdicts(node).map((v) => `${v.device}:${v.level}`)).toEqual(['Ascend910-0:ManuallySeparateNPU']);
      await manager.clusterInfo.idle();
      const e = await deviceEntry(client, node);
      expect(levelIn(e, 'Ascend910-0', '')).toBe('ManuallySeparateNPU'); // device-info is healthy: only the restored state says so
      expect(listed(e, '-Unhealthy', 'Ascend910-0')).toBe(true);
      await hit(manager, 'Ascend910-4', '80E18005'); // the third occurrence, after the restart
      await eventually(async () => levelIn(await deviceEntry(client, node), 'Ascend910-4', '') === 'ManuallySeparateNPU');
      expect(lines.filter((l) => l.msg === 'fault escalated' && l.node === node && l.npu === 'Ascend910-4')).toEqual([
        expect.objectContaining({ code: '80E18005', faultLevel: 'ManuallySeparateNPU', rule: 'FaultFrequency', reasons: expect.stringContaining('3 occurrences within 86400 s') }),
      ]);
    }, 90_000);
  });

  it('--persist-policy-state=false (as ClusterD): no clusterd-ts-escalation-state is written; a separation in clusterd-manual-info-cm is adopted at start', async () => {
    await manager.stop();
    skewMs = 0;
    csNs = await newNamespace(client, 'cs');
    const node = nodeName('nopersist');
    const adopted = nodeName('adopted');
    // What a ClusterD (or an earlier run) left: one separated NPU.
    await putCm(client, csNs, MANUAL_INFO_CM_NAME, { [adopted]: JSON.stringify({ Total: ['Ascend910-3'], Detail: { 'Ascend910-3': [{ FaultCode: '8C084E00', FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: Date.now() }] } }) });
    await deviceInfo(client, adopted);
    manager = newManager(['--persist-policy-state=false']);
    await manager.start();
    await eventually(async () => levelIn(await deviceEntry(client, adopted), 'Ascend910-3', '') === 'ManuallySeparateNPU');
    // A fault on a job's NPU: the manual-separation policy now holds a pending 30 s judgement, state
    // that the default (--persist-policy-state=true) writes into clusterd-ts-escalation-state.
    const ns = await newNamespace(client, 'job');
    await client.create(paths.pods(ns), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'worker-0', namespace: ns, annotations: { 'huawei.com/AscendReal': 'Ascend910-1', 'scheduling.k8s.io/group-name': 'job-p' } },
      spec: { nodeName: node, containers: [{ name: 'main', image: 'busybox', resources: { limits: { 'huawei.com/Ascend910': '1' } } }] },
    });
    await eventually(() => manager.faultPolicy.usage.jobOf(node, 'Ascend910-1') === `${ns}/job-p`);
    await deviceInfo(client, node, [{ type: 'CardUnhealthy', chip: 'Ascend910-1', codes: [{ code: '8C084E00', level: 'FreeRestartNPU', timeMs: Date.now() }] }]);
    await eventually(() => Object.keys(manager.faultPolicy.persistedState(Date.now())?.manualSeparation.pending ?? {}).includes(`${ns}/job-p`));
    await Promise.all([manager.escalationState.idle(), manager.manualInfo.idle()]);
    await new Promise((r) => setTimeout(r, 1_000)); // past the state loop's 200 ms coalescing delay
    await manager.escalationState.idle();
    expect(await client.getOrUndefined<ConfigMap>(paths.configMap(csNs, ESCALATION_STATE_CM_NAME))).toBeUndefined();
    expect((await client.get<ConfigMap>(paths.configMap(csNs, MANUAL_INFO_CM_NAME))).data?.[adopted]).toContain('Ascend910-3');
  }, 60_000);
});
