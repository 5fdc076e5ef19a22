/**
 * Intake hardening against bad input on the real apiserver, with the controller as the Manager wires it:
 * - a signed device-info with `UpdateTime: 1e21` is refused (out_of_range), the shard keeps the
 *   node's last good entry and every byte of it decodes into Go's int types;
 * - a malformed SwitchInfoCfg is refused alone: the node's Separate switch fault stays in
 *   cluster-info-switch-*, the device part of the same ConfigMap is taken;
 * - every device-info carrying SwitchInfoCfg has a switch entry, the empty default too (as ClusterD writes it);
 * - reasons: a bad npu_name / ManuallySeparateNPU name is `bad_npu_name`; a bad code token is dropped
 *   alone (`bad_fault_code`) and the valid fault next to it is published; a node without a Node
 *   object is accepted (as ClusterD does), logged and counted.
 */
import { createHash, randomBytes } from 'node:crypto';
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import { Manager } from '../../controllers/manager.ts';
import { parseOptions } from '../../controllers/options.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { goJson, goMap } from '../../schemas/go-json.ts';
import { goRuleViolation } from '../../schemas/fuzz/fuzz-kit.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { switchInfoCmName, ZERO_SWITCH_INFO, type SwitchFaultInfo } from '../../schemas/device-info/switch-info.ts';
import { parseClusterInfo, type DeviceInfoEntry, type SwitchInfoEntry } from '../../schemas/cluster-info/cluster-info.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { adminClient, ensureNamespace, eventually } from '../support/cluster.ts';
import { recordingLogger, type LogLine } from '../support/fault-policy-test-kit.ts';
import { goDecodeError, goDecoder } from '../support/go-decode.ts';
import { realClock } from '../../runtime/clock.ts';

const P = 'huawei.com/Ascend910';
const chips = (n: number): string[] => Array.from({ length: n }, (_, i) => `Ascend910-${i}`);
const SEP = '[0x00f103b0,155904,na,na]';

async function putCm(client: KubeClient, ns: string, name: string, labels: Record<string, string>, data: Record<string, string>): Promise<void> {
  const existing = await client.getOrUndefined<ConfigMap>(paths.configMap(ns, name));
  if (existing === undefined) await client.create(paths.configMaps(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels }, data });
  else await client.replace(paths.configMap(ns, name), { ...existing, data });
}

/**
 * The raw values of every cluster-info-<kind>-N shard that holds entries. A shard left over from a
 * larger map is blanked to '' (as ClusterD does, never deleted), and this apiserver is shared with
 * the other integration files: skip blanks, which no Go consumer decodes as JSON.
 */
async function shards(client: KubeClient, kind: 'device' | 'switch'): Promise<string[]> {
  const list = await client.list<ConfigMap>(paths.configMaps('mindx-dl'), { labelSelector: 'mx-consumer-volcano=true' });
  return list.items.filter((cm) => cm.metadata!.name!.startsWith(`cluster-info-${kind}-`)).map((cm) => cm.data?.[cm.metadata!.name!] ?? '').filter((text) => text !== '');
}

/** Built in beforeAll: Go's encoding/json with the consumers' types (tools/go-decode). */
let goBin = '';

/**
 * The entry of `key` in the shards; every shard must decode with Go's encoding/json into the
 * consumers' types, obey the Go rules and parse strictly.
 */
async function entry<T>(client: KubeClient, kind: 'device' | 'switch', key: string): Promise<T | undefined> {
  for (const text of await shards(client, kind)) {
    const goError = goDecodeError(goBin, kind, text);
    if (goError !== undefined) throw new Error(`a cluster-info-${kind} shard Go cannot decode: ${goError}`);
    const bad = goRuleViolation(text);
    if (bad !== undefined) throw new Error(`a cluster-info-${kind} shard breaks the Go rules: ${bad}`);
    const p = parseClusterInfo(kind, text);
    if (!p.ok) throw new Error(`a cluster-info-${kind} shard does not parse: ${p.reason}`);
    if (p.value[key] !== undefined) return p.value[key] as T;
  }
  return undefined;
}

const invalid = async (metrics: Metrics, reason: string): Promise<number> =>
  (await metrics.invalidInput.get()).values.filter((v) => v.labels.format === 'device-info' && v.labels.reason === reason).reduce((a, v) => a + v.value, 0);

