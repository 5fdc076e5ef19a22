import { createHash } from 'node:crypto';
import { checkCode } from './check-code.ts';
import { goMap } from './go-json.ts';

// Golden vectors: sample ConfigMaps whose CheckCode was computed with the algorithm of docs/formats.md#check-code.
const DEVICE_INFO_CFG =
  '{"DeviceInfo":{"DeviceList":{"huawei.com/Ascend910":"Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-4,Ascend910-5,Ascend910-6,Ascend910-7","huawei.com/Ascend910-Fault":"[{\\"fault_type\\":\\"CardNetworkUnhealthy\\",\\"npu_name\\":\\"Ascend910-6\\",\\"large_model_fault_level\\":\\"PreSeparateNPU\\",\\"fault_level\\":\\"PreSeparateNPU\\",\\"fault_handling\\":\\"PreSeparateNPU\\",\\"fault_code\\":\\"81078603\\",\\"fault_time_and_level_map\\":{\\"81078603\\":{\\"fault_time\\":1732182100456,\\"fault_level\\":\\"PreSeparateNPU\\"}}},{\\"fault_type\\":\\"CardUnhealthy\\",\\"npu_name\\":\\"Ascend910-3\\",\\"large_model_fault_level\\":\\"SeparateNPU\\",\\"fault_level\\":\\"SeparateNPU\\",\\"fault_handling\\":\\"SeparateNPU\\",\\"fault_code\\":\\"80E18402,80E18401\\",\\"fault_time_and_level_map\\":{\\"80E18401\\":{\\"fault_time\\":1732182000123,\\"fault_level\\":\\"NotHandleFault\\"},\\"80E18402\\":{\\"fault_time\\":1732182000123,\\"fault_level\\":\\"SeparateNPU\\"}}}]","huawei.com/Ascend910-NetworkUnhealthy":"Ascend910-6","huawei.com/Ascend910-Recovering":"","huawei.com/Ascend910-Unhealthy":"Ascend910-3"},"UpdateTime":1732182160},"SuperPodID":-1,"ServerIndex":-1,"CheckCode":"98343e94aec932ed51a83d7c8ded1aad17112709a96528e59791617b59cfcd2b"}';
const NODE_INFO =
  '{"NodeInfo":{"FaultDevList":[{"DeviceType":"PSU","DeviceId":1,"FaultCode":["0300000D"],"FaultLevel":"NotHandleFault"},{"DeviceType":"CPU","DeviceId":0,"FaultCode":["0000001D"],"FaultLevel":"PreSeparateFault"}],"NodeStatus":"PreSeparate"},"CheckCode":"35f048680f6a6c4a3a58316dc31efc5b3a5b8ec919c6e058608306854c41aad5"}';
const RESET_INITIAL =
  '{"RankList":[],"UpdateTime":1732180000,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}';
const RESET_FAULT =
  '{"RankList":[{"RankId":8,"LogicId":0,"Status":"fault","Policy":"","InitialPolicy":"","ErrorCode":null,"ErrorCodeHex":""},{"RankId":9,"LogicId":0,"Status":"fault","Policy":"","InitialPolicy":"","ErrorCode":null,"ErrorCodeHex":""}],"UpdateTime":1732182200,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":true}';

interface RankJson {
  RankId: number; LogicId: number; Status: string; Policy: string; InitialPolicy: string;
  ErrorCode: number[] | null; ErrorCodeHex: string;
}
interface ResetJson {
  RankList: RankJson[]; UpdateTime: number; RetryTime: number; FaultFlushing: boolean;
  GracefulExit: number; RestartFaultProcess: boolean;
}

/** Rebuild TaskResetInfo in Go declaration order from parsed JSON (so key order is ours, not the input's). */
const resetInGoOrder = (r: ResetJson): unknown => ({
  RankList: r.RankList.map((k) => ({
    RankId: k.RankId, LogicId: k.LogicId, Status: k.Status, Policy: k.Policy,
    InitialPolicy: k.InitialPolicy, ErrorCode: k.ErrorCode, ErrorCodeHex: k.ErrorCodeHex,
  })),
  UpdateTime: r.UpdateTime, RetryTime: r.RetryTime, FaultFlushing: r.FaultFlushing,
  GracefulExit: r.GracefulExit, RestartFaultProcess: r.RestartFaultProcess,
});

describe('checkCode golden vectors (docs/formats.md#check-code)', () => {
  it('device-info 1.1: hash of the inner DeviceInfo {DeviceList (map), UpdateTime}', () => {
    const cm = JSON.parse(DEVICE_INFO_CFG) as {
      DeviceInfo: { UpdateTime: number; DeviceList: Record<string, string> };
      CheckCode: string;
    };
    // Deliberately build the fields in reverse order to prove the Go order is imposed by us.
    const list = Object.fromEntries(Object.entries(cm.DeviceInfo.DeviceList).reverse());
    const inner = { DeviceList: goMap(list), UpdateTime: cm.DeviceInfo.UpdateTime };
    expect(checkCode(inner)).toBe('98343e94aec932ed51a83d7c8ded1aad17112709a96528e59791617b59cfcd2b');
    expect(checkCode(inner)).toBe(cm.CheckCode);
  });

  it('node-info 1.2: hash of the inner NodeInfo {FaultDevList, NodeStatus}', () => {
    const cm = JSON.parse(NODE_INFO) as {
      NodeInfo: { FaultDevList: Array<{ DeviceType: string; DeviceId: number; FaultCode: string[]; FaultLevel: string }>; NodeStatus: string };
    };
    const inner = {
      FaultDevList: cm.NodeInfo.FaultDevList.map((d) => ({
        DeviceType: d.DeviceType, DeviceId: d.DeviceId, FaultCode: d.FaultCode, FaultLevel: d.FaultLevel,
      })),
      NodeStatus: cm.NodeInfo.NodeStatus,
    };
    expect(checkCode(inner)).toBe('35f048680f6a6c4a3a58316dc31efc5b3a5b8ec919c6e058608306854c41aad5');
  });

  it('reset.json 3.2 initial CM', () => {
    expect(checkCode(resetInGoOrder(JSON.parse(RESET_INITIAL) as ResetJson)))
      .toBe('c22a7c8962c1619c94f593ef948e7dab69c28a2e32eeda4e3725816eb4245ade');
  });

  it('reset.json 3.2 after a fault notification (nil ErrorCode stays null)', () => {
    expect(checkCode(resetInGoOrder(JSON.parse(RESET_FAULT) as ResetJson)))
      .toBe('8e44dcc2065e8dc79e85297bc4dfa68b7be65129e27ffa45fa1b2b90e55b0077');
  });

  it('is lowercase hex sha256 and sensitive to Go-only details (map order, HTML escaping)', () => {
    expect(checkCode({})).toBe('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
    expect(checkCode(goMap({ b: 1, a: 2 }))).toBe(checkCode({ a: 2, b: 1 }));
    expect(checkCode({ b: 1, a: 2 })).not.toBe(checkCode({ a: 2, b: 1 }));
    expect(checkCode('<&>')).toBe(createHash('sha256').update('"\\u003c\\u0026\\u003e"').digest('hex'));
  });
});
