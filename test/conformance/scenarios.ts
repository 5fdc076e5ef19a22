/**
 * The conformance scenarios: what the node agents write, step by step. Each step is compared on
 * both sides after it settles (runner.ts). Chip levels are the device plugin's own (faultCode.json
 * through tools/simulator/fault-codes.ts): ClusterD takes the level the device plugin reports.
 */
import { addChipCode, chipName, removeChipCodes } from '../../tools/simulator/npu-state.ts';
import { addSwitchFault, removeSwitchFaults } from '../../tools/simulator/switch-state.ts';
import { defaultChipLevel, defaultNetworkLevel, switchLevel } from '../../tools/simulator/fault-codes.ts';
import { encodePublicFault } from '../../schemas/public-fault/public-fault.ts';
import { PUBLIC_FAULT_LABELS } from '../../schemas/public-fault/public-fault.ts';
import { publicFaultPayload } from '../../tools/simulator/public-fault.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import { paths } from '../../runtime/kube-client.ts';
import type { Scenario } from './runner.ts';
import { MANUAL_SEPARATION } from './scenario-manual-separation.ts';
import { PUBLIC_FAULTS } from './scenario-public-faults.ts';
import { PINGMESH } from './scenario-pingmesh.ts';
import { configMap, readyPatch, type World, type Write } from './world.ts';
import { PROCESS_RECOVERY } from './scenario-process-recovery.ts';
import { NPU_JOB_SUMMARY } from './scenario-npu-job-summary.ts';
import { PROCESS_DUMP } from './scenario-process-dump.ts';
import { ELASTIC, SCALE_IN_AFTER_RECOVER, SCALE_IN_ANSWERED_0 } from './scenario-elastic.ts';
import { PROCESS_PLATFORM } from './scenario-process-platform.ts';
import { PROCESS_KILL_JOB } from './scenario-process-kill-job.ts';
import { PROCESS_RECOVER_IN_PLACE } from './scenario-process-recover-in-place.ts';
import { STRESS_TEST, STRESS_TEST_FAULT, SWITCH_NIC, SWITCH_NIC_FAIL } from './scenario-om.ts';
import { DATA_TRACE } from './scenario-data-trace.ts';
import { CONFIG_RANK_TABLE } from './scenario-config.ts';
import { JOB_SIGNALS } from './scenario-job-signals.ts';
import { FAULT_SERVICE } from './scenario-fault-service.ts';
import { HOT_SWITCH, HOT_SWITCH_STOP } from './scenario-hot-switch.ts';
import { INFERENCE_JOB } from './scenario-inference-job.ts';
import { DUMP_AFTER_RECOVER } from './scenario-dump-after-recover.ts';
import { SUBHEALTHY_DUMP } from './scenario-subhealthy-dump.ts';
import { FORCE_RELEASE } from './scenario-force-release.ts';
import { A3_SWITCH_CQE, PRESEPARATE_CHIP } from './scenario-a3.ts';

const chipFault = (w: World, node: string, npu: number, code: string, now: number): Write => {
  const s = w.node(node);
  addChipCode(s, chipName(s, npu), 'card', code, defaultChipLevel(code), now);
  return w.deviceInfo(node, now);
};
const networkFault = (w: World, node: string, npu: number, code: string, now: number): Write => {
  const s = w.node(node);
  addChipCode(s, chipName(s, npu), 'network', code, defaultNetworkLevel(code), now);
  return w.deviceInfo(node, now);
};
const recoverChip = (w: World, node: string, npu: number, kind: 'card' | 'network', now: number): Write => {
  const s = w.node(node);
  removeChipCodes(s, chipName(s, npu), kind);
  return w.deviceInfo(node, now);
};

const SWITCH_CODE = '[0x00f103b0,155904,na,na]';
const PUBLIC_FAULT_ID = 'conformance-public-0001';

/** Written where a sender writes: mindx-dl is a default --public-fault-namespaces entry (ClusterD reads every namespace). */
const publicFault = (node: string, npus: number[], assertion: 'occur' | 'recover', now: number): Write =>
  configMap('mindx-dl', 'public-fault-conformance', {
    PublicFault: encodePublicFault(publicFaultPayload({ code: '220001001', targets: [{ node, npus }], assertion, faultId: PUBLIC_FAULT_ID, timeMs: now }, now)),
  }, { ...PUBLIC_FAULT_LABELS });

/**
 * `kube-system/mindx-dl-fault-config` as a user writes it to re-level 80E18402 from SeparateNPU to
 * NotHandleFault: the device plugin's shipped faultCode.json with that one code moved. The device
 * plugin applies it when it next polls (default every 300 s); until then device-info still carries
 * SeparateNPU. ClusterD does not read this ConfigMap.
 */
function faultConfigRelevel(): Write {
  const table = JSON.parse(readFileSync(join(MINDCLUSTER_SRC, 'component', 'ascend-device-plugin', 'build', 'faultCode.json'), 'utf8')) as Record<string, string[]>;
  table.SeparateNPUCodes = (table.SeparateNPUCodes ?? []).filter((c) => c !== '80E18402');
  table.NotHandleFaultCodes = [...(table.NotHandleFaultCodes ?? []), '80E18402'];
  return configMap('kube-system', 'mindx-dl-fault-config', { 'faultCode.json': JSON.stringify(table, null, 2) });
}

