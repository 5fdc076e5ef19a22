/**
 * Fuzz suite for every wire-format parser in schemas/ (hostile input is refused, never a crash). For each format, random text and
 * mutations of a valid fixture (fuzz-kit.ts) must
 *   1. never throw past the parser (a rejection comes back as `{ ok: false, reason, kind }`), and
 *   2. when accepted, re-encode (our encoder) to bytes that obey the Go rules (every number a plain
 *      integer literal within 2^53-1: what Go's json.Unmarshal into an int field takes), that our own
 *      strict parser accepts again, and that re-encode to the same bytes (a fixpoint).
 * Device-info and node-info also go through the store and the cluster-info renderer, and what
 * Volcano would read (cluster-info-device / -switch / -node-cm) must pass the strict cluster-info
 * parser and the Go rules. Writers that sign what they write are modelled: after a mutation the
 * CheckCode is recomputed (an attacker can write `UpdateTime: 1e21` with a valid one).
 *
 * Seeds: the run's seed is printed first; a failure prints seed and path. Replay with
 * `FUZZ_SEED=<seed>`; `FUZZ_RUNS=<n>` for a longer run (default 300 per property).
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { FUZZ_RUNS, FUZZ_SEED, goRuleViolation, mutateData, mutateText, mutationPlan, randomText } from './fuzz-kit.ts';
import { goJson } from '../go-json.ts';
import { FaultStore } from '../../state/fault-store.ts';
import { renderClusterInfo } from '../../reconcilers/cluster-info.reconciler.ts';
import { encodeClusterInfo, parseClusterInfo, type ClusterInfoKind } from '../cluster-info/cluster-info.ts';
import { deviceInfoCheckCode, DEVICE_INFO_LABELS, deviceInfoCmName, encodeDeviceInfoCfg, parseDeviceInfoData, type DeviceInfoData } from '../device-info/device-info.ts';
import { encodeDeviceInfoData, encodeUpgradeFaultReason, makeDeviceFault } from '../device-info/device-info-encode.ts';
import { encodeDeviceFaultList, parseDeviceFaultList } from '../device-info/device-fault.ts';
import { encodeSwitchInfo, parseSwitchInfo, ZERO_SWITCH_INFO } from '../device-info/switch-info.ts';
import { encodeNodeInfoCm, encodeNodeInfoData, nodeInfoCheckCode, nodeInfoCmName, parseNodeInfoData, NODE_INFO_LABELS, type NodeInfo } from '../node-info/node-info.ts';
import { encodePublicFault, parsePublicFault, parsePublicFaultData } from '../public-fault/public-fault.ts';
import { parsePublicFaultConfig } from '../public-fault/public-fault-config.ts';
import { DEFAULT_FAULT_CODE_CONFIG, encodeFaultCode, parseFaultCode } from '../fault-code/fault-code.ts';
import { DEFAULT_FAULT_CUSTOMIZATION, encodeFaultCustomization, parseFaultCustomization } from '../fault-customization/fault-customization.ts';
import { parseSwitchFaultCode } from '../fault-config-cm/switch-fault-code.ts';
import { parseFaultConfigCm } from '../fault-config-cm/fault-config-cm.ts';
import { encodeManualInfo, encodeManualInfoData, parseManualInfo, parseManualInfoData } from '../manual-info/manual-info.ts';
import { encodeResetConfigData, encodeTaskResetInfo, parseResetConfigData, parseTaskResetInfo } from '../reset-config/reset-config.ts';
import { encodeFaultConfigData, encodeTaskFaultInfo, parseFaultConfigData, parseTaskFaultInfo } from '../fault-config-job/fault-config-job.ts';
import { encodeJobState, parseJobState } from '../job-state/job-state.ts';
import { emptyEscalationStateDoc, encodeEscalationState, parseEscalationState } from '../escalation-state/escalation-state.ts';
import { encodeFaultNodes, encodeRemainRetryTimes, encodeVcjobFaultNpuData, parseFaultNodes, parseRemainRetryTimes, parseVcjobFaultNpuData } from '../vcjob-fault-npu/vcjob-fault-npu.ts';
import { encodeGlobalTorInfo, parseGlobalTorInfo } from '../tor-share/tor-share.ts';
import { encodeRescheduleHistory, parseRescheduleHistory } from '../job-reschedule-reason/job-reschedule-reason.ts';
import { DEFAULT_MANUAL_SEPARATE_POLICY, encodeManualSeparatePolicy, parseManualSeparatePolicy } from '../manual-separate-policy/manual-separate-policy.ts';
import { parseJobKnobs } from '../job-knobs/job-knobs.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';

const NOW = 1_795_255_300_000; // 2026-11-21
const T = 1_795_255_200_000;
const runs = { numRuns: FUZZ_RUNS, seed: FUZZ_SEED };
/** Accepted inputs and re-encoded outputs per format, reported at the end. */
const tally = new Map<string, { runs: number; accepted: number }>();
const count = (name: string, accepted: boolean): void => {
  const t = tally.get(name) ?? { runs: 0, accepted: 0 };
  t.runs++;
  if (accepted) t.accepted++;
  tally.set(name, t);
};

