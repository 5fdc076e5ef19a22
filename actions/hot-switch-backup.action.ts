/**
 * The Ascend Operator's half of the hot-switch handshake (docs/rules.md#operator.hot-switch-pods, #hotswitch.fsm), for
 * Volcano jobs that run without the operator (option `--hot-switch-backup-pods`):
 * - `needOperatorOpe=create` on a faulty pod -> create the backup pod `<pod>-hot-NNNN` from the
 *   faulty pod's spec (same rank annotation, same owner, kept off the faulty node), annotated
 *   `podType=backup`, `backupSourcePodName`, `inHotSwitchFlow=true`; the source pod gets
 *   `backupNewPodName`;
 * - `needOperatorOpe=delete` on a backup pod -> force-delete it;
 * - once the source pod is gone -> strip the backup markers so the new pod holds the rank.
 * Every step is idempotent: an existing backup for the source is reused.
 */
import { randomInt } from 'node:crypto';
import type { FullPod, Pod } from '../runtime/kube-objects.ts';
import { paths, type KubeClient, type KubeObject } from '../runtime/kube-client.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { HOT_SWITCH_ANNOTATION as A } from '../policy/recovery/hot-switch-types.ts';
import { ASCEND_REAL_ANNOTATION, FAULT_TYPE_LABEL } from '../policy/jobs/job-view.ts';
import { deletePods } from './pod-deletion.action.ts';
import { patchPodMeta } from './recovery-patch.action.ts';

const HOSTNAME_LABEL = 'kubernetes.io/hostname';
/** Annotations of the source that must not be copied onto its backup. */
const NOT_COPIED = [ASCEND_REAL_ANNOTATION, A.inHotSwitchFlow, A.needOperatorOpe, A.needVolcanoOpe, A.backupNewPodName, A.podType, A.backupSourcePodName];

export interface BackupDeps {
  readonly client: KubeClient;
  readonly metrics?: Metrics;
}

type NodeSelectorTerm = { matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>; [k: string]: unknown };
type Affinity = { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] }; [k: string]: unknown }; [k: string]: unknown };

/** The source pod's spec without its node, and kept off that node. */
function backupSpec(src: FullPod): Record<string, unknown> {
  const { nodeName, ...spec } = structuredClone(src.spec ?? {}) as Record<string, unknown> & { nodeName?: string; affinity?: Affinity };
  if (nodeName === undefined || nodeName === '') return spec;
  const affinity: Affinity = (spec.affinity as Affinity | undefined) ?? {};
  const na = affinity.nodeAffinity ?? {};
  const req = na.requiredDuringSchedulingIgnoredDuringExecution ?? {};
  const terms = req.nodeSelectorTerms !== undefined && req.nodeSelectorTerms.length > 0 ? req.nodeSelectorTerms : [{}];
  const notSource = { key: HOSTNAME_LABEL, operator: 'NotIn', values: [nodeName] };
  spec.affinity = {
    ...affinity,
    nodeAffinity: { ...na, requiredDuringSchedulingIgnoredDuringExecution: { ...req, nodeSelectorTerms: terms.map((t) => ({ ...t, matchExpressions: [...(t.matchExpressions ?? []), notSource] })) } },
  };
  return spec;
}

/** The backup pod object for `src`, the whole pod as the apiserver returns it (pure but for the random suffix). */
export function backupPodFor(src: FullPod, suffix = String(randomInt(0, 10_000)).padStart(4, '0')): KubeObject {
  const m = src.metadata ?? {};
  const annotations = Object.fromEntries(Object.entries(m.annotations ?? {}).filter(([k]) => !NOT_COPIED.includes(k)));
  const labels = Object.fromEntries(Object.entries(m.labels ?? {}).filter(([k]) => k !== FAULT_TYPE_LABEL));
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: `${m.name ?? 'pod'}-hot-${suffix}`,
      namespace: m.namespace,
      labels,
      annotations: { ...annotations, [A.podType]: 'backup', [A.backupSourcePodName]: m.name ?? '', [A.inHotSwitchFlow]: 'true' },
      ...(m.ownerReferences !== undefined ? { ownerReferences: m.ownerReferences } : {}),
    },
    spec: backupSpec(src),
  };
}

/** Creates the backup of `src` unless one exists among `jobPods`; returns its name. */
export async function ensureBackupPod(d: BackupDeps, src: Pod, jobPods: readonly Pod[]): Promise<string> {
  const srcName = src.metadata?.name ?? '';
  const ns = src.metadata?.namespace ?? '';
  const existing = jobPods.find((p) => p.metadata?.annotations?.[A.podType] === 'backup' && p.metadata?.annotations?.[A.backupSourcePodName] === srcName && p.metadata?.deletionTimestamp === undefined);
  let name = existing?.metadata?.name;
  if (name === undefined) {
    // The pod informer keeps only what the flows read (sources/cache-shapes.ts), not the spec a
    // backup copies: read the whole source pod, and only the one we saw.
    const full = await d.client.get<FullPod>(paths.pod(ns, srcName));
    if (src.metadata?.uid !== undefined && full.metadata?.uid !== src.metadata.uid) throw new Error(`hot-switch source pod ${ns}/${srcName} was replaced (uid ${full.metadata?.uid ?? ''}, expected ${src.metadata.uid}); no backup created`);
    const created = await d.client.create<KubeObject>(paths.pods(ns), backupPodFor(full));
    d.metrics?.apiWrites.inc({ kind: 'hot_switch_backup_pod', result: 'success' });
    name = created.metadata?.name ?? '';
  }
  await patchPodMeta(d, ns, { name: srcName, ...(src.metadata?.uid ? { uid: src.metadata.uid } : {}) }, { annotations: { [A.backupNewPodName]: name } });
  return name;
}

/** Force-deletes a backup pod (the operator's reaction to `needOperatorOpe=delete`). */
export async function deleteBackupPod(d: BackupDeps, pod: Pod): Promise<void> {
  const name = pod.metadata?.name ?? '';
  const uid = pod.metadata?.uid ?? '';
  await deletePods(d.client, pod.metadata?.namespace ?? '', [{ name, uid }], { force: true, ...(d.metrics ? { metrics: d.metrics } : {}) });
}

/** The source pod is gone: the backup now holds the rank (markers off, `inHotSwitchFlow` kept for the FSM). */
export async function promoteBackupPod(d: BackupDeps, pod: Pod): Promise<void> {
  await patchPodMeta(d, pod.metadata?.namespace ?? '', { name: pod.metadata?.name ?? '', ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}) },
    { annotations: { [A.podType]: null, [A.backupSourcePodName]: null } });
}
