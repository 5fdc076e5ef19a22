/**
 * The device plugin / NodeD simulator and fault injector against the shared real kube-apiserver
 * (+ kwok): what lands in etcd parses with our own schema modules, allocatable and Ready follow the
 * faults, writes are coalesced, and the CLI adds to what earlier runs wrote.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { Reflector } from '../../runtime/reflector.ts';
import {
  DEVICE_INFO_DESCRIPTION, DEVICE_INFO_NAMESPACE, deviceInfoCheckCode, deviceInfoCmName, parseDeviceInfoData, type DeviceInfoData,
} from '../../schemas/device-info/device-info.ts';
import { NODE_INFO_NAMESPACE, nodeInfoCmName, parseNodeInfoData } from '../../schemas/node-info/node-info.ts';
import { PUBLIC_FAULT_DATA_KEY, validatePublicFault } from '../../schemas/public-fault/public-fault.ts';
import { kubeconfigYaml } from '../../tools/control-plane/control-plane.ts';
import { runCli } from '../../tools/simulator/cli.ts';
import { FaultInjector } from '../../tools/simulator/injector.ts';
import { ASCEND_REAL_ANNOTATION, NpuAllocator } from '../../tools/simulator/allocator.ts';
import { KWOK_ANNOTATION, NPU_RESOURCE, createFakeNodes } from '../../tools/simulator/nodes.ts';
import { adminClient, controlPlaneInfo, eventually, newNamespace } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';

type CM = KubeObject & { data?: Record<string, string> };
type NodeObj = KubeObject & { status?: { capacity?: Record<string, string>; allocatable?: Record<string, string>; conditions?: Array<{ type: string; status: string; reason?: string }> } };

const uniq = (p = 'sim'): string => `${p}-${randomBytes(4).toString('hex')}`;
const getDeviceInfo = (c: KubeClient, node: string): Promise<CM> => c.get<CM>(paths.configMap(DEVICE_INFO_NAMESPACE, deviceInfoCmName(node)));
function parsedDi(cm: CM): DeviceInfoData {
  const p = parseDeviceInfoData(cm.data, Date.now() + 1000);
  if (!p.ok) throw new Error(p.reason);
  return p.value;
}
const npuOf = async (c: KubeClient, node: string): Promise<{ capacity?: string; allocatable?: string }> => {
  const n = await c.get<NodeObj>(paths.node(node));
  return { capacity: n.status?.capacity?.[NPU_RESOURCE], allocatable: n.status?.allocatable?.[NPU_RESOURCE] };
};
const readyOf = async (c: KubeClient, node: string): Promise<string | undefined> =>
  (await c.get<NodeObj>(paths.node(node))).status?.conditions?.find((x) => x.type === 'Ready')?.status;

describe('device plugin / NodeD simulator on a real apiserver', () => {
  const client = adminClient();
  let inj: FaultInjector;
  beforeEach(() => { inj = new FaultInjector(adminClient()); });
  afterEach(async () => { await inj.close(); });

  it('writes mindx-dl-deviceinfo-<node> as the DP does: label, five keys, verified CheckCode, UpdateTime in seconds', async () => {
    const node = uniq();
    const t0 = Date.now();
    const [ack] = await inj.addNodes([{ name: node }]);
    const cm = await getDeviceInfo(client, node);
    expect(cm.metadata?.labels).toEqual({ 'mx-consumer-cim': 'true' });
    expect(Object.keys(cm.data ?? {}).sort()).toEqual(['Description', 'DeviceInfoCfg', 'ManuallySeparateNPU', 'SwitchInfoCfg', 'UpgradeFaultReason']);
    expect(ack!.resourceVersion).toBe(cm.metadata?.resourceVersion);
    expect(ack!.atMs).toBeGreaterThanOrEqual(t0);
    const d = parsedDi(cm);
    expect(d.cfg.CheckCode).toBe(deviceInfoCheckCode(d.cfg.DeviceInfo));
    expect(d.cfg.DeviceInfo.UpdateTime).toBeGreaterThanOrEqual(Math.floor(t0 / 1000));
    expect(d.cfg.DeviceInfo.UpdateTime).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(d.lists.available).toHaveLength(8);
    expect(d.lists.faults).toEqual([]);
    expect(cm.data?.SwitchInfoCfg).toBe('{"FaultCode":null,"FaultLevel":"","UpdateTime":0,"NodeStatus":"","FaultTimeAndLevelMap":null}');
    expect(cm.data?.Description).toBe(DEVICE_INFO_DESCRIPTION);
    expect(d.warnings).toEqual([]);

    // Update first, Create on NotFound: a deleted CM comes back on the next write.
    await client.delete(paths.configMap(DEVICE_INFO_NAMESPACE, deviceInfoCmName(node)));
    await inj.devicePlugin.refreshAll();
    expect(parsedDi(await getDeviceInfo(client, node)).lists.available).toHaveLength(8);
  });

  it('SeparateNPU on a chip: -Unhealthy and -Fault with code/level, allocatable 8 -> 7; recover restores both', async () => {
    const node = uniq();
    await createFakeNodes(client, [{ name: node }]);
    await inj.addNodes([{ name: node }]);
    expect(await npuOf(client, node)).toEqual({ capacity: '8', allocatable: '8' });

    const ack = await inj.inject({ kind: 'npu', node, npu: 'Ascend910-3', code: '80E18402' });
    expect(ack.allocatable?.count).toBe(7);
    const cm = await getDeviceInfo(client, node);
    expect(ack.resourceVersion).toBe(cm.metadata?.resourceVersion);
    const d = parsedDi(cm);
    expect(d.lists.unhealthy).toEqual(['Ascend910-3']);
    expect(d.lists.available).not.toContain('Ascend910-3');
    expect(d.lists.faults).toEqual([expect.objectContaining({
      fault_type: 'CardUnhealthy', npu_name: 'Ascend910-3', fault_code: '80E18402', fault_level: 'SeparateNPU', fault_handling: 'SeparateNPU', large_model_fault_level: 'SeparateNPU',
    })]);
    const tl = d.lists.faults[0]!.fault_time_and_level_map!['80E18402']!;
    expect(tl.fault_level).toBe('SeparateNPU');
    expect(tl.fault_time).toBeGreaterThan(Date.now() - 60_000); // ms, not s
    expect(await npuOf(client, node)).toEqual({ capacity: '8', allocatable: '7' });

    const rec = await inj.recover({ kind: 'npu', node, npu: 'Ascend910-3', code: '80E18402' });
    expect(rec.allocatable?.count).toBe(8);
    const after = parsedDi(await getDeviceInfo(client, node));
    expect(after.lists.unhealthy).toEqual([]);
    expect(after.lists.faults).toEqual([]);
    expect(after.lists.available).toHaveLength(8);
    expect(await npuOf(client, node)).toEqual({ capacity: '8', allocatable: '8' });
  });

  it('a NotHandleFault network code stays available; a RestartBusiness chip code does not', async () => {
    const node = uniq();
    await inj.addNodes([{ name: node }]);
    await Promise.all([
      inj.inject({ kind: 'network', node, npu: 6, code: '81078603' }),
      inj.inject({ kind: 'npu', node, npu: 1, code: '80E01801' }),
    ]);
    const d = parsedDi(await getDeviceInfo(client, node));
    expect(d.lists.faults.map((f) => [f.npu_name, f.fault_type, f.fault_level])).toEqual([
      ['Ascend910-1', 'CardUnhealthy', 'RestartBusiness'], ['Ascend910-6', 'CardNetworkUnhealthy', 'NotHandleFault'],
    ]);
    expect(d.lists.networkUnhealthy).toEqual([]);
    expect(d.lists.unhealthy).toEqual(['Ascend910-1']);
    expect(d.lists.available).toContain('Ascend910-6');
  });

  it('NodeD: node-info written with CheckCode and RFC3339 updateTime, deleted when the node is healthy again', async () => {
    const node = uniq();
    const ack = await inj.inject({ kind: 'node', node, code: '2C000031', deviceType: 'PSU', deviceId: 1 });
    const path = paths.configMap(NODE_INFO_NAMESPACE, nodeInfoCmName(node));
    const cm = await client.get<CM>(path);
    expect(ack.resourceVersion).toBe(cm.metadata?.resourceVersion);
    expect(cm.metadata?.labels).toEqual({ 'mx-consumer-cim': 'true' });
    expect(cm.data?.updateTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const p = parseNodeInfoData(cm.data);
    if (!p.ok) throw new Error(p.reason);
    expect(p.value.cm.NodeInfo).toEqual({ FaultDevList: [{ DeviceType: 'PSU', DeviceId: 1, FaultCode: ['2C000031'], FaultLevel: 'SeparateFault' }], NodeStatus: 'UnHealthy' });

    const rec = await inj.recover({ kind: 'node', node, code: '2C000031' });
    expect(rec.deleted).toBe(true);
    expect(await client.getOrUndefined(path)).toBeUndefined();
  });

  it('NotReady holds against kwok (annotation removed first); Ready hands the node back to kwok', async () => {
    const node = uniq();
    await createFakeNodes(client, [{ name: node }]);
    await eventually(async () => (await readyOf(client, node)) === 'True');

    await inj.inject({ kind: 'not-ready', node });
    const n = await client.get<NodeObj>(paths.node(node));
    expect(n.metadata?.annotations?.[KWOK_ANNOTATION]).toBeUndefined();
    expect(n.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'KubeletNotReady' });
    await new Promise((r) => setTimeout(r, 1500)); // kwok would have flipped it back by now
    expect(await readyOf(client, node)).toBe('False');

    await inj.recover({ kind: 'not-ready', node });
    await eventually(async () => (await readyOf(client, node)) === 'True');
    expect((await client.get<NodeObj>(paths.node(node))).metadata?.annotations?.[KWOK_ANNOTATION]).toBe('fake');
  });

  it('public fault: labelled CM whose payload passes validatePublicFault, occur then recover with the same faultId', async () => {
    const node = uniq();
    const ack = await inj.inject({ kind: 'public', node, npu: 'Ascend910-1', code: '220001001' });
    const cm = await client.get<CM>(paths.configMap(ack.namespace, ack.name));
    expect(cm.metadata?.labels).toEqual({ 'mc-consumer-publicfault': 'true' });
    const v = validatePublicFault(JSON.parse(cm.data![PUBLIC_FAULT_DATA_KEY]!));
    if (!v.ok) throw new Error(v.reason);
    expect(v.value.faults[0]).toMatchObject({ faultId: ack.faultId, faultCode: '220001001', assertion: 'occur', faultType: 'Network', influence: [{ nodeName: node, nodeSN: '', deviceIds: [1] }] });
    expect(String(v.value.timestamp)).toHaveLength(13);

    await inj.recover({ kind: 'public', node, faultId: ack.faultId! });
    const after = validatePublicFault(JSON.parse((await client.get<CM>(paths.configMap(ack.namespace, ack.name))).data![PUBLIC_FAULT_DATA_KEY]!));
    if (!after.ok) throw new Error(after.reason);
    expect(after.value.faults[0]).toMatchObject({ faultId: ack.faultId, assertion: 'recover' });
  });

  it('A3 switch faults in SwitchInfoCfg: inject Separate, recover to Healthy', async () => {
    const node = uniq();
    inj.devicePlugin.addNode({ name: node, switchMode: 'enabled' });
    await inj.inject({ kind: 'switch', node, code: '[0x00f103b0,155904,na,na]', switchPortId: 7 });
    let sw = parsedDi(await getDeviceInfo(client, node)).switchInfo;
    expect(sw?.ok === true && sw.value.info).toMatchObject({ FaultLevel: 'Separate', NodeStatus: 'UnHealthy' });
    expect(sw?.ok === true && Object.keys(sw.value.info.FaultTimeAndLevelMap ?? {})).toEqual(['[0x00f103b0,155904,na,na]_0_7']);
    await inj.recover({ kind: 'switch', node });
    sw = parsedDi(await getDeviceInfo(client, node)).switchInfo;
    expect(sw?.ok === true && sw.value.info).toMatchObject({ FaultCode: [], FaultLevel: '', NodeStatus: 'Healthy' });
  });

  it('coalesces: 10 injections within a second on one node make at most 2 writes, the last holding all 10', async () => {
    const node = uniq();
    await inj.addNodes([{ name: node }]);
    const watcher = new Reflector<CM>(client, { clock: realClock, name: 'di', path: paths.configMaps(DEVICE_INFO_NAMESPACE), fieldSelector: `metadata.name=${deviceInfoCmName(node)}` });
    let updates = 0;
    watcher.events$.subscribe((e) => { if (e.type === 'update') updates++; });
    watcher.start();
    await watcher.waitForSync();
    try {
      const codes = ['80E18402', '80E01801', '40F84E00', '8C204E00', '80E18005', '80E18008', '80DE1801', '8C03A000', '80E3A201', '8C084E00'];
      const acks = [];
      for (const [i, code] of codes.entries()) {
        acks.push(inj.inject({ kind: 'npu', node, npu: i % 8, code }));
        await new Promise((r) => setTimeout(r, 60));
      }
      await Promise.all(acks);
      expect(inj.devicePlugin.writeCount(node)).toBeLessThanOrEqual(1 + 2); // the init write + at most 2
      await new Promise((r) => setTimeout(r, 500));
      expect(updates).toBeGreaterThanOrEqual(1);
      expect(updates).toBeLessThanOrEqual(2);
      const d = parsedDi(await getDeviceInfo(client, node));
      expect(d.lists.faults.flatMap((f) => f.fault_code.split(',')).sort()).toEqual([...codes].sort());
    } finally {
      watcher.stop();
    }
  });

  it('CLI: injects on top of what another process wrote, shows it, and exits 2 with usage on bad arguments', async () => {
    const node = uniq();
    await createFakeNodes(client, [{ name: node }]);
    await inj.addNodes([{ name: node }]);
    await inj.inject({ kind: 'npu', node, npu: 3, code: '80E18402' });
    const info = controlPlaneInfo();
    const kubeconfig = join(mkdtempSync(join(tmpdir(), 'sim-cli-')), 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(info.servers[0]!, info.adminToken));
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l) };

    expect(await runCli(['inject', '--kubeconfig', kubeconfig, '--node', node, '--npu', 'Ascend910-5', '--code', '80E01801'], io)).toBe(0);
    const d = parsedDi(await getDeviceInfo(client, node));
    expect(d.lists.unhealthy).toEqual(['Ascend910-3', 'Ascend910-5']);
    expect(await npuOf(client, node)).toEqual({ capacity: '8', allocatable: '6' });

    out.length = 0;
    expect(await runCli(['show', '--kubeconfig', kubeconfig, '--node', node], io)).toBe(0);
    const shown = JSON.parse(out.join('\n')) as { deviceInfoCheck: { valid: boolean; unhealthy: string[] }; node: { allocatable: string } };
    expect(shown.deviceInfoCheck).toMatchObject({ valid: true, unhealthy: ['Ascend910-3', 'Ascend910-5'] });
    expect(shown.node.allocatable).toBe('6');

    for (const bad of [
      ['inject', '--kubeconfig', kubeconfig, '--node', node, '--code', '80E18402'], // no --npu
      ['inject', '--kubeconfig', kubeconfig, '--node', node, '--npu', '9', '--code', '80E18402'], // no such chip
      ['inject', '--kubeconfig', kubeconfig, '--node', node, '--npu', '1', '--code', '80E18402', '--level', 'Bogus'],
      ['frobnicate'],
      ['ready', '--kubeconfig', kubeconfig, '--node', node, '--count', '3'],
      ['nodes', 'create', '--kubeconfig', kubeconfig, '--count', 'x'],
    ]) {
      err.length = 0;
      expect(await runCli(bad, io)).toBe(2);
      expect(err.join('\n')).toMatch(/^error: .*\n\nusage: /s);
    }
  });
  it('allocator: pods bound to one node at the same moment get disjoint chips, never an unhealthy one', async () => {
    // A real device plugin never hands one chip to two pods; the tests map faults to ranks through
    // these annotations, so a double allocation would blame the wrong rank.
    const ns = await newNamespace(client, 'alloc');
    const node = uniq('alloc');
    const allocator = new NpuAllocator(client, { namespace: ns, unhealthy: (n) => (n === node ? ['Ascend910-0'] : []) });
    await allocator.start();
    try {
      const pod = (i: number): KubeObject => ({
        apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${i}`, namespace: ns },
        spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox', resources: { limits: { [NPU_RESOURCE]: '2' }, requests: { [NPU_RESOURCE]: '2' } } }] },
      });
      await Promise.all([0, 1, 2].map((i) => client.create(paths.pods(ns), pod(i))));
      const chips = await eventually(async () => {
        const list = await client.get<{ items: KubeObject[] }>(paths.pods(ns));
        const got = list.items.map((p) => p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION]);
        return got.length === 3 && got.every((g) => g !== undefined) ? got.flatMap((g) => g!.split(',')) : undefined;
      });
      expect(chips).toHaveLength(6);
      expect(new Set(chips).size).toBe(6);
      expect(chips).not.toContain('Ascend910-0');
    } finally {
      allocator.stop();
    }
  });
});