beforeAll(() => {
  process.stdout.write(`wire-format fuzz: seed ${FUZZ_SEED}, ${FUZZ_RUNS} runs per property (replay: FUZZ_SEED=${FUZZ_SEED})\n`);
});
afterAll(() => {
  const lines = [...tally].map(([n, t]) => `  ${n}: ${t.runs} inputs, ${t.accepted} accepted`);
  process.stdout.write(`wire-format fuzz results (seed ${FUZZ_SEED}):\n${lines.join('\n')}\n`);
});

/** The value of a fixture parse that must succeed. */
function must<T>(p: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!p.ok) throw new Error(`fixture refused: ${p.reason}`);
  return p.value;
}
const escalationText = (e: ReturnType<typeof encodeEscalationState>): string => {
  if (!e.ok) throw new Error(e.reason);
  return e.text;
};

/** Asserts the Go rules on every output and returns them. */
function goClean(outputs: readonly string[]): void {
  for (const o of outputs) {
    if (o === '') continue;
    const v = goRuleViolation(o);
    if (v !== undefined) throw new Error(`${v}\nin ${o.slice(0, process.env.FUZZ_FULL ? 100_000 : 300)}`);
  }
}

interface TextFormat<T> {
  readonly name: string;
  readonly fixtures: readonly string[];
  readonly parse: (text: string) => { ok: true; value: T } | { ok: false; reason: string };
  readonly encode: (value: T) => string;
  /** Not JSON (YAML): the Go JSON rules do not apply to its bytes. */
  readonly notJson?: boolean;
}

/** Property 1 + 2 for a single-text format. */
function textFormat<T>(f: TextFormat<T>): void {
  const check = (text: string): void => {
    const p = f.parse(text);
    count(f.name, p.ok);
    if (!p.ok) {
      expect(typeof p.reason).toBe('string');
      return;
    }
    const out = f.encode(p.value);
    if (f.notJson !== true) goClean([out]);
    const again = f.parse(out);
    if (!again.ok) throw new Error(`our own output is refused: ${again.reason}\n${out.slice(0, 300)}`);
    expect(f.encode(again.value)).toBe(out);
  };
  describe(f.name, () => {
    it('fixtures are accepted and re-encode cleanly', () => {
      for (const x of f.fixtures) {
        expect(f.parse(x)).toMatchObject({ ok: true });
        check(x);
      }
    });
    it('mutated fixtures never throw; what is accepted re-encodes to Go-clean bytes our parser takes', () => {
      fc.assert(fc.property(fc.constantFrom(...f.fixtures), mutationPlan, (x, plan) => check(mutateText(x, plan))), runs);
    });
    it('random text never throws', () => {
      fc.assert(fc.property(randomText, check), runs);
    });
  });
}

// ---- fixtures (golden texts of the format tests) ----

