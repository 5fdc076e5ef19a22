/**
 * Pingmesh network detection as ClusterD runs it (component/clusterd/pkg/application/pingmesh/):
 * A3 (v1) and A5 (v2) super-pod servers carry the device plugin's Node annotations (superPodID, serverIndex,
 * serverType, baseDeviceInfos) and their device-info; `cluster-system/pingmesh-config` (label
 * mx-consumer-cim=true) switches detection on and off; each super pod's `super-pod-<id>` ConfigMap
 * follows its nodes. ClusterD publishes from a 5 s ticker, so every step settles past it. The peer
 * runs ClusterD with RAS_NET_ROOT_PATH set (tools/clusterd-peer), without which it publishes nothing.
 */
import { paths } from '../../runtime/kube-client.ts';
import { a3NodeAnnotations, a5Node, PINGMESH_CONFIG, pingmeshConfigData } from '../../tools/simulator/pingmesh.ts';
import type { Scenario } from './runner.ts';
import { configMap, readyPatch, type World, type Write } from './world.ts';

const NS = 'cluster-system';
/** ClusterD's 5 s ticker, the write, and slack for a loaded machine. */
const PAST_TICK_MS = 8_000;

/** The Node as kubelet registers it, with the annotations the device plugin adds on an A3 super-pod server. */
function a3Node(w: World, name: string, now: number): Write[] {
  const spec = w.specs.get(name)!;
  const obj = w.nodeObject(name, now);
  const annotations = a3NodeAnnotations({ superPodId: spec.superPodId ?? 0, serverIndex: spec.serverIndex ?? 0, npus: spec.npus ?? 16 });
  return [{ op: 'put', collection: paths.nodes(), body: { ...obj, metadata: { ...obj.metadata, annotations } } }, readyPatch(name, 'True', now), w.deviceInfo(name, now)];
}

/** An A5 super-pod server (v2): chips npu-<i>, rack id, label accelerator-type. */
function a5NodeWrites(w: World, name: string, acceleratorType: string, now: number): Write[] {
  const spec = w.specs.get(name)!;
  const obj = w.nodeObject(name, now);
  const a5 = a5Node({ superPodId: spec.superPodId ?? 0, serverIndex: spec.serverIndex ?? 0, npus: spec.npus ?? 8, rackId: 1, acceleratorType });
  const metadata = { ...obj.metadata, annotations: a5.annotations, labels: { ...obj.metadata?.labels, ...a5.labels } };
  return [{ op: 'put', collection: paths.nodes(), body: { ...obj, metadata } }, readyPatch(name, 'True', now), w.deviceInfo(name, now)];
}

const config = (data: Record<string, string>): Write => configMap(NS, PINGMESH_CONFIG.name, data, { ...PINGMESH_CONFIG.labels });

