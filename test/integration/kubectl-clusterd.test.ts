/**
 * `kubectl clusterd` on the real control plane (the operator's view and the decision history): the plugin runs as a
 * subprocess with the kubeconfig of a ServiceAccount bound only to the shipped least-privilege RBAC
 * (cli/rbac.yaml); the controller (the Manager, built as main.ts builds it) runs in-process as admin.
 * - without the bindings every subcommand fails with exit code 4 and names the request RBAC refused;
 * - explain: a job rescheduled by a SeparateNPU fault has its decision recorded with its reason chain,
 *   still readable (and not recorded twice) after a controller restart;
 * - faults: the fault, its level and the rule behind it, and the job it hits;
 * - release: a chip clusterd-ts escalated to ManuallySeparateNPU (FaultFrequency) is released, stays
 *   released after a restart, and the request records who and when;
 * - breaker status|reset on the controller's breaker ConfigMap, also through `kubectl clusterd`;
 * - names and bounds (tenant isolation): a node name with a path, more than 64 NPUs, an unknown node
 *   or NPU, an unknown or untripped breaker scope are refused with a non-zero exit and nothing
 *   written; one oversized request in the list does not stop the controller acting on the others,
 *   and the list is appended to, never replaced.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { paths } from '../../runtime/kube-client.ts';
import type { Manager } from '../../controllers/manager.ts';
import { ensureBinaries, kubeconfigYaml } from '../../tools/control-plane/control-plane.ts';
import { adminClient, controlPlaneInfo, eventually, newNamespace } from '../support/cluster.ts';
import { grantPluginRbac, newPluginUser, putCm } from '../support/plugin-user.ts';
import { deviceEntry } from '../support/cluster-info-read.ts';
import { jobPods, runningWithNpus, startWorld, vcJob, type PodObj, type World } from '../../tools/job-peer/world.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { ESCALATION_STATE_CM_NAME, ESCALATION_STATE_KEY, parseEscalationState } from '../../schemas/escalation-state/escalation-state.ts';
import { RELEASE_REQUESTS_CM_NAME, parseReleaseRequests } from '../../schemas/release-request/release-request.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { rescheduleReasonAfter, startManager } from '../support/jobs-support.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(REPO, 'cli', 'kubectl-clusterd.ts');
const run = promisify(execFile);
const P = 'huawei.com/Ascend910';
const chips = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);

interface Ran { code: number; stdout: string; stderr: string }

/** The plugin as a subprocess (async: the controller runs in this process and must keep running). */
async function plugin(kubeconfig: string, args: readonly string[], via: 'node' | 'kubectl' = 'node'): Promise<Ran> {
  // kubectl: the one tools/k8s-bins builds from Go modules (a fresh machine may have none).
  const env = { ...process.env, KUBECONFIG: kubeconfig, PATH: `${join(REPO, 'cli', 'bin')}:${join(REPO, 'node_modules', '.bin')}:${ensureBinaries()}:${process.env.PATH ?? ''}` };
  const [cmd, argv] = via === 'node' ? [process.execPath, [CLI, ...args]] : ['kubectl', ['clusterd', ...args]];
  try {
    const r = await run(cmd, argv, { env, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

const npusOf = (p: PodObj): string[] => (p.metadata?.annotations?.['huawei.com/AscendReal'] ?? '').split(',').filter(Boolean);
function levelIn(e: { DeviceList: Record<string, string> } | undefined, chip: string): string | undefined {
  const faults = JSON.parse(e?.DeviceList[`${P}-Fault`] ?? '[]') as Array<{ npu_name: string; fault_level: string }>;
  return faults.find((x) => x.npu_name === chip && x.fault_level === 'ManuallySeparateNPU')?.fault_level;
}

describe('kubectl clusterd (plugin as a subprocess, least-privilege user)', () => {
  const admin = adminClient();
  let world: World;
  let manager: Manager | undefined;
  let csNs = '';
  let kubeconfig = '';
  let user = '';
  const id = Math.random().toString(16).slice(2, 8);
  const args = (): string[] => ['--device-plugin-rules', `--cluster-system-namespace=${csNs}`, '--grpc-port=0'];

  beforeAll(async () => {
    world = await startWorld(admin, { nodes: 3, prefix: 'kc' });
    csNs = await newNamespace(admin, 'cs');
    const sre = await newPluginUser(admin);
    user = sre.user;
    kubeconfig = join(mkdtempSync(join(tmpdir(), 'kc-')), 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(controlPlaneInfo().servers[0]!, sre.token, 'sre'));
    // Before any grant: every subcommand is refused, clearly.
    for (const a of [['faults'], ['explain', `${world.ns}/x`], ['release', world.nodes[0]!, 'Ascend910-0'], ['breaker', 'status']]) {
      const r = await plugin(kubeconfig, a);
      expect({ args: a, code: r.code }).toEqual({ args: a, code: 4 });
      expect(r.stderr).toMatch(/^error: forbidden: your user may not (list|get|create|patch) \S+/);
    }
    await grantPluginRbac(admin, sre, csNs, id);
    ({ manager } = await startManager(admin, args()));
  }, 120_000);

  afterAll(async () => {
    await manager?.stop();
    await world?.stop();
  });

  it('explain: the rescheduled job\'s decision with its reason chain, the same after a controller restart; faults names the fault, rule and job', async () => {
    const { ns } = world;
    const job = await admin.create(paths.vcJobs(ns), vcJob(ns, { nodeSelector: world.nodeSelector, name: 'llama', replicas: 2, npus: 4, labels: { 'fault-scheduling': 'force' } }));
    const uid = job.metadata!.uid!;
    const before = await eventually(async () => { const ps = await jobPods(admin, ns, 'llama'); return ps.length === 2 && ps.every(runningWithNpus) ? ps : undefined; }, 30_000);
    const victim = before[1]!;
    const node = victim.spec!.nodeName!;
    const npu = npusOf(victim)[0]!;

    // faults, while the job still runs on the chip (before the decision's pods are replaced the row names the job).
    await world.dp.injectChipFault({ node, npu, code: '80E18402', level: 'SeparateNPU' });
    await rescheduleReasonAfter(admin, `${ns}/llama-${uid}`, 1, 20_000);

    const explained = await eventually(async () => {
      const r = await plugin(kubeconfig, ['explain', `${ns}/llama`, '-o', 'json']);
      if (r.code !== 0) return undefined;
      const recs = JSON.parse(r.stdout) as Array<{ name: string; decisionId: string; kind: string; outcome: string; faults: Array<{ code: string; level?: string; node?: string; device?: string }>; reasons: Array<{ stage: string; detail: string }>; actions: string[] }>;
      return recs.some((x) => x.outcome === 'acted') ? recs : undefined;
    }, 20_000);
    const acted = explained.find((x) => x.outcome === 'acted')!;
    expect(acted.kind).toBe('job');
    expect(acted.faults).toEqual(expect.arrayContaining([expect.objectContaining({ code: '80E18402', level: 'SeparateNPU', node, device: npu })]));
    expect(acted.reasons.length).toBeGreaterThan(1);
    expect(acted.reasons.map((x) => x.detail).join(' ')).toMatch(/decision\.job-level/);
    expect(acted.actions.some((a) => a.startsWith('forceDeletePods('))).toBe(true);
    const table = await plugin(kubeconfig, ['explain', `${ns}/llama`]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(`Decision history of ${ns}/llama`);
    expect(table.stdout).toMatch(/fault {3}80E18402 SeparateNPU on \S+\/Ascend910-\d/);
    expect(table.stdout).toContain('because [');

    const f = await plugin(kubeconfig, ['faults', '--node', node, '-o', 'json', '--cluster-system-namespace', csNs]);
    expect({ code: f.code, stderr: f.stderr }).toEqual({ code: 0, stderr: '' });
    const rows = (JSON.parse(f.stdout) as { faults: Array<{ npu: string; code: string; level: string; rule: string; source: string; effect: string }> }).faults;
    expect(rows).toEqual(expect.arrayContaining([expect.objectContaining({ npu, code: '80E18402', level: 'SeparateNPU', source: 'npu', rule: 'reported' })]));
    const ft = await plugin(kubeconfig, ['faults', '--node', node, '--cluster-system-namespace', csNs]);
    expect(ft.stdout).toMatch(/^NODE\s+NPU\s+SOURCE\s+CODE\s+LEVEL\s+RULE\s+SINCE\s+EFFECT/);

    // Restart: the history is read back from the apiserver, and nothing is recorded twice.
    await manager!.stop();
    ({ manager } = await startManager(admin, args()));
    await new Promise((r) => setTimeout(r, 3_000));
    const after = await plugin(kubeconfig, ['explain', `${ns}/llama`, '-o', 'json']);
    expect(after.code).toBe(0);
    const recs = JSON.parse(after.stdout) as Array<{ name: string; decisionId: string; outcome: string }>;
    expect(recs.map((x) => x.name)).toEqual(expect.arrayContaining(explained.map((x) => x.name)));
    const keys = recs.map((x) => `${x.decisionId}|${x.outcome === 'held' ? 'held' : 'decided'}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(recs.filter((x) => x.decisionId === acted.decisionId)).toHaveLength(1);

    const missing = await plugin(kubeconfig, ['explain', `${ns}/no-such-job`]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('no decision recorded');
  }, 180_000);

  it('release: a chip clusterd-ts escalated to ManuallySeparateNPU (FaultFrequency) is released, stays released after a restart, who and when recorded', async () => {
    const node = `kc-esc-${id}`;
    const chip = 'Ascend910-0';
    const report = async (faulty: boolean): Promise<void> => {
      await putCm(admin, 'kube-system', deviceInfoCmName(node), encodeDeviceInfoData({
        available: chips.filter((c) => !faulty || c !== chip), unhealthy: faulty ? [chip] : [], updateTimeS: Math.floor(Date.now() / 1000),
        faults: faulty ? [makeDeviceFault('CardUnhealthy', chip, [{ code: '80E18005', level: 'RestartNPU', timeMs: Date.now() }])] : [],
      }), DEVICE_INFO_LABELS);
      await eventually(() => manager!.deviceFaults.effective(node).some((r) => r.code === '80E18005') === faulty);
    };
    for (let i = 0; i < 3; i++) { await report(true); await report(false); } // FaultFrequency: 3 in 24 h -> ManuallySeparateNPU
    await eventually(async () => levelIn(await deviceEntry(admin, node), chip) === 'ManuallySeparateNPU', 15_000);

    const f = await plugin(kubeconfig, ['faults', '--node', node, '-o', 'json', '--cluster-system-namespace', csNs]);
    expect({ code: f.code, stderr: f.stderr }).toEqual({ code: 0, stderr: '' });
    const rows = (JSON.parse(f.stdout) as { faults: Array<{ npu: string; code: string; rule: string }> }).faults;
    // The device plugin reports the chip healthy: only clusterd-ts's counters separate it, and faults says so.
    expect(rows).toEqual([expect.objectContaining({ npu: chip, code: '80E18005', rule: expect.stringContaining('FaultFrequency (clusterd-ts): RestartNPU -> ManuallySeparateNPU') })]);
    const escalated = await eventually(async () => {
      const p = parseEscalationState((await admin.getOrUndefined<ConfigMap>(paths.configMap(csNs, ESCALATION_STATE_CM_NAME)))?.data?.[ESCALATION_STATE_KEY] ?? '');
      return p.ok && p.value.escalation.tracks[`${node}/${chip}/80E18005`]?.upgrade?.level === 'ManuallySeparateNPU' ? p.value : undefined;
    });
    expect(escalated).toBeDefined();

    const r = await plugin(kubeconfig, ['release', node, chip, '-o', 'json', '--cluster-system-namespace', csNs]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { by: string; paths: Array<{ path: string; released: string[] }> };
    expect(out.by).toBe(user);
    expect(out.paths.find((x) => x.path === 'clusterd-ts-escalation')?.released).toEqual([chip]);
    await eventually(async () => levelIn(await deviceEntry(admin, node), chip) === undefined, 15_000);
    const reqs = parseReleaseRequests((await admin.getOrUndefined<ConfigMap>(paths.configMap(csNs, RELEASE_REQUESTS_CM_NAME)))?.data);
    expect(reqs.ok && reqs.value.requests).toEqual([expect.objectContaining({ node, npus: [chip], by: user })]);
    // The persisted counters no longer re-assert it: not after a while, not after a restart.
    await eventually(async () => {
      const p = parseEscalationState((await admin.getOrUndefined<ConfigMap>(paths.configMap(csNs, ESCALATION_STATE_CM_NAME)))?.data?.[ESCALATION_STATE_KEY] ?? '');
      return p.ok && (p.value.escalation.tracks[`${node}/${chip}/80E18005`]?.upgrade ?? null) === null; // released (an idle track is pruned)
    });
    await manager!.stop();
    ({ manager } = await startManager(admin, args()));
    await manager.clusterInfo.idle();
    expect(manager.faultPolicy.verdicts(node).filter((v) => v.device === chip)).toEqual([]);
    expect(levelIn(await deviceEntry(admin, node), chip)).toBeUndefined();
    // A new fault after the release counts from zero: one occurrence does not separate it again.
    await report(true); await report(false);
    await manager.clusterInfo.idle();
    expect(levelIn(await deviceEntry(admin, node), chip)).toBeUndefined();
  }, 120_000);

  it('release of a chip in the device plugin\'s ManuallySeparateNPU key removes it there', async () => {
    const node = `kc-dp-${id}`;
    await putCm(admin, 'kube-system', deviceInfoCmName(node), encodeDeviceInfoData({ available: chips, updateTimeS: Math.floor(Date.now() / 1000), manuallySeparateNpu: ['Ascend910-2', 'Ascend910-5'] }), DEVICE_INFO_LABELS);
    const f = await eventually(async () => {
      const x = await plugin(kubeconfig, ['faults', '--node', node, '-o', 'json', '--cluster-system-namespace', csNs]);
      const rows = (JSON.parse(x.stdout) as { faults: Array<{ npu: string; rule: string }> }).faults;
      return rows.length === 2 ? rows : undefined;
    });
    expect(f.map((x) => x.rule)).toEqual([expect.stringContaining('device plugin ManuallySeparateNPU key'), expect.stringContaining('device plugin ManuallySeparateNPU key')]);
    const r = await plugin(kubeconfig, ['release', node, 'Ascend910-2', '--cluster-system-namespace', csNs]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/device-plugin\s+Ascend910-2\s+removed from kube-system\/mindx-dl-deviceinfo-/);
    const cm = await admin.get<ConfigMap>(paths.configMap('kube-system', deviceInfoCmName(node)));
    expect(cm.data?.ManuallySeparateNPU).toBe('Ascend910-5');
    const bad = await plugin(kubeconfig, ['release', node, 'not-a-chip!']);
    expect(bad.code).toBe(2);
  }, 120_000);

  it('release refuses a path in the node name, more than 64 NPUs, an unknown node and unknown NPUs: non-zero exit, nothing written', async () => {
    // A ConfigMap the operate Role can patch, at the path `node-000/../<target>` resolves to.
    const target = `rt-target-${id}`;
    await putCm(admin, 'kube-system', target, { ManuallySeparateNPU: 'Ascend910-0,Ascend910-1' });
    const requests = async (): Promise<string | undefined> => (await admin.getOrUndefined<ConfigMap>(paths.configMap(csNs, RELEASE_REQUESTS_CM_NAME)))?.data?.requests;
    const listed = await requests();
    const evil = await plugin(kubeconfig, ['release', `node-000/../${target}`, 'Ascend910-0', '--cluster-system-namespace', csNs]);
    expect({ code: evil.code, stderr: evil.stderr }).toEqual({ code: 2, stderr: expect.stringContaining('not a node name') });
    expect((await admin.get<ConfigMap>(paths.configMap('kube-system', target))).data).toEqual({ ManuallySeparateNPU: 'Ascend910-0,Ascend910-1' });
    const node = `kc-unk-${id}`;
    const unknownNode = await plugin(kubeconfig, ['release', node, 'Ascend910-0', '--cluster-system-namespace', csNs]);
    expect({ code: unknownNode.code, stderr: unknownNode.stderr }).toEqual({ code: 3, stderr: expect.stringContaining(`unknown node ${node}`) });
    await putCm(admin, 'kube-system', deviceInfoCmName(node), encodeDeviceInfoData({ available: chips, updateTimeS: Math.floor(Date.now() / 1000), manuallySeparateNpu: ['Ascend910-2'] }), DEVICE_INFO_LABELS);
    const unknownChip = await plugin(kubeconfig, ['release', node, 'Ascend910-2', 'Ascend910-12', '--cluster-system-namespace', csNs]);
    expect({ code: unknownChip.code, stderr: unknownChip.stderr }).toEqual({ code: 3, stderr: expect.stringContaining('unknown NPUs on') });
    const many = await plugin(kubeconfig, ['release', node, ...Array.from({ length: 65 }, (_, i) => `Ascend910-${i}`), '--cluster-system-namespace', csNs]);
    expect({ code: many.code, stderr: many.stderr }).toEqual({ code: 2, stderr: expect.stringContaining('65 NPUs in one release; at most 64') });
    // Nothing released anywhere, nothing recorded.
    expect((await admin.get<ConfigMap>(paths.configMap('kube-system', deviceInfoCmName(node)))).data?.ManuallySeparateNPU).toBe('Ascend910-2');
    expect(await requests()).toBe(listed);
  }, 120_000);

  it('a 20,000-NPU request in the list does not stop the controller acting on the others, and the next release appends to the list, never replacing it', async () => {
    const node = `kc-big-${id}`;
    const chip = 'Ascend910-1';
    const report = async (faulty: boolean): Promise<void> => {
      await putCm(admin, 'kube-system', deviceInfoCmName(node), encodeDeviceInfoData({
        available: chips.filter((c) => !faulty || c !== chip), unhealthy: faulty ? [chip] : [], updateTimeS: Math.floor(Date.now() / 1000),
        faults: faulty ? [makeDeviceFault('CardUnhealthy', chip, [{ code: '80E18005', level: 'RestartNPU', timeMs: Date.now() }])] : [],
      }), DEVICE_INFO_LABELS);
      await eventually(() => manager!.deviceFaults.effective(node).some((r) => r.code === '80E18005') === faulty);
    };
    for (let i = 0; i < 3; i++) { await report(true); await report(false); } // FaultFrequency: 3 in 24 h -> ManuallySeparateNPU
    await eventually(async () => levelIn(await deviceEntry(admin, node), chip) === 'ManuallySeparateNPU', 15_000);
    // The list as an older plugin (or a hand edit) left it: the records so far, a 20,000-NPU request
    // (past 256 KB of text), then a valid request for the chip.
    const stored = async (): Promise<unknown[]> => JSON.parse((await admin.getOrUndefined<ConfigMap>(paths.configMap(csNs, RELEASE_REQUESTS_CM_NAME)))?.data?.requests ?? '[]') as unknown[];
    const before = await stored();
    const huge = { node: 'node-000', npus: Array.from({ length: 20_000 }, (_, i) => `Ascend910-${i}`), by: 'someone', at: new Date().toISOString() };
    const valid = { node, npus: [chip], by: 'earlier-plugin', at: new Date(Date.now() + 1_000).toISOString() };
    const list = [...before, huge, valid];
    expect(JSON.stringify(list).length).toBeGreaterThan(256 * 1024);
    await putCm(admin, csNs, RELEASE_REQUESTS_CM_NAME, { requests: JSON.stringify(list) });
    await eventually(async () => levelIn(await deviceEntry(admin, node), chip) === undefined, 20_000);
    // The next release appends: every record so far kept, verbatim, and this one after them.
    const r = await plugin(kubeconfig, ['release', node, chip, '-o', 'json', '--cluster-system-namespace', csNs]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await stored()).toEqual([...list, { node, npus: [chip], by: user, at: expect.any(String) }]);
  }, 120_000);

  it('breaker status and reset (ConfigMap clusterd-ts-breaker), also through kubectl', async () => {
    const ctrlNs = await newNamespace(admin, 'ctl');
    // The operate Role is for mindx-dl (the default controller namespace); this test's breaker lives there too.
    await admin.delete(paths.configMap('mindx-dl', 'clusterd-ts-breaker')).catch(() => undefined);
    // The controller running in this file recreates its state at once when it has counted anything
    // (chips of the tests above) within its window: "no breaker state" / exit 3 only while it is absent.
    const none = await plugin(kubeconfig, ['breaker', 'status']);
    expect(none.code).toBe(0);
    if (none.stdout !== 'no breaker state\n') expect(none.stdout).toMatch(/^SCOPE\s+TRIPPED[^]*\bcluster\s+no\b/);
    if ((await admin.getOrUndefined(paths.configMap('mindx-dl', 'clusterd-ts-breaker'))) === undefined) {
      const absentReset = await plugin(kubeconfig, ['breaker', 'reset']);
      expect(absentReset.code).toBe(3);
    }
    const state = { scopes: [{ scope: 'cluster', tripped: false, trippedAt: null, reason: '', held: 0 }, { scope: 'rack-7', tripped: true, trippedAt: '2026-01-02T03:04:05Z', reason: '9 nodes isolated in 60 s > 8', held: 3 }] };
    await putCm(admin, 'mindx-dl', 'clusterd-ts-breaker', { state: JSON.stringify(state) });
    const viaKubectl = await plugin(kubeconfig, ['breaker', 'status'], 'kubectl');
    expect(viaKubectl.code).toBe(0);
    // Counts: none in this hand-written state ('-'), or 0/0/0 once the controller adopted and rewrote it.
    expect(viaKubectl.stdout).toMatch(/rack-7\s+yes\s+2026-01-02T03:04:05(\.000)?Z\s+3\s+(-|0\/0\/0)\s+9 nodes isolated/);
    const js = await plugin(kubeconfig, ['breaker', 'status', '-o', 'yaml']);
    expect(js.stdout).toContain('scope: rack-7');
    const reset = await plugin(kubeconfig, ['breaker', 'reset', 'rack-7']);
    expect(reset.code).toBe(0);
    // The controller running in this file adopts the state above, applies the reset request the plugin
    // wrote and records it as clusterd-ts.io/breaker-last-reset (the request itself is removed).
    const cm = await eventually(async () => {
      const c = await admin.get<ConfigMap>(paths.configMap('mindx-dl', 'clusterd-ts-breaker'));
      return c.metadata?.annotations?.['clusterd-ts.io/breaker-last-reset'] !== undefined ? c : undefined;
    });
    expect(JSON.parse(cm.metadata?.annotations?.['clusterd-ts.io/breaker-last-reset'] ?? '{}')).toEqual({ scope: 'rack-7', by: user, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(cm.metadata?.annotations?.['clusterd-ts.io/breaker-reset']).toBeUndefined();
    const after = await plugin(kubeconfig, ['breaker', 'status', '-o', 'json']);
    expect((JSON.parse(after.stdout) as { scopes: Array<{ scope: string; tripped: boolean }> }).scopes.some((x) => x.scope === 'rack-7' && x.tripped)).toBe(false); // reset (and, idle, pruned)
    // status tells who reset it (the controller's record, not the request it removed).
    expect((JSON.parse(after.stdout) as { lastReset?: { scope: string; by: string } }).lastReset).toEqual(expect.objectContaining({ scope: 'rack-7', by: user }));
    expect((await plugin(kubeconfig, ['breaker', 'status'])).stdout).toContain(`last reset: {"scope":"rack-7","by":"${user}"`);
    // Another namespace: the user's Role does not reach it, and the error says which request.
    const other = await plugin(kubeconfig, ['breaker', 'status', '--controller-namespace', ctrlNs]);
    expect(other.code).toBe(4);
    expect(other.stderr).toContain(`get configmaps clusterd-ts-breaker in namespace ${ctrlNs}`);
    await admin.delete(paths.configMap('mindx-dl', 'clusterd-ts-breaker'));
  }, 120_000);

  it('breaker reset of an unknown scope or one not tripped is refused (exit 3); the record of the last reset is kept, also against a request written by hand', async () => {
    const CM = paths.configMap('mindx-dl', 'clusterd-ts-breaker');
    const state = { scopes: [{ scope: 'cluster', tripped: false, trippedAt: null, reason: '', held: 0 }, { scope: 'rack-8', tripped: true, trippedAt: '2026-01-02T03:04:05Z', reason: '9 nodes isolated in 60 s > 8', held: 1 }] };
    // The controller may write its own state meanwhile (a 409 on create or replace): put it again.
    await eventually(async () => putCm(admin, 'mindx-dl', 'clusterd-ts-breaker', { state: JSON.stringify(state) }).then(() => true, () => false));
    const lastReset = async (): Promise<unknown> => JSON.parse((await admin.get<ConfigMap>(CM)).metadata?.annotations?.['clusterd-ts.io/breaker-last-reset'] ?? 'null');
    expect((await plugin(kubeconfig, ['breaker', 'reset', 'rack-8'])).code).toBe(0);
    await eventually(async () => ((await lastReset()) as { scope?: string } | null)?.scope === 'rack-8');
    const record = await lastReset();
    expect(record).toMatchObject({ scope: 'rack-8', by: user });
    for (const scope of ['rack-8', 'cluster', 'no-such-rack']) {
      const r = await plugin(kubeconfig, ['breaker', 'reset', scope]);
      expect({ scope, code: r.code }).toEqual({ scope, code: 3 });
    }
    expect((await plugin(kubeconfig, ['breaker', 'reset', 'rack-8/../x'])).code).toBe(2);
    // A no-op request written without the plugin: the controller removes it and keeps the record.
    await admin.patch(CM, { metadata: { annotations: { 'clusterd-ts.io/breaker-reset': JSON.stringify({ scope: 'cluster', by: 'someone-else', at: new Date().toISOString() }) } } }, 'merge');
    await eventually(async () => (await admin.get<ConfigMap>(CM)).metadata?.annotations?.['clusterd-ts.io/breaker-reset'] === undefined);
    expect(await lastReset()).toEqual(record);
    await admin.delete(CM);
  }, 120_000);

  it('breaker status: stamps older than the window the state names are neither shown nor counted (the controller does not rewrite the state when they age out)', async () => {
    // A namespace no controller watches, read as admin: what is shown is what the plugin makes of the stored text.
    const ns = await newNamespace(admin, 'brk');
    const info = controlPlaneInfo();
    const adminKc = join(mkdtempSync(join(tmpdir(), 'kc-')), 'kubeconfig');
    writeFileSync(adminKc, kubeconfigYaml(info.servers[0]!, info.adminToken));
    const now = Date.now();
    const ago = (s: number): string => new Date(now - s * 1000).toISOString();
    const scope = (name: string, jobs: Array<{ key: string; at: string }>, trip?: string) => ({
      scope: name, tripped: trip !== undefined, trippedAt: trip === undefined ? null : ago(700), reason: trip ?? '', held: trip === undefined ? 0 : 2,
      counts: { chips: 0, nodes: 0, jobs: jobs.length }, window: { chips: [], nodes: [], jobs },
    });
    const old = { key: 'uid-old', at: ago(660) };
    const scopes = [scope('cluster', [old, { key: 'uid-new', at: ago(60) }]), scope('rack-1', [old]), scope('rack-2', [old], '17 jobs rescheduled within 600 s > 16')];
    await putCm(admin, ns, 'clusterd-ts-breaker', { state: JSON.stringify({ windowSeconds: 600, scopes }) });
    const status = async (o: string[] = []): Promise<Ran> => plugin(adminKc, ['breaker', 'status', '--controller-namespace', ns, ...o]);
    const js = JSON.parse((await status(['-o', 'json'])).stdout) as { windowSeconds?: number; scopes: Array<{ scope: string; counts?: Record<string, number>; window?: { jobs: Array<{ key: string }> } }> };
    expect(js.windowSeconds).toBe(600);
    // rack-1 had only the aged stamp and is not tripped: nothing to say (as the controller prunes it on load).
    expect(js.scopes.map((x) => x.scope)).toEqual(['cluster', 'rack-2']);
    expect(js.scopes[0]).toMatchObject({ counts: { jobs: 1 }, window: { jobs: [{ key: 'uid-new' }] } });
    expect(js.scopes[1]).toMatchObject({ tripped: true, held: 2, counts: { jobs: 0 }, window: { jobs: [] } });
    const text = (await status()).stdout;
    expect(text).toMatch(/^cluster\s+no\s+-\s+0\s+0\/0\/1\s+-$/m);
    expect(text).toMatch(/^rack-2\s+yes\s+\S+\s+2\s+0\/0\/0\s+17 jobs rescheduled/m);
    expect(text).not.toContain('rack-1');
    expect(text).toContain('window: 600 s');
    // A state from before windowSeconds was recorded (an older controller): the window is unknown, shown as stored.
    await putCm(admin, ns, 'clusterd-ts-breaker', { state: JSON.stringify({ scopes }) });
    const raw = (await status()).stdout;
    expect(raw).toMatch(/^cluster\s+no\s+-\s+0\s+0\/0\/2\s+-$/m);
    expect(raw).toContain('rack-1');
    expect(raw).toContain('window: not recorded');
  }, 120_000);
});