const SEP = '[0x00f103b0,155904,na,na]';
const switchEvent = JSON.stringify({ EventType: 11, AssembledFaultCode: SEP, PeerPortDevice: 1, PeerPortId: 3, SwitchChipId: 0, SwitchPortId: 7, Severity: 2, Assertion: 1, AlarmRaisedTime: T - 5000 });
const SWITCH = { FaultCode: [switchEvent], FaultLevel: 'Separate', UpdateTime: (T - 1000) / 1000, NodeStatus: 'UnHealthy', FaultTimeAndLevelMap: { [`${SEP}_0_7`]: { fault_time: T - 5000, fault_level: 'Separate' } } };
const DEVICE_INFO = encodeDeviceInfoData({
  available: ['Ascend910-0', 'Ascend910-1', 'Ascend910-2'], unhealthy: ['Ascend910-3'], networkUnhealthy: ['Ascend910-2'], updateTimeS: T / 1000,
  faults: [
    makeDeviceFault('CardUnhealthy', 'Ascend910-3', [{ code: '80E18402', level: 'SeparateNPU', timeMs: T - 9000 }, { code: '80E18401', level: 'NotHandleFault', timeMs: T - 9000 }]),
    makeDeviceFault('CardNetworkUnhealthy', 'Ascend910-2', [{ code: '81078603', level: 'PreSeparateNPU', timeMs: T - 8000 }]),
  ],
  switchInfo: SWITCH, manuallySeparateNpu: ['Ascend910-3'], rackId: 2,
  upgradeFaultReason: { 'Ascend910-3': [{ upgrade_time: T - 7000, fault_code: '80E18402', fault_level: 'ManuallySeparateNPU', upgrade_type: 'FaultFrequency' }] },
});
const DEVICE_INFO_ZERO_SWITCH = encodeDeviceInfoData({ available: ['Ascend910-0'], updateTimeS: T / 1000, switchInfo: ZERO_SWITCH_INFO });
const NODE_INFO = encodeNodeInfoData({ faultDevList: [{ DeviceType: 'PSU', DeviceId: 1, FaultCode: ['0300000D'], FaultLevel: 'NotHandleFault' }, { DeviceType: 'CPU', DeviceId: 0, FaultCode: ['0000001D'], FaultLevel: 'PreSeparateFault' }], updateTimeMs: T });
const PUBLIC_FAULT = `{"id":"ccae-2026112100001","timestamp":${T},"version":"1.0","resource":"CCAE","faults":[{"faultId":"f-000000017","faultType":"NPU","faultCode":"220001001","faultTime":${T - 1000},"assertion":"occur","faultLocation":{"npuIp":"10.0.0.8"},"influence":[{"nodeName":"node-a01","nodeSN":"","deviceIds":[0,1]},{"nodeName":"","nodeSN":"SN-1","deviceIds":[2]}],"description":"optical module down"}]}`;
const MANUAL_INFO = '{"Total":["Ascend910-3","Ascend910-5"],"Detail":{"Ascend910-3":[{"FaultCode":"8C084E00","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":1732182000999}],"Ascend910-5":[{"FaultCode":"80E18005","FaultLevel":"ManuallySeparateNPU","LastSeparateTime":1732182100000}]}}';
const RESET_JSON = '{"RankList":[{"RankId":3,"LogicId":3,"Status":"unrecovered","Policy":"reset","InitialPolicy":"restart_request","ErrorCode":[2162169857,2160067593],"ErrorCodeHex":"80E01801,80C98009"}],"UpdateTime":1732182300,"RetryTime":2,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}';
const FAULT_NPUS = '{"FaultRank":[8,9,15],"UpdateTime":1732182200}';
const UID = '6f1c2e9a-0c7b-4a53-9e0e-2b1f8d7c4a11';
const KEY = `team-a/llama-pretrain-${UID}`;
const RESCHEDULE = `{"${KEY}":{"JobID":"${KEY}","TotalRescheduleTimes":2,"RescheduleRecords":[{"LogFileFormatTime":"I1121 10:03:20","RescheduleTimeStamp":1732183400,"ReasonOfTask":[{"RescheduleReason":"CardUnhealthy","PodName":"llama-pretrain-worker-3","NodeName":"node-a01","NodeRankIndex":"3"}]}]}}`;
const TOR = '{"10.0.0.1":{"IsHealthy":0,"IsSharedTor":1,"nodes":[{"NodeIp":"192.168.1.10","NodeName":"node-a01","JobName":["llama-pretrain"]}]},"10.0.0.2":{"IsHealthy":1,"IsSharedTor":2,"nodes":[]},"10.0.0.3":{"IsHealthy":0,"IsSharedTor":0,"nodes":null}}';
const REMAIN = `{"${KEY}":{"UUID":"${UID}","Times":2}}`;
const FAULT_NODE = '[{"FaultDeviceList":[{"fault_type":"CardUnhealthy","npu_name":"Ascend910-3","fault_level":"SeparateNPU","fault_handling":"SeparateNPU","large_model_fault_level":"SeparateNPU","fault_code":"80E18401,80E18402"}],"NodeName":"node-a01","UnhealthyNPU":["Ascend910-3"],"NetworkUnhealthyNPU":[],"NodeHealthState":"CardUnhealthy","UpdateTime":1732182160}]';
const JOB_STATE = '{"version":1,"jobKey":"team-a/llama-u1","jobUid":"u1","state":{"jobUid":"u1","generation":1,"retry":{"uid":"u1","times":2},"acted":["u1/g1/start/00aa"]}}';

