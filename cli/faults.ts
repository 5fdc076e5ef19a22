/**
 * `kubectl clusterd faults [--node N] [--job ns/name]`: every active fault, read from where the
 * cluster keeps them (the controller's port is never used):
 * - the device plugin's kube-system/mindx-dl-deviceinfo-<node> (chip, network and switch faults, its
 *   ManuallySeparateNPU key and its own escalations in UpgradeFaultReason),
 * - NodeD's mindx-dl/mindx-dl-nodeinfo-<node>,
 * - public faults in force: <cluster-system>/statistic-fault-info (the public-fault ConfigMaps are a
 *   stream of occur/recover messages; this is their result, as ClusterD and clusterd-ts publish it),
 * - the rule behind a level: clusterd-ts's escalation state (FaultFrequency/FaultDuration upgrades,
 *   ClusterD-style manual separation) and clusterd-manual-info-cm,
 * - which job uses the chip (pods' huawei.com/AscendReal) and what was decided about it (the newest
 *   DecisionRecord of that job).
 */
import type { KubeClient } from '../runtime/kube-client.ts';
import { paths } from '../runtime/kube-client.ts';
import { DEVICE_INFO_LABEL_KEY, DEVICE_INFO_NAMESPACE, nodeNameOfDeviceInfoCm, parseDeviceInfoData, type UpgradeReason } from '../schemas/device-info/device-info.ts';
import { deviceInfoRecords } from '../schemas/device-info/device-info-records.ts';
import { MANUALLY_SEPARATE_NPU } from '../schemas/device-info/device-fault.ts';
import { NODE_INFO_LABEL_KEY, NODE_INFO_NAMESPACE, nodeNameOfNodeInfoCm, parseNodeInfoData, splitNodeFaults } from '../schemas/node-info/node-info.ts';
import { STATISTIC_FAULT_CM_NAME, STATISTIC_FAULT_KEYS, parsePublicFaults } from '../schemas/statistic-fault/statistic-fault.ts';
import { ESCALATION_STATE_CM_NAME, ESCALATION_STATE_KEY, parseEscalationState, type EscalationStateDoc } from '../schemas/escalation-state/escalation-state.ts';
import { MANUAL_INFO_CM_NAME, parseManualInfoData } from '../schemas/manual-info/manual-info.ts';
import { decisionRecordsPath, parseDecisionRecord, type StoredDecisionRecord } from '../schemas/decision-record/decision-record.ts';
import { ASCEND_REAL_ANNOTATION, parseAscendReal } from '../policy/jobs/job-view.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';

interface Cm { metadata?: { name?: string; namespace?: string }; data?: Record<string, string> }
interface Pod { metadata?: { name?: string; namespace?: string; annotations?: Record<string, string>; ownerReferences?: Array<{ name: string; controller?: boolean }> }; spec?: { nodeName?: string }; status?: { phase?: string } }

export interface FaultRow {
  readonly node: string;
  readonly npu: string;
  readonly source: string;
  readonly code: string;
  readonly level: string;
  readonly reportedLevel: string;
  /** The rule that set the level (reported, device-plugin FaultFrequency, clusterd-ts FaultFrequency, manual-separation, ...). */
  readonly rule: string;
  readonly since: string;
  readonly jobs: readonly string[];
  /** What was decided about those jobs (newest DecisionRecord), or why nothing. */
  readonly effect: string;
}

export interface FaultsResult {
  readonly faults: readonly FaultRow[];
  /** Inputs that could not be read (the command still lists the rest). */
  readonly warnings: readonly string[];
}

