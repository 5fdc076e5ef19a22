/** The comparison machinery itself: normalisation keeps what must match, the allow-list stays narrow. */
import { normalise, normaliseValue, sortFaultJobSdIds, sortFaultNodes, sortJobStatistic, sortPublicFaults } from './normalise.ts';
import { exchangeRecord } from './grpc-inputs.ts';
import { encodeResetConfigData } from '../../schemas/reset-config/reset-config.ts';
import { allowedBy, compare } from './diff.ts';
import { ALLOW_LIST } from './allow-list.ts';
import type { Snapshot } from './collect.ts';

const T0 = Date.UTC(2026, 10, 25, 10, 0, 0);
const window = { fromMs: T0, toMs: T0 + 300_000, inputs: new Set(['1795600800500']) };

describe('normalise', () => {
  test('clock times within the run become tokens, keeping their unit', () => {
    const s = Math.floor((T0 + 5000) / 1000);
    expect(normaliseValue(`{"UpdateTime":${s}}`, window)).toBe('{"UpdateTime":<unix-s>}');
    expect(normaliseValue(`{"UpdateTime":${T0 + 5000}}`, window)).toBe('{"UpdateTime":<unix-ms>}');
    expect(normaliseValue('2026-11-25T10:01:02Z', window)).toBe('<rfc3339>');
  });

  test('klog-style local times (the ascend plugin\'s LogFileFormatTime) within the run become a token; others stay', () => {
    const local = new Date(T0 + 65_000);
    const p = (n: number) => String(n).padStart(2, '0');
    const inRun = `I${p(local.getMonth() + 1)}${p(local.getDate())} ${p(local.getHours())}:${p(local.getMinutes())}:${p(local.getSeconds())}`;
    expect(normaliseValue(`{"LogFileFormatTime":"${inRun}"}`, window)).toBe('{"LogFileFormatTime":"<klog-time>"}');
    const hourLater = new Date(T0 + 3_600_000);
    const outside = `I${p(hourLater.getMonth() + 1)}${p(hourLater.getDate())} ${p(hourLater.getHours())}:${p(hourLater.getMinutes())}:00`;
    expect(normaliseValue(`{"LogFileFormatTime":"${outside}"}`, window)).toBe(`{"LogFileFormatTime":"${outside}"}`);
  });

  test('input millisecond times, times outside the run and other numbers stay as they are', () => {
    expect(normaliseValue('{"fault_time":1795600800500}', { ...window, inputs: new Set(['1795600800500']) })).toBe('{"fault_time":1795600800500}');
    expect(normaliseValue('{"UpdateTime":0,"x":1600000000,"ids":"Ascend910-1234567890"}', window)).toBe('{"UpdateTime":0,"x":1600000000,"ids":"Ascend910-1234567890"}');
  });
});

describe('statistic-fault-info order (rule 6)', () => {
  const a = '{"resource":"fd-online","devIds":[3],"faultId":"pubfault-0003"}';
  const b = '{"resource":"CCAE","devIds":[7],"faultId":"pubfault-0007"}';
  test('the two orders of a Go map compare equal', () => {
    expect(sortPublicFaults(`{"node-p":[${a},${b}]}`)).toBe(sortPublicFaults(`{"node-p":[${b},${a}]}`));
  });
  test('different entries, field order or escaping still differ', () => {
    expect(sortPublicFaults(`{"node-p":[${a}]}`)).not.toBe(sortPublicFaults(`{"node-p":[${b}]}`));
    expect(sortPublicFaults('{"node-p":[{"faultId":"x","resource":"r"}]}')).not.toBe(sortPublicFaults('{"node-p":[{"resource":"r","faultId":"x"}]}'));
    const escaped = '{"node-p":[{"resource":"\\u003c","faultId":"x"}]}';
    expect(sortPublicFaults(escaped)).toBe(escaped);
  });
  test('applied to statistic-fault-info only', () => {
    const other = `{"node-p":[${a},${b}]}`;
    const snap: Snapshot = new Map([['ConfigMap cluster-system/statistic-fault-info', { 'data PublicFaults': `{"node-p":[${a},${b}]}` }], ['ConfigMap x/y', { 'data PublicFaults': other }]]);
    const out = normalise(snap, window);
    expect(out.get('ConfigMap cluster-system/statistic-fault-info')!['data PublicFaults']).toBe(`{"node-p":[${b},${a}]}`);
    expect(out.get('ConfigMap x/y')!['data PublicFaults']).toBe(other);
  });
});