/** Re-signs a device-info `data` whose DeviceInfoCfg still has a DeviceInfo object (a writer that signs garbage). */
function resignDeviceInfo(data: Record<string, string>): Record<string, string> {
  try {
    const cfg = JSON.parse(data['DeviceInfoCfg'] ?? '') as Record<string, unknown>;
    const info = cfg['DeviceInfo'] as { DeviceList: Record<string, string>; UpdateTime: number };
    if (info === null || typeof info !== 'object') return data;
    cfg['CheckCode'] = deviceInfoCheckCode(info);
    return { ...data, DeviceInfoCfg: JSON.stringify(cfg) };
  } catch {
    return data; // not resignable (not JSON, or a value go-json refuses): left as mutated
  }
}
function resignNodeInfo(data: Record<string, string>): Record<string, string> {
  try {
    const cm = JSON.parse(data['NodeInfo'] ?? '') as Record<string, unknown>;
    if (cm['NodeInfo'] === null || typeof cm['NodeInfo'] !== 'object') return data;
    cm['CheckCode'] = nodeInfoCheckCode(cm['NodeInfo'] as NodeInfo);
    return { ...data, NodeInfo: JSON.stringify(cm) };
  } catch {
    return data;
  }
}
const sha = (s: string | undefined): string => createHash('sha256').update(s ?? '').digest('hex');

/** What Volcano reads of one node's device-info/node-info: every cluster-info value, strictly parsed. */
function clusterInfoOf(store: FaultStore): string[] {
  const view = renderClusterInfo(store, (n) => store.records(n), NOW);
  const out: Array<[ClusterInfoKind, string]> = [['device', encodeClusterInfo(view.device)], ['switch', encodeClusterInfo(view.switch)], ['node', encodeClusterInfo(view.node)]];
  for (const [kind, text] of out) {
    const p = parseClusterInfo(kind, text);
    if (!p.ok) throw new Error(`cluster-info ${kind} we would write is refused: ${p.reason}\n${text.slice(0, 300)}`);
    expect(encodeClusterInfo(p.value)).toBe(text);
  }
  return out.map(([, t]) => t);
}

/** Every string the device-info parse result re-encodes to (the node-side format and cluster-info). */
/**
 * Our re-encoding of an accepted device-info. The DeviceInfoCfg keeps the device plugin's DeviceList
 * strings byte for byte (its CheckCode covers them; we never write device-info, we only read it), so
 * only its outer text is held to the Go rules; the fault list as we re-encode it is checked in full,
 * and so is everything that reaches cluster-info (clusterInfoOf).
 */
function deviceInfoOutputs(d: DeviceInfoData): string[] {
  const sw = d.switchInfo?.ok === true ? [encodeSwitchInfo(d.switchInfo.value.info)] : [];
  const cfg = encodeDeviceInfoCfg(d.cfg);
  const outer = goRuleViolation(cfg, '$DeviceInfoCfg', false);
  if (outer !== undefined) throw new Error(`${outer}\nin ${cfg.slice(0, 300)}`);
  return [encodeDeviceFaultList(d.lists.faults), encodeUpgradeFaultReason(d.upgradeFaultReason), ...sw];
}