describe('intake hardening (bad input)', () => {
  const client = adminClient();
  const metrics = new Metrics({ processMetrics: false });
  const lines: LogLine[] = [];
  let manager: Manager;
  const tag = randomBytes(3).toString('hex');

  beforeAll(async () => {
    goBin = goDecoder();
    for (const ns of ['mindx-dl', 'kube-system']) await ensureNamespace(client, ns);
    manager = new Manager({ clock: realClock, client, options: parseOptions(['--http-port=0', '--cluster-info-refresh-seconds=0'], {}), log: recordingLogger(lines), metrics });
    await manager.start();
  }, 300_000);

  afterAll(async () => { await manager.stop(); });

  it('out of range: a signed UpdateTime of 1e21 is refused; the shard keeps the last good entry and decodes into Go ints', async () => {
    const node = `big-${tag}`;
    const now = Date.now();
    const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-3', [{ code: '80E18402', level: 'SeparateNPU', timeMs: now }]);
    const good = encodeDeviceInfoData({ available: chips(8).filter((c) => c !== 'Ascend910-3'), unhealthy: ['Ascend910-3'], faults: [fault], updateTimeS: Math.floor(now / 1000) });
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, good);
    const before = await eventually(() => entry<DeviceInfoEntry>(client, 'device', deviceInfoCmName(node)));
    expect(before.DeviceList[`${P}-Unhealthy`]).toBe('Ascend910-3');

    // The attacker's CheckCode: the hash of the Go-style text with the exponent, as the old encoder made it.
    const list = JSON.parse(good.DeviceInfoCfg!).DeviceInfo.DeviceList as Record<string, string>;
    const hashed = goJson({ DeviceList: goMap(list), UpdateTime: 0 }).replace('"UpdateTime":0', '"UpdateTime":1e+21');
    const cfg = `{"DeviceInfo":${hashed},"SuperPodID":-1,"ServerIndex":-1,"CheckCode":"${createHash('sha256').update(hashed).digest('hex')}"}`;
    const rejectedBefore = await invalid(metrics, 'out_of_range');
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, { ...good, DeviceInfoCfg: cfg });
    await eventually(async () => (await invalid(metrics, 'out_of_range')) > rejectedBefore);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', msg: 'input rejected; last good state kept', kind: 'out_of_range', object: deviceInfoCmName(node) }));
    manager.clusterInfo.queue.add('cluster-info');
    await manager.clusterInfo.idle();
    expect(await entry<DeviceInfoEntry>(client, 'device', deviceInfoCmName(node))).toEqual(before);
    for (const text of await shards(client, 'device')) {
      expect(text).not.toContain('e+');
      expect(goDecodeError(goBin, 'device', text)).toBeUndefined();
    }
  });

  it('quarantine: a malformed SwitchInfoCfg keeps the node\'s Separate switch fault in cluster-info-switch, takes the device part, says why', async () => {
    const node = `sw-${tag}`;
    const t = Date.now();
    const ev = JSON.stringify({ EventType: 11, AssembledFaultCode: SEP, PeerPortDevice: 1, PeerPortId: 3, SwitchChipId: 0, SwitchPortId: 7, Severity: 2, Assertion: 1, AlarmRaisedTime: t });
    const sw: SwitchFaultInfo = { FaultCode: [ev], FaultLevel: 'Separate', UpdateTime: Math.floor(t / 1000), NodeStatus: 'UnHealthy', FaultTimeAndLevelMap: { [`${SEP}_0_7`]: { fault_time: t, fault_level: 'Separate' } } };
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(t / 1000), switchInfo: sw }));
    const good = await eventually(() => entry<SwitchInfoEntry>(client, 'switch', switchInfoCmName(node)));
    expect(good).toMatchObject({ FaultLevel: 'Separate', NodeStatus: 'UnHealthy', FaultCode: [ev] });

    const malformedBefore = await invalid(metrics, 'malformed_json');
    const fault = makeDeviceFault('CardUnhealthy', 'Ascend910-5', [{ code: '80E18402', level: 'SeparateNPU', timeMs: t }]);
    const data = encodeDeviceInfoData({ available: chips(8).filter((c) => c !== 'Ascend910-5'), unhealthy: ['Ascend910-5'], faults: [fault], updateTimeS: Math.floor(t / 1000) + 1, switchInfo: sw });
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, { ...data, SwitchInfoCfg: '{"FaultCode":["{\\"EventType' });
    // The device part of the same ConfigMap is taken...
    await eventually(async () => (await entry<DeviceInfoEntry>(client, 'device', deviceInfoCmName(node)))?.DeviceList[`${P}-Unhealthy`] === 'Ascend910-5');
    // ...the switch part is refused, counted and logged, and the last good switch state stays.
    expect(await invalid(metrics, 'malformed_json')).toBeGreaterThan(malformedBefore);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', object: deviceInfoCmName(node), kind: 'malformed_json', reason: expect.stringMatching(/^SwitchInfoCfg: malformed JSON/) }));
    expect(await entry<SwitchInfoEntry>(client, 'switch', switchInfoCmName(node))).toEqual(good);
    expect(manager.deviceFaults.effective(node)).toContainEqual(expect.objectContaining({ source: 'switch', code: SEP, level: 'SeparateNPU' }));
  });

  it('as ClusterD: a device-info with the empty default SwitchInfoCfg gets ClusterD\'s empty switch entry', async () => {
    const node = `zero-${tag}`;
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(Date.now() / 1000), switchInfo: ZERO_SWITCH_INFO }));
    const name = switchInfoCmName(node);
    await eventually(async () => (await shards(client, 'switch')).some((s) => s.includes(`"${name}":{"FaultCode":[],"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null,"CmName":"${name}"}`)));
  });

  it('reasons: each rejection has its own reason; a bad code token hides only itself; an unknown node is logged and counted', async () => {
    const node = `rsn-${tag}`;
    const t = Date.now();
    const ok = encodeDeviceInfoData({ available: chips(8), updateTimeS: Math.floor(t / 1000) });
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, ok);
    await eventually(() => entry<DeviceInfoEntry>(client, 'device', deviceInfoCmName(node)));
    // No Node object of that name exists: accepted (ClusterD does not look), but logged and counted.
    expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', msg: expect.stringMatching(/no Node object/), node, format: 'device-info' }));
    expect((await metrics.unknownNodeInputs.get()).values.find((v) => v.labels.format === 'device-info')?.value).toBeGreaterThan(0);

    const npuBefore = await invalid(metrics, 'bad_npu_name');
    const badName = makeDeviceFault('CardUnhealthy', 'GPU0', [{ code: '80E18402', level: 'SeparateNPU', timeMs: t }]);
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, encodeDeviceInfoData({ available: chips(8), faults: [badName], updateTimeS: Math.floor(t / 1000) + 1 }));
    await eventually(async () => (await invalid(metrics, 'bad_npu_name')) === npuBefore + 1);
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, { ...ok, ManuallySeparateNPU: 'Ascend910-x' });
    await eventually(async () => (await invalid(metrics, 'bad_npu_name')) === npuBefore + 2);

    const tokenBefore = await invalid(metrics, 'bad_fault_code');
    const mixed = { ...makeDeviceFault('CardUnhealthy', 'Ascend910-2', [{ code: '80E18402', level: 'SeparateNPU', timeMs: t }]), fault_code: '80E18402,not-a-code' };
    // Signed by the encoder, as a device plugin would sign what it writes.
    const signed = encodeDeviceInfoData({ available: chips(8).filter((c) => c !== 'Ascend910-2'), unhealthy: ['Ascend910-2'], faults: [mixed], updateTimeS: Math.floor(t / 1000) + 2 });
    await putCm(client, 'kube-system', deviceInfoCmName(node), DEVICE_INFO_LABELS, signed);
    const published = await eventually(async () => {
      const e = await entry<DeviceInfoEntry>(client, 'device', deviceInfoCmName(node));
      return e?.DeviceList[`${P}-Fault`]?.includes('"fault_code":"80E18402"') === true ? e : undefined;
    });
    expect(published.DeviceList[`${P}-Fault`]).not.toContain('not-a-code');
    expect(await invalid(metrics, 'bad_fault_code')).toBe(tokenBefore + 1);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', kind: 'bad_fault_code', reason: expect.stringMatching(/"not-a-code" on Ascend910-2 dropped/) }));
  });
});
