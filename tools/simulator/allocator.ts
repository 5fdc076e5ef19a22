/**
 * The device plugin's Allocate step for simulated nodes: once a pod requesting huawei.com/Ascend910
 * (or, with `resource: 'huawei.com/npu'`, an A5 node's `npu-<i>` chips) is bound to a node, annotate it with `huawei.com/AscendReal` (the chips it got), picking healthy
 * chips not used by other pods on that node, or the chips Volcano's ascend plugin chose for it. ClusterD
 * and the job view map ranks to NPUs with it.
 */
import { Reflector } from '../../runtime/reflector.ts';
import { paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { realClock } from '../../runtime/clock.ts';

export const ASCEND_REAL_ANNOTATION = 'huawei.com/AscendReal';
const DEFAULT_RESOURCE = 'huawei.com/Ascend910';

type Pod = KubeObject & { spec?: { nodeName?: string; containers?: Array<{ resources?: { limits?: Record<string, string>; requests?: Record<string, string> } }> }; status?: { phase?: string } };

const requested = (p: Pod, resource: string): number =>
  (p.spec?.containers ?? []).reduce((n, c) => n + Number(c.resources?.limits?.[resource] ?? c.resources?.requests?.[resource] ?? 0), 0);

export class NpuAllocator {
  private readonly pods: Reflector<Pod>;
  private readonly client: KubeClient;
  private readonly npusPerNode: number;
  private readonly resource: string;
  private readonly chipPrefix: string;
  /** Chips the allocator must not hand out (unhealthy), by node. */
  private readonly unhealthy: (node: string) => readonly string[];
  private busy = Promise.resolve();
  /**
   * Chips this allocator handed out, by pod uid: the watch may not have delivered our own patch yet
   * when the next pod on the same node is allocated, and the store alone would then hand the same
   * chips out twice.
   */
  private readonly assigned = new Map<string, { node: string; chips: readonly string[] }>();

  constructor(client: KubeClient, opts: { namespace?: string; npusPerNode?: number; unhealthy?: (node: string) => readonly string[]; resource?: 'huawei.com/Ascend910' | 'huawei.com/npu' } = {}) {
    this.client = client;
    this.npusPerNode = opts.npusPerNode ?? 8;
    this.resource = opts.resource ?? DEFAULT_RESOURCE;
    this.chipPrefix = this.resource === 'huawei.com/npu' ? 'npu' : 'Ascend910';
    this.unhealthy = opts.unhealthy ?? (() => []);
    this.pods = new Reflector<Pod>(client, { clock: realClock, name: 'allocator_pods', path: paths.pods(opts.namespace) });
    this.pods.events$.subscribe({
      next: (ev) => {
        if (ev.type === 'delete') this.assigned.delete(ev.obj.metadata?.uid ?? '');
        else this.busy = this.busy.then(() => this.allocate(ev.obj)).catch(() => undefined);
      },
    });
  }

  start(): Promise<void> {
    this.pods.start();
    return this.pods.waitForSync();
  }

  stop(): void { this.pods.stop(); }

  private async allocate(pod: Pod): Promise<void> {
    const node = pod.spec?.nodeName;
    const want = requested(pod, this.resource);
    const uid = pod.metadata?.uid ?? '';
    if (node === undefined || want === 0 || pod.metadata?.deletionTimestamp !== undefined) return;
    if (pod.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] !== undefined || this.assigned.has(uid)) return;
    const used = new Set<string>(this.unhealthy(node));
    for (const other of this.pods.store.values()) {
      const otherUid = other.metadata?.uid ?? '';
      if (other.spec?.nodeName !== node || otherUid === uid || other.metadata?.deletionTimestamp !== undefined) continue;
      const chips = [...(other.metadata?.annotations?.[ASCEND_REAL_ANNOTATION] ?? '').split(','), ...(this.assigned.get(otherUid)?.chips ?? [])];
      for (const chip of chips) if (chip !== '') used.add(chip);
    }
    // Under Volcano the ascend plugin has already chosen the chips (pod annotation named for the
    // resource) and the device plugin's Allocate hands out exactly those; kube-scheduler chooses none.
    const chosen = (pod.metadata?.annotations?.[this.resource] ?? '').split(',').filter((c) => c !== '');
    const free = Array.from({ length: this.npusPerNode }, (_, i) => `${this.chipPrefix}-${i}`).filter((c) => !used.has(c));
    if (chosen.length === 0 && free.length < want) return; // the scheduler over-committed; leave it unannotated
    const chips = chosen.length > 0 ? chosen : free.slice(0, want);
    await this.client.patch(paths.pod(pod.metadata!.namespace!, pod.metadata!.name!), {
      metadata: { annotations: { [ASCEND_REAL_ANNOTATION]: chips.join(',') } },
    });
    this.assigned.set(uid, { node, chips });
  }
}