describe('device-info (kube-system/mindx-dl-deviceinfo-<node>, incl. SwitchInfoCfg)', () => {
  const cm = (data: Record<string, string>): ConfigMap => ({ metadata: { name: deviceInfoCmName('fuzz-node'), namespace: 'kube-system', labels: { ...DEVICE_INFO_LABELS } }, data });
  const check = (data: Record<string, string>): void => {
    const p = parseDeviceInfoData(data, NOW);
    count('device-info', p.ok);
    count('device-info SwitchInfoCfg', p.ok && p.value.switchInfo?.ok === true);
    const store = new FaultStore();
    // The store runs the same parse: it must agree, and never throw on what the parser took.
    const rej = store.applyDeviceInfo(cm(data), NOW);
    expect(rej === undefined).toBe(p.ok);
    if (!p.ok) return;
    goClean(clusterInfoOf(store));
    goClean(deviceInfoOutputs(p.value));
    // Our own re-encoding of the accepted parts is accepted again (CheckCode recomputed by the encoder).
    const l = p.value.lists;
    const again = parseDeviceInfoData(encodeDeviceInfoData({
      prefix: l.prefix, available: l.available, unhealthy: l.unhealthy, networkUnhealthy: l.networkUnhealthy, recovering: l.recovering, faults: l.faults,
      updateTimeS: p.value.cfg.DeviceInfo.UpdateTime, superPodId: p.value.cfg.SuperPodID, serverIndex: p.value.cfg.ServerIndex, rackId: p.value.cfg.RackID,
      manuallySeparateNpu: p.value.manuallySeparateNpu, upgradeFaultReason: p.value.upgradeFaultReason,
      ...(p.value.switchInfo?.ok === true ? { switchInfo: p.value.switchInfo.value.info } : {}),
    }), NOW);
    if (!again.ok) throw new Error(`our own device-info is refused: ${again.reason}`);
    expect(again.value.switchInfo?.ok ?? true).toBe(true);
  };

  it('fixtures are accepted', () => {
    for (const d of [DEVICE_INFO, DEVICE_INFO_ZERO_SWITCH]) {
      expect(parseDeviceInfoData(d, NOW)).toMatchObject({ ok: true, value: { switchInfo: { ok: true } } });
      check(d);
    }
  });
  it('mutated (and re-signed) device-info never throws; what is accepted reaches cluster-info Go-clean', () => {
    fc.assert(fc.property(fc.constantFrom(DEVICE_INFO, DEVICE_INFO_ZERO_SWITCH), mutationPlan, fc.boolean(), (d, plan, resign) => {
      const m = mutateData(d, plan);
      check(resign ? resignDeviceInfo(m) : m);
    }), runs);
  });
  it('random data maps never throw', () => {
    fc.assert(fc.property(fc.dictionary(fc.constantFrom('DeviceInfoCfg', 'SwitchInfoCfg', 'ManuallySeparateNPU', 'UpgradeFaultReason', 'x'), randomText), (d) => check(resignDeviceInfo(d))), runs);
  });
  it('a 1e21 UpdateTime, signed, is refused as out_of_range', () => {
    const cfg = JSON.parse(DEVICE_INFO['DeviceInfoCfg']!) as { DeviceInfo: { UpdateTime: number } };
    cfg.DeviceInfo.UpdateTime = 1e21;
    const p = parseDeviceInfoData(resignDeviceInfo({ ...DEVICE_INFO, DeviceInfoCfg: JSON.stringify(cfg) }), NOW);
    expect(p).toMatchObject({ ok: false, kind: 'out_of_range' });
  });
});

textFormat({
  name: 'device-info <P>-Fault list',
  fixtures: [parseDeviceInfoData(DEVICE_INFO, NOW).ok ? JSON.parse(DEVICE_INFO['DeviceInfoCfg']!).DeviceInfo.DeviceList['huawei.com/Ascend910-Fault'] as string : ''],
  parse: (t) => { const p = parseDeviceFaultList(t, NOW); return p.ok ? { ok: true, value: p.value.value } : p; },
  encode: encodeDeviceFaultList,
});

textFormat({
  name: 'SwitchInfoCfg',
  fixtures: [DEVICE_INFO['SwitchInfoCfg']!, DEVICE_INFO_ZERO_SWITCH['SwitchInfoCfg']!],
  parse: (t) => { const p = parseSwitchInfo(t, NOW); return p.ok ? { ok: true, value: p.value.info } : p; },
  encode: encodeSwitchInfo,
});

describe('node-info (mindx-dl/mindx-dl-nodeinfo-<node>)', () => {
  const cm = (data: Record<string, string>): ConfigMap => ({ metadata: { name: nodeInfoCmName('fuzz-node'), namespace: 'mindx-dl', labels: { ...NODE_INFO_LABELS } }, data });
  const check = (data: Record<string, string>): void => {
    const p = parseNodeInfoData(data);
    count('node-info', p.ok);
    const store = new FaultStore();
    expect(store.applyNodeInfo(cm(data), NOW) === undefined).toBe(p.ok);
    if (!p.ok) return;
    goClean([encodeNodeInfoCm(p.value.cm), ...clusterInfoOf(store)]);
  };
  it('fixture is accepted', () => {
    expect(parseNodeInfoData(NODE_INFO)).toMatchObject({ ok: true });
    check(NODE_INFO);
  });
  it('mutated (and re-signed) node-info never throws; what is accepted reaches cluster-info-node-cm Go-clean', () => {
    fc.assert(fc.property(mutationPlan, fc.boolean(), (plan, resign) => {
      const m = mutateData(NODE_INFO, plan);
      check(resign ? resignNodeInfo(m) : m);
    }), runs);
  });
});