const iso = (ms: number): string => (ms > 0 ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z') : '-');
const GROUP_NAME_ANNOTATION = 'scheduling.k8s.io/group-name';

function jobOf(p: Pod): string | undefined {
  const ns = p.metadata?.namespace ?? '';
  const owner = p.metadata?.ownerReferences?.find((o) => o.controller === true)?.name;
  const name = owner ?? p.metadata?.annotations?.[GROUP_NAME_ANNOTATION];
  return name === undefined ? undefined : `${ns}/${name}`;
}

export async function listFaults(client: KubeClient, o: { node?: string; job?: string; clusterSystemNamespace: string; nowMs: number }): Promise<FaultsResult> {
  const warnings: string[] = [];
  const rows: Array<Omit<FaultRow, 'jobs' | 'effect'> & { device?: string }> = [];
  const wantNode = (n: string): boolean => o.node === undefined || o.node === n;

  // Escalation state and manual-info first: they explain levels of the records below.
  const cs = o.clusterSystemNamespace;
  const csCms = await client.list<Cm>(paths.configMaps(cs));
  const csCm = (name: string): Cm | undefined => csCms.items.find((c) => c.metadata?.name === name);
  let esc: EscalationStateDoc | undefined;
  const escText = csCm(ESCALATION_STATE_CM_NAME)?.data?.[ESCALATION_STATE_KEY];
  if (escText !== undefined) {
    const p = parseEscalationState(escText);
    if (p.ok) esc = p.value; else warnings.push(`${cs}/${ESCALATION_STATE_CM_NAME}: ${p.reason}`);
  }
  const upgrades = new Map<string, string>(); // node/device/code -> rule text
  const upgradedTracks = Object.values(esc?.escalation.tracks ?? {}).filter((t) => t.upgrade !== null);
  for (const t of Object.values(esc?.escalation.tracks ?? {})) {
    if (t.upgrade !== null) upgrades.set(`${t.node}/${t.device}/${t.code}`, `FaultFrequency (clusterd-ts): ${t.baseLevel} -> ${t.upgrade.level} since ${iso(t.upgrade.sinceMs)}`);
    else if (t.duration?.phase === 'timedOut') upgrades.set(`${t.node}/${t.device}/${t.code}`, `FaultDuration (clusterd-ts): held past its timeout since ${iso(t.duration.escalatedAtMs ?? t.duration.sinceMs)}`);
  }
  const separated = Object.values(esc?.manualSeparation.separated ?? {});
  const manualInfo = parseManualInfoData(csCm(MANUAL_INFO_CM_NAME)?.data);
  if (!manualInfo.ok) warnings.push(`${cs}/${MANUAL_INFO_CM_NAME}: ${manualInfo.reason}`);

  const push = (r: FaultRecord, rule: string): void => {
    rows.push({ node: r.node, npu: r.device ?? '-', ...(r.device === undefined ? {} : { device: r.device }), source: r.source, code: r.code, level: r.level, reportedLevel: r.reportedLevel, rule, since: iso(r.firstSeenMs) });
  };

  // Device plugin.
  const dis = await client.list<Cm>(paths.configMaps(DEVICE_INFO_NAMESPACE), { labelSelector: `${DEVICE_INFO_LABEL_KEY}=true` });
  for (const cm of dis.items) {
    const node = nodeNameOfDeviceInfoCm(DEVICE_INFO_NAMESPACE, cm.metadata?.name ?? '');
    if (node === undefined || !wantNode(node)) continue;
    const p = parseDeviceInfoData(cm.data, o.nowMs);
    if (!p.ok) { warnings.push(`${DEVICE_INFO_NAMESPACE}/${cm.metadata?.name}: unreadable (${p.reason}); its faults are not listed`); continue; }
    const upgradedByDp = (device: string | undefined, code: string): UpgradeReason | undefined =>
      device === undefined ? undefined : p.value.upgradeFaultReason[device]?.find((u) => u.fault_code.toUpperCase() === code.toUpperCase());
    for (const r of deviceInfoRecords(node, p.value, o.nowMs)) {
      const ours = upgrades.get(`${node}/${r.device ?? '-'}/${r.code}`);
      const dp = upgradedByDp(r.device, r.code);
      const rule = r.code === MANUALLY_SEPARATE_NPU
        ? (p.value.manuallySeparateNpu.includes(r.device ?? '') ? 'device plugin ManuallySeparateNPU key (release: kubectl clusterd release)' : 'reported ManuallySeparateNPU')
        : ours ?? (dp !== undefined ? `${dp.upgrade_type} (device plugin): -> ${dp.fault_level} at ${iso(dp.upgrade_time * 1000)}` : 'reported');
      push(r, rule);
    }
  }
  // NodeD.
  const nis = await client.list<Cm>(paths.configMaps(NODE_INFO_NAMESPACE), { labelSelector: `${NODE_INFO_LABEL_KEY}=true` });
  for (const cm of nis.items) {
    const node = nodeNameOfNodeInfoCm(NODE_INFO_NAMESPACE, cm.metadata?.name ?? '');
    if (node === undefined || !wantNode(node)) continue;
    const p = parseNodeInfoData(cm.data);
    if (!p.ok) { warnings.push(`${NODE_INFO_NAMESPACE}/${cm.metadata?.name}: unreadable (${p.reason})`); continue; }
    for (const r of splitNodeFaults(node, p.value, o.nowMs)) push(r, 'reported (NodeD)');
  }
  // Public faults in force.
  const stat = csCm(STATISTIC_FAULT_CM_NAME)?.data?.[STATISTIC_FAULT_KEYS.publicFaults];
  if (stat !== undefined) {
    const p = parsePublicFaults(stat);
    if (!p.ok) warnings.push(`${cs}/${STATISTIC_FAULT_CM_NAME}: ${p.reason}`);
    else for (const [node, fs] of p.value) {
      if (!wantNode(node)) continue;
      for (const f of fs) rows.push({ node, npu: f.devIds.length === 0 ? '-' : `ids ${f.devIds.join(',')}`, source: `public (${f.resource})`, code: f.faultCode, level: f.level, reportedLevel: f.level, rule: `public fault ${f.faultId} (publicCustomization level)`, since: iso(f.faultTime * 1000) });
    }
  }
  // Escalations in force on chips the device plugin no longer reports (the counters alone hold them).
  const reported = new Set(rows.map((r) => `${r.node}/${r.npu}/${r.code}`));
  for (const t of upgradedTracks) {
    if (!wantNode(t.node) || reported.has(`${t.node}/${t.device}/${t.code}`)) continue;
    rows.push({ node: t.node, npu: t.device, device: t.device, source: 'clusterd-ts', code: t.code, level: t.upgrade!.level, reportedLevel: '-', rule: `${upgrades.get(`${t.node}/${t.device}/${t.code}`)} (fault no longer reported; release: kubectl clusterd release)`, since: iso(t.upgrade!.sinceMs) });
  }
  // Separations held by the controller's state or clusterd-manual-info-cm (no device report needed).
  const covered = new Set(rows.filter((r) => r.code === MANUALLY_SEPARATE_NPU).map((r) => `${r.node}/${r.npu}`));
  for (const s of separated) {
    if (!wantNode(s.node)) continue;
    const codes = s.entries.map((e) => e.code).filter((c) => c !== '').join(',');
    const since = Math.max(0, ...s.entries.map((e) => e.lastSeparateTimeMs));
    rows.push({ node: s.node, npu: s.device, device: s.device, source: 'clusterd-ts', code: MANUALLY_SEPARATE_NPU, level: 'ManuallySeparateNPU', reportedLevel: '-', rule: `manual-separation (clusterd-ts counters, codes ${codes || '-'})`, since: iso(since) });
    covered.add(`${s.node}/${s.device}`);
  }
  for (const [node, info] of Object.entries(manualInfo.ok ? manualInfo.value : {})) {
    if (!wantNode(node)) continue;
    for (const chip of info.Total ?? []) {
      if (covered.has(`${node}/${chip}`)) continue;
      const d = info.Detail?.[chip] ?? [];
      rows.push({ node, npu: chip, device: chip, source: MANUAL_INFO_CM_NAME, code: MANUALLY_SEPARATE_NPU, level: 'ManuallySeparateNPU', reportedLevel: '-', rule: `manual-separation (${MANUAL_INFO_CM_NAME}, codes ${d.map((x) => x.FaultCode).join(',') || '-'})`, since: iso(Math.max(0, ...d.map((x) => x.LastSeparateTime))) });
    }
  }

  // Jobs on those chips / nodes, and what was decided about them.
  const pods = await client.list<Pod>(paths.pods(), o.node === undefined ? {} : { fieldSelector: `spec.nodeName=${o.node}` });
  const onChip = new Map<string, Set<string>>(); // node/npu -> jobs
  const onNode = new Map<string, Set<string>>();
  for (const p of pods.items) {
    const node = p.spec?.nodeName;
    const job = jobOf(p);
    if (node === undefined || job === undefined || p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') continue;
    const npus = parseAscendReal(p.metadata?.annotations?.[ASCEND_REAL_ANNOTATION]);
    if (npus.length === 0) continue;
    (onNode.get(node) ?? onNode.set(node, new Set()).get(node)!).add(job);
    for (const n of npus) (onChip.get(`${node}/${n}`) ?? onChip.set(`${node}/${n}`, new Set()).get(`${node}/${n}`)!).add(job);
  }
  const jobsOf = (r: { node: string; device?: string }): string[] => [...(r.device === undefined ? onNode.get(r.node) ?? [] : onChip.get(`${r.node}/${r.device}`) ?? [])].sort();
  const withJobs = rows.map((r) => ({ ...r, jobs: jobsOf(r) })).filter((r) => o.job === undefined || r.jobs.includes(o.job));
  const namespaces = [...new Set(withJobs.flatMap((r) => r.jobs.map((j) => j.split('/')[0]!)))];
  const latest = new Map<string, StoredDecisionRecord>();
  for (const ns of namespaces) {
    const list = await client.list<unknown>(decisionRecordsPath(ns));
    for (const item of list.items) {
      const p = parseDecisionRecord(item);
      if (!p.ok) continue;
      for (const key of [`${ns}/${p.value.spec.job.name}`, `${ns}/${p.value.spec.job.podGroup ?? ''}`]) {
        const cur = latest.get(key);
        if (cur === undefined || cur.atMs < p.value.atMs) latest.set(key, p.value);
      }
    }
  }
  const effectOf = (jobs: readonly string[]): string => {
    if (jobs.length === 0) return 'no job on it';
    return jobs.map((j) => {
      const d = latest.get(j);
      return d === undefined ? `${j}: no decision recorded` : `${j}: ${d.spec.kind}/${d.spec.phase} ${d.spec.outcome} at ${d.spec.decidedAt.replace(/\.\d{3}Z$/, 'Z')}`;
    }).join('; ');
  };
  const faults = withJobs
    .map(({ device: _d, ...r }) => ({ ...r, effect: effectOf(r.jobs) }))
    .sort((a, b) => (a.node + a.npu + a.code < b.node + b.npu + b.code ? -1 : 1));
  return { faults, warnings };
}