export const PINGMESH: Scenario = {
  name: 'pingmesh',
  nodes: [
    { name: 'sp3-a', npus: 16, superPodId: 3, serverIndex: 0 },
    { name: 'sp3-b', npus: 16, superPodId: 3, serverIndex: 1 },
    { name: 'sp12-a', npus: 16, superPodId: 12, serverIndex: 0 },
    { name: 'sp3-c', npus: 16, superPodId: 3, serverIndex: 2 },
    { name: 'sp3-d', npus: 16, superPodId: 3, serverIndex: 3 },
    { name: 'sp12-b', npus: 16, superPodId: 12, serverIndex: 1 },
    // Not pingmesh nodes: no super pod (the device plugin's -1).
    { name: 'no-sp', npus: 16, superPodId: -1, serverIndex: 0 },
    { name: 'a5-20-a', npus: 8, prefix: 'huawei.com/npu', superPodId: 20, serverIndex: 0 },
    { name: 'a5-20-b', npus: 8, prefix: 'huawei.com/npu', superPodId: 20, serverIndex: 1 },
    { name: 'a5-21-a', npus: 8, prefix: 'huawei.com/npu', superPodId: 21, serverIndex: 0 },
  ],
  setup: (w, now) => [
    ...['sp3-a', 'sp3-b', 'sp12-a', 'no-sp'].flatMap((n) => a3Node(w, n, now)),
    ...a5NodeWrites(w, 'a5-20-a', '950-SuperPod-Atlas-8', now),
    ...a5NodeWrites(w, 'a5-21-a', '850-SuperPod-Atlas-8', now),
  ],
  steps: [
    { name: 'pingmesh-config: global on', settleMinMs: PAST_TICK_MS, writes: () => [config(pingmeshConfigData({ global: { activate: 'on', taskInterval: 5 } }))] },
    { name: 'node sp3-c joins super pod 3', settleMinMs: PAST_TICK_MS, writes: (w, now) => a3Node(w, 'sp3-c', now) },
    { name: 'A5 node a5-20-b joins super pod 20', settleMinMs: PAST_TICK_MS, writes: (w, now) => a5NodeWrites(w, 'a5-20-b', '950-SuperPod-Atlas-8', now) },
    { name: 'node sp12-a, the last of super pod 12, deleted', settleMinMs: PAST_TICK_MS, writes: () => [{ op: 'delete', path: paths.node('sp12-a') }] },
    { name: 'pingmesh-config that does not decode', settleMinMs: PAST_TICK_MS, writes: () => [config({ global: '{"activate":"on","task_interval":"5"}' })] },
    // ClusterD drops the edit after an undecodable one: detection stays on.
    { name: 'pingmesh-config: all off, right after the undecodable one', settleMinMs: PAST_TICK_MS, writes: () => [config(pingmeshConfigData({ global: { activate: 'off' } }))] },
    { name: 'node sp3-d joins super pod 3', settleMinMs: PAST_TICK_MS, writes: (w, now) => a3Node(w, 'sp3-d', now) },
    { name: 'pingmesh-config: all off', settleMinMs: PAST_TICK_MS, writes: () => [config(pingmeshConfigData({ global: { activate: 'off' }, '3': { activate: 'off', taskInterval: 60 } }))] },
    {
      name: 'while off: sp3-b deleted, sp12-b joins super pod 12', settleMinMs: PAST_TICK_MS,
      writes: (w, now) => [{ op: 'delete', path: paths.node('sp3-b') }, ...a3Node(w, 'sp12-b', now)],
    },
    { name: 'pingmesh-config: out of range (task_interval 0)', settleMinMs: PAST_TICK_MS, writes: () => [config(pingmeshConfigData({ global: { activate: 'on', taskInterval: 0 } }))] },
    { name: 'pingmesh-config: super pod 12 on', settleMinMs: PAST_TICK_MS, writes: () => [config(pingmeshConfigData({ global: { activate: 'off' }, '12': { activate: 'on', taskInterval: 1 } }))] },
    // ClusterD rewrites a super pod's ConfigMap only when its devices change (publisher.go handleCmUpdate's check code).
    {
      name: 'super-pod-3 labelled by a user, then a heartbeat of sp3-a', settleMinMs: PAST_TICK_MS,
      writes: (_w, now) => [
        { op: 'patch', path: paths.configMap(NS, 'super-pod-3'), body: { metadata: { labels: { team: 'ops' } } }, type: 'merge' },
        readyPatch('sp3-a', 'True', now),
      ],
    },
    // At its start ClusterD writes every super pod's ConfigMap afresh (publisher.go initSuperPodsCM).
    { name: 'restart both controllers', restart: true, settleMinMs: PAST_TICK_MS },
    { name: 'pingmesh-config deleted', settleMinMs: PAST_TICK_MS, writes: () => [{ op: 'delete', path: paths.configMap(NS, PINGMESH_CONFIG.name) }] },
    { name: 'node sp3-d deleted after the config', settleMinMs: PAST_TICK_MS, writes: () => [{ op: 'delete', path: paths.node('sp3-d') }] },
  ],
};