textFormat({ name: 'public-fault', fixtures: [PUBLIC_FAULT], parse: (t) => parsePublicFault(t), encode: encodePublicFault });
describe('public-fault ConfigMap data', () => {
  it('never throws', () => {
    fc.assert(fc.property(mutationPlan, (plan) => { count('public-fault data', parsePublicFaultData(mutateData({ PublicFault: PUBLIC_FAULT }, plan)).ok); }), runs);
  });
});
textFormat({ name: 'faultCode.json', fixtures: [encodeFaultCode(DEFAULT_FAULT_CODE_CONFIG)], parse: parseFaultCode, encode: encodeFaultCode });
textFormat({
  name: 'faultCustomization.json',
  fixtures: [encodeFaultCustomization(DEFAULT_FAULT_CUSTOMIZATION)],
  parse: (t) => ({ ok: true, value: parseFaultCustomization(t).config }),
  encode: encodeFaultCustomization,
});
textFormat({ name: 'manual-info', fixtures: [MANUAL_INFO], parse: parseManualInfo, encode: encodeManualInfo });
textFormat({ name: 'reset.json', fixtures: [RESET_JSON], parse: parseTaskResetInfo, encode: encodeTaskResetInfo });
textFormat({ name: 'fault-npus', fixtures: [FAULT_NPUS], parse: parseTaskFaultInfo, encode: encodeTaskFaultInfo });
textFormat({ name: 'job-state', fixtures: [JOB_STATE], parse: parseJobState, encode: encodeJobState });
textFormat({ name: 'escalation-state', fixtures: [escalationText(encodeEscalationState(emptyEscalationStateDoc(NOW)))], parse: parseEscalationState, encode: (d) => escalationText(encodeEscalationState(d)) });
textFormat({ name: 'vcjob-fault-npu fault-node', fixtures: [FAULT_NODE], parse: parseFaultNodes, encode: encodeFaultNodes });
textFormat({ name: 'vcjob-fault-npu remain-retry-times', fixtures: [REMAIN], parse: parseRemainRetryTimes, encode: encodeRemainRetryTimes });
textFormat({ name: 'tor-share global-tor-info', fixtures: [TOR], parse: parseGlobalTorInfo, encode: encodeGlobalTorInfo });
textFormat({ name: 'job-reschedule-reason', fixtures: [RESCHEDULE], parse: parseRescheduleHistory, encode: encodeRescheduleHistory });
textFormat({ name: 'manually_separate_policy.conf (YAML)', fixtures: [encodeManualSeparatePolicy(DEFAULT_MANUAL_SEPARATE_POLICY)], parse: parseManualSeparatePolicy, encode: encodeManualSeparatePolicy, notJson: true });
for (const kind of ['device', 'switch', 'node'] as const) {
  const fixture = (() => {
    const store = new FaultStore();
    store.applyDeviceInfo({ metadata: { name: deviceInfoCmName('a'), namespace: 'kube-system' }, data: DEVICE_INFO }, NOW);
    store.applyNodeInfo({ metadata: { name: nodeInfoCmName('a'), namespace: 'mindx-dl' }, data: NODE_INFO }, NOW);
    return encodeClusterInfo(renderClusterInfo(store, (n) => store.records(n), NOW)[kind]);
  })();
  textFormat({ name: `cluster-info ${kind}`, fixtures: [fixture], parse: (t) => parseClusterInfo(kind, t), encode: encodeClusterInfo });
}