/**
 * The inputs ClusterD reads from the node agents, one kind per node: chip faults under both
 * resource prefixes, a parameter-plane code held 30 s, A3 switch faults (the empty default
 * SwitchInfoCfg, a fault, its recovery), NodeD faults, a public fault, Node NotReady, a
 * mindx-dl-fault-config override, and a restart of the controller while faults are active.
 */
export const AGENT_FAULTS: Scenario = {
  name: 'agent-faults',
  nodes: [
    { name: 'node-a', prefix: 'huawei.com/Ascend910' },
    { name: 'node-b', prefix: 'huawei.com/npu' },
    { name: 'node-c', switchMode: 'zero', superPodId: 0, serverIndex: 0 },
    { name: 'node-d', switchMode: 'zero', superPodId: 0, serverIndex: 1 },
  ],
  setup: (w, now) => [...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]),
  steps: [
    { name: 'parameter-plane 81078603 on node-a chip 5', writes: (w, now) => [networkFault(w, 'node-a', 5, '81078603', now)] },
    { name: 'chip fault 80E18402 on node-a (Ascend910)', writes: (w, now) => [chipFault(w, 'node-a', 3, '80E18402', now)] },
    { name: 'chip fault 80E18402 on node-b (npu prefix)', writes: (w, now) => [chipFault(w, 'node-b', 2, '80E18402', now)] },
    {
      name: 'switch fault on node-d (A3)', writes: (w, now) => {
        addSwitchFault(w.node('node-d').switch, { code: SWITCH_CODE, level: switchLevel(SWITCH_CODE), timeMs: now });
        return [w.deviceInfo('node-d', now)];
      },
    },
    { name: 'NodeD fault 2C000031 on node-b', writes: (w, now) => [w.nodeInfo('node-b', [{ DeviceType: 'CPU', DeviceId: 0, FaultCode: ['2C000031'], FaultLevel: 'SeparateFault' }], now)] },
    { name: 'public fault 220001001 on node-c chips 0,1', writes: (_w, now) => [publicFault('node-c', [0, 1], 'occur', now)] },
    { name: 'node-c NotReady', writes: (_w, now) => [readyPatch('node-c', 'False', now)] },
    { name: 'mindx-dl-fault-config re-levels 80E18402 (device plugin not yet reloaded)', writes: () => [faultConfigRelevel()] },
    // 35 s without input: covers 81078603 held past 30 s, and shows which side rewrites what while
    // nothing happens (ClusterD's 5 s rewrites are no-ops; our 30 s refresh is not).
    { name: 'nothing written for 35 s', ms: 35_000 },
    { name: 'restart both controllers', restart: true },
    { name: 'mindx-dl-fault-config deleted', writes: () => [{ op: 'delete', path: paths.configMap('kube-system', 'mindx-dl-fault-config') }] },
    { name: 'recover 81078603 on node-a chip 5', writes: (w, now) => [recoverChip(w, 'node-a', 5, 'network', now)] },
    { name: 'recover chip fault on node-a', writes: (w, now) => [recoverChip(w, 'node-a', 3, 'card', now)] },
    { name: 'recover chip fault on node-b', writes: (w, now) => [recoverChip(w, 'node-b', 2, 'card', now)] },
    {
      name: 'switch fault recovered on node-d', writes: (w, now) => {
        removeSwitchFaults(w.node('node-d').switch);
        return [w.deviceInfo('node-d', now)];
      },
    },
    { name: 'NodeD fault recovered on node-b', writes: (w, now) => [w.nodeInfo('node-b', null, now)] },
    { name: 'public fault recovered', writes: (_w, now) => [publicFault('node-c', [0, 1], 'recover', now)] },
    { name: 'node-c Ready', writes: (_w, now) => [readyPatch('node-c', 'True', now)] },
  ],
};

export const SCENARIOS: readonly Scenario[] = [AGENT_FAULTS, MANUAL_SEPARATION, PROCESS_RECOVERY, PROCESS_DUMP, ELASTIC, SCALE_IN_AFTER_RECOVER, SCALE_IN_ANSWERED_0, PROCESS_KILL_JOB, PROCESS_RECOVER_IN_PLACE, PROCESS_PLATFORM, PUBLIC_FAULTS, STRESS_TEST, STRESS_TEST_FAULT, SWITCH_NIC, SWITCH_NIC_FAIL, DATA_TRACE, CONFIG_RANK_TABLE, JOB_SIGNALS, NPU_JOB_SUMMARY, FAULT_SERVICE, HOT_SWITCH, HOT_SWITCH_STOP, INFERENCE_JOB, DUMP_AFTER_RECOVER, SUBHEALTHY_DUMP, PINGMESH, FORCE_RELEASE, A3_SWITCH_CQE, PRESEPARATE_CHIP];