describe('vcjob-fault-npu-cm fault-node order (rule 8)', () => {
  const a = '{"NodeName":"node-a","UnhealthyNPU":["Ascend910-1"]}';
  const b = '{"NodeName":"node-b","UnhealthyNPU":["Ascend910-6"]}';
  test('the two orders of the plugin\'s Go map compare equal, in vcjob-fault-npu-cm only', () => {
    expect(sortFaultNodes(`[${b},${a}]`)).toBe(`[${a},${b}]`);
    const snap: Snapshot = new Map([['ConfigMap volcano-system/vcjob-fault-npu-cm', { 'data fault-node': `[${b},${a}]` }], ['ConfigMap x/y', { 'data fault-node': `[${b},${a}]` }]]);
    const out = normalise(snap, window);
    expect(out.get('ConfigMap volcano-system/vcjob-fault-npu-cm')!['data fault-node']).toBe(`[${a},${b}]`);
    expect(out.get('ConfigMap x/y')!['data fault-node']).toBe(`[${b},${a}]`);
  });
  test('different entries still differ', () => {
    expect(sortFaultNodes(`[${a}]`)).not.toBe(sortFaultNodes(`[${b}]`));
    expect(sortFaultNodes('[{"UnhealthyNPU":[],"NodeName":"n"}]')).not.toBe(sortFaultNodes('[{"NodeName":"n","UnhealthyNPU":[]}]'));
  });
});

describe('current-job-statistic order (rule 9)', () => {
  test('entries sort by the job their uid names on either cluster, and still compare as written', () => {
    const uidsA = new Map([['11111111-1111-4111-8111-111111111111', 'Job ns/b'], ['22222222-2222-4222-8222-222222222222', 'Job ns/a']]);
    const v = '[{"id":"11111111-1111-4111-8111-111111111111","cardNum":1},{"id":"22222222-2222-4222-8222-222222222222","cardNum":2}]';
    expect(sortJobStatistic(v, uidsA)).toBe('[{"id":"22222222-2222-4222-8222-222222222222","cardNum":2},{"id":"11111111-1111-4111-8111-111111111111","cardNum":1}]');
    expect(sortJobStatistic('[{"cardNum":1,"id":"x"}]', uidsA)).toBe('[{"cardNum":1,"id":"x"}]');
  });

  test('fault-job-info: each SuperPod\'s SdIds by number, the rest as written', () => {
    expect(sortFaultJobSdIds('{"0":{"SdIds":["17","9","16"],"FaultNodes":{"b":{}},"NodeNames":["a"]}}')).toBe('{"0":{"SdIds":["9","16","17"],"FaultNodes":{"b":{}},"NodeNames":["a"]}}');
    expect(sortFaultJobSdIds('{"0": {"SdIds":["2","1"]}}')).toBe('{"0": {"SdIds":["2","1"]}}');
  });
});

describe('compare and allow-list', () => {
  test('a field only one side has, or with other bytes, is a difference', () => {
    const a: Snapshot = new Map([['ConfigMap mindx-dl/x', { 'data k': 'v', exists: 'true' }]]);
    const b: Snapshot = new Map<string, Record<string, string>>([['ConfigMap mindx-dl/x', { 'data k': 'v ', exists: 'true' }], ['Node n', { 'taint k:NoSchedule': 'v' }]]);
    expect(compare(a, b)).toEqual([
      { object: 'ConfigMap mindx-dl/x', field: 'data k', clusterd: 'v', ours: 'v ' },
      { object: 'Node n', field: 'taint k:NoSchedule', clusterd: undefined, ours: 'v' },
    ]);
    expect(compare(a, new Map(a))).toEqual([]);
  });

  test('scheduling-exception-report: only jobType\'s two spellings of the same kind are allowed', () => {
    const e = (jobType: string, reason = 'JobEnqueueFailed') => JSON.stringify({ jobName: 'a5-roce', jobType, nameSpace: 'a5', conditions: { status: 'PodGroupPending', reason, message: 'm' } });
    const d = (clusterd: string, ours: string) => ({ object: 'ConfigMap cluster-system/scheduling-exception-report', field: 'data a5-roce.<uid of Job a5/a5-roce>', clusterd, ours });
    expect(allowedBy(d(e('batch.volcano.sh/v1alpha1, Kind=Job'), e('Job')), ALLOW_LIST)?.id).toBe('exception-job-type-first-sight');
    expect(allowedBy(d(e('AscendJob'), e('mindxdl.gitee.com/v1, Kind=AscendJob')), ALLOW_LIST)?.id).toBe('exception-job-type-first-sight');
    expect(allowedBy(d(e('batch.volcano.sh/v1alpha1, Kind=Job'), e('AscendJob')), ALLOW_LIST)).toBeUndefined();
    expect(allowedBy(d(e('batch.volcano.sh/v1alpha1, Kind=Job'), e('Job', 'other')), ALLOW_LIST)).toBeUndefined();
  });

  test('current-job-statistic: another order of the same entries is allowed, another entry is not', () => {
    const e = (job: string, extra = '') => `{"id":"<uid of Job a5/${job}>","cardNum":4,"podFirstRunTime":<unix-s>${extra}}`;
    const d = (clusterd: string, ours: string) => ({ object: 'ConfigMap mindx-dl/current-job-statistic', field: 'data data', clusterd, ours });
    expect(allowedBy(d(`[${e('b')},${e('a')}]`, `[${e('a')},${e('b')}]`), ALLOW_LIST)?.id).toBe('job-statistic-order');
    expect(allowedBy(d(`[${e('b')},${e('a')}]`, `[${e('a', ',"stopTime":<unix-s>')},${e('b')}]`), ALLOW_LIST)).toBeUndefined();
  });

  test('every allow-list entry names a flag and a reason, and none covers cluster-info or Nodes in general', () => {
    for (const a of ALLOW_LIST) {
      expect(a.flag).toMatch(/^--[a-z-]+=\S+$|^none yet$/);
      expect(a.why.length).toBeGreaterThan(20);
    }
    for (const object of ['ConfigMap mindx-dl/cluster-info-switch-0', 'ConfigMap mindx-dl/cluster-info-device-0', 'Node node-a', 'ConfigMap cluster-system/statistic-fault-info']) {
      expect(allowedBy({ object, field: 'data x', clusterd: 'a', ours: 'b' }, ALLOW_LIST, 'chip fault 80E18402 on node-a (Ascend910)')).toBeUndefined();
    }
  });
});