describe('ConfigMap data formats with a checkCode', () => {
  const dataCases = [
    { name: 'reset-config data', fixture: encodeResetConfigData(JSON.parse(RESET_JSON)), key: 'reset.json',
      run: (d: Record<string, string>) => { const p = parseResetConfigData(d); if (p.ok) goClean([encodeResetConfigData(p.value.info, d)['reset.json']!]); return p.ok; } },
    { name: 'fault-config data', fixture: encodeFaultConfigData(JSON.parse(FAULT_NPUS)), key: 'fault-npus',
      run: (d: Record<string, string>) => { const p = parseFaultConfigData(d); if (p.ok) goClean([encodeFaultConfigData(p.value.info, d)['fault-npus']!]); return p.ok; } },
  ];
  it.each(dataCases)('$name: mutated (and re-signed) data never throws; accepted data re-encodes Go-clean', ({ name, fixture, key, run }) => {
    expect(run(fixture)).toBe(true);
    fc.assert(fc.property(mutationPlan, fc.boolean(), (plan, resign) => {
      const m = mutateData(fixture, plan);
      count(name, run(resign ? { ...m, checkCode: sha(m[key]) } : m));
    }), runs);
  });
  it('vcjob-fault-npu-cm and manual-info data never throw; accepted data re-encodes Go-clean', () => {
    const vc = encodeVcjobFaultNpuData({ faultNodes: must(parseFaultNodes(FAULT_NODE)), remainRetryTimes: must(parseRemainRetryTimes(REMAIN)) });
    fc.assert(fc.property(mutationPlan, (plan) => {
      const p = parseVcjobFaultNpuData(mutateData(vc, plan));
      count('vcjob-fault-npu data', p.ok);
      if (p.ok) goClean(Object.values(encodeVcjobFaultNpuData(p.value)));  // only our two JSON keys
    }), runs);
    const mi = encodeManualInfoData({ 'node-a01': must(parseManualInfo(MANUAL_INFO)) });
    fc.assert(fc.property(mutationPlan, (plan) => {
      const p = parseManualInfoData(mutateData(mi, plan));
      count('manual-info data', p.ok);
      if (p.ok) goClean(Object.values(encodeManualInfoData(p.value)));
    }), runs);
  });
});

describe('read-only formats (no encoder): never throw', () => {
  it('mindx-dl-fault-config data (faultCode.json, faultCustomization.json, SwitchFaultCode.json, PollInterval)', () => {
    const data = { 'faultCode.json': encodeFaultCode(DEFAULT_FAULT_CODE_CONFIG), 'faultCustomization.json': encodeFaultCustomization(DEFAULT_FAULT_CUSTOMIZATION), 'SwitchFaultCode.json': '{"NotHandleFaultCodes":["[0x08520003,na,L2,na]"]}', PollInterval: '5' };
    fc.assert(fc.property(mutationPlan, (plan) => { count('fault-config-cm', parseFaultConfigCm(mutateData(data, plan)).pollIntervalSec > 0); }), runs);
  });
  it('SwitchFaultCode.json and publicFaultConfiguration.json', () => {
    fc.assert(fc.property(mutationPlan, randomText, (plan, text) => {
      count('SwitchFaultCode.json', parseSwitchFaultCode(mutateText('{"NotHandleFaultCodes":["[0x08520003,na,L2,na]"],"SeparateFaultCodes":[]}', plan)).ok);
      count('publicFaultConfiguration.json', parsePublicFaultConfig(mutateText('{"publicFaultCode":{"SeparateNPUCodes":["220001001"]},"publicFaultResource":["CCAE"]}', plan)).ok);
      parseSwitchFaultCode(text);
      parsePublicFaultConfig(text);
    }), runs);
  });
  it('job knobs (PodGroup labels and annotations)', () => {
    const map = fc.dictionary(fc.oneof(fc.constantFrom('fault-scheduling', 'process-recover-enable', 'pod-rescheduling', 'fault-retry-times', 'huawei.com/schedule.filter.faultCode', 'huawei.com/schedule.filter.faultLevel', 'recover-strategy', 'subHealthyStrategy'), fc.string()), randomText);
    fc.assert(fc.property(map, map, (l, a) => { count('job-knobs', parseJobKnobs(l, a).warnings.length === 0); }), runs);
  });
});

it('goJson refuses what the Go rules refuse (the fuzz oracle agrees with the encoder)', () => {
  fc.assert(fc.property(fc.oneof(fc.double(), fc.integer(), fc.constant(1e21)), (n) => {
    let text: string | undefined;
    try {
      text = goJson({ n });
    } catch {
      text = undefined;
    }
    expect(text === undefined).toBe(!Number.isSafeInteger(n));
    if (text !== undefined) expect(goRuleViolation(text)).toBeUndefined();
  }), runs);
});
