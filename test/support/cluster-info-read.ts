/** Reading cluster-info-device-N back from the apiserver as Volcano's ascend plugin parses it. */
import { paths, type KubeClient } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { parseClusterInfo, type DeviceInfoEntry } from '../../schemas/cluster-info/cluster-info.ts';
import { deviceInfoCmName } from '../../schemas/device-info/device-info.ts';

const P = 'huawei.com/Ascend910';

/** Every device entry of these cluster-info-device-N shards, parsed as Volcano would; a shard that does not parse throws. */
export function deviceEntriesOf(configMaps: Iterable<ConfigMap>): Record<string, DeviceInfoEntry> {
  const out: Record<string, DeviceInfoEntry> = {};
  for (const cm of configMaps) {
    const name = cm.metadata?.name ?? '';
    if (!name.startsWith('cluster-info-device-') || (cm.data?.[name] ?? '') === '') continue;
    const parsed = parseClusterInfo('device', cm.data![name]!);
    if (!parsed.ok) throw new Error(`${name} does not parse: ${parsed.reason}`);
    Object.assign(out, parsed.value);
  }
  return out;
}

/** Every device entry of every cluster-info-device-N shard in mindx-dl. */
export async function deviceEntries(client: KubeClient): Promise<Record<string, DeviceInfoEntry>> {
  const list = await client.list<ConfigMap>(paths.configMaps('mindx-dl'), { labelSelector: 'mx-consumer-volcano=true' });
  return deviceEntriesOf(list.items);
}

/** The node's entry in whichever cluster-info-device-N shard holds it; a shard that does not parse throws. */
export async function deviceEntry(client: KubeClient, node: string): Promise<DeviceInfoEntry | undefined> {
  return (await deviceEntries(client))[deviceInfoCmName(node)];
}

/** Codes listed for `chip` in the entry's `-Fault` list. */
export const codesIn = (e: DeviceInfoEntry | undefined, chip: string): string[] => {
  const faults = JSON.parse(e?.DeviceList[`${P}-Fault`] ?? '[]') as Array<{ npu_name: string; fault_code: string }>;
  return faults.filter((f) => f.npu_name === chip).flatMap((f) => f.fault_code.split(','));
};