describe('normalisations of the gRPC exchange and reset-config', () => {
  test('uuids become numbered tokens that keep which signals share one, and their format', () => {
    const sig = (signalType: string, uuid: string) => ({ t: 0, event: 'signal' as const, signalType, uuid, actions: [], faultRanks: [{ rankId: '3', faultType: '0' }] });
    const a = exchangeRecord([sig('stopTrain', '18A-' + 'a'.repeat(32)), sig('globalFault', '18A-' + 'a'.repeat(32)), sig('preExitProcess', '18B-' + 'b'.repeat(32))]);
    const b = exchangeRecord([sig('stopTrain', '19C-' + 'c'.repeat(32)), sig('globalFault', '19D-' + 'd'.repeat(32)), sig('preExitProcess', '19E-' + 'e'.repeat(32))]);
    expect(a['signal 01']).toBe(b['signal 01']);
    expect(a['signal 02']).not.toBe(b['signal 02']); // one side reused the uuid, the other did not
    expect(exchangeRecord([sig('stopTrain', '')])['signal 01']).toContain('uuid=""');
    expect(exchangeRecord([sig('stopTrain', '1A-' + 'a'.repeat(16))])['signal 01']).toContain('<uuid 1, 16 hex>');
  });

  test('nodeRankIds compare as a set (ClusterD ranges over a Go map), other order still counts', () => {
    const sig = (nodeRankIds: string[], ranks: string[]) => ({ t: 0, event: 'signal' as const, signalType: 'globalFault', uuid: '', actions: [], nodeRankIds, faultRanks: ranks.map((rankId) => ({ rankId, faultType: '1' })) });
    expect(exchangeRecord([sig(['1', '0', '10', '2'], ['0', '3'])])['signal 01']).toBe(exchangeRecord([sig(['0', '2', '10', '1'], ['3', '0'])])['signal 01']);
    expect(exchangeRecord([sig(['1', '0', '10', '2'], [])])['signal 01']).toContain('nodeRankIds=[0 1 2 10]');
    expect(exchangeRecord([sig(['1', '0'], [])])['signal 01']).not.toBe(exchangeRecord([sig(['1', '1'], [])])['signal 01']);
  });

  test('reports and O&M events keep their order within a sequence, not across (concurrent handlers in the client)', () => {
    const report = (rpc: string, code = 0) => ({ t: 0, event: 'report' as const, rpc, code });
    const notify = { t: 0, event: 'switch-notify' as const, ranks: ['0'], ops: [true] };
    const result = (msg: string) => ({ t: 0, event: 'om-result' as const, rpc: 'SwitchNicTrack', msg });
    const a = exchangeRecord([report('ReportStopComplete'), notify, report('ReplySwitchNicResult'), result('switch nic finish')]);
    const b = exchangeRecord([notify, result('switch nic finish'), report('ReplySwitchNicResult'), report('ReportStopComplete')]);
    expect(a).toEqual(b);
    expect(a['report ReportStopComplete 01']).toBe('code 0');
    // Within one sequence order still counts.
    expect(exchangeRecord([report('ReportRecoverStatus', 0), report('ReportRecoverStatus', 1)])).not.toEqual(exchangeRecord([report('ReportRecoverStatus', 1), report('ReportRecoverStatus', 0)]));
    expect(exchangeRecord([result('a'), result('b')])).not.toEqual(exchangeRecord([result('b'), result('a')]));
  });

  test('a reset-config checkCode is a token only when it is the hash of its reset.json', () => {
    const info = { RankList: [], UpdateTime: Math.floor((T0 + 1000) / 1000), RetryTime: 0, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false };
    const data = encodeResetConfigData(info);
    const snap: Snapshot = new Map([['ConfigMap ns/reset-config-j', { 'data reset.json': data['reset.json']!, 'data checkCode': data.checkCode! }]]);
    expect(normalise(snap, window).get('ConfigMap ns/reset-config-j')!['data checkCode']).toBe('<checkCode of reset.json>');
    const bad: Snapshot = new Map([['ConfigMap ns/reset-config-j', { 'data reset.json': data['reset.json']!, 'data checkCode': 'f'.repeat(64) }]]);
    expect(normalise(bad, window).get('ConfigMap ns/reset-config-j')!['data checkCode']).toBe('f'.repeat(64));
  });
});
