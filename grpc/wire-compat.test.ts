/**
 * Wire compatibility, proved without our .proto files: messages are built with protobufjs from a
 * field-number table written here from docs/grpc.md#recover-service, #fault-service, #pubfault-service, sent as raw bytes to the real server on a real
 * socket, and compared with what the handlers received (and vice versa for replies and streams).
 */
import { Client, credentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { processManageSignal } from './messages.ts';
import { loadClusterdServices } from './protos.ts';
import { eventually } from './stub-handlers.ts';
import { startStubServer, type StubServer } from './testing.ts';

type FieldSpec = [name: string, id: number, type: string, rule?: 'repeated' | 'packed' | 'unpacked' | `map<${string}>`];
const TABLE: Record<string, FieldSpec[]> = {
  ClientInfo: [['jobId', 1, 'string'], ['role', 2, 'string']],
  Status: [['code', 1, 'int32'], ['info', 2, 'string']],
  FaultRank: [['rankId', 1, 'string'], ['faultType', 2, 'string']],
  ProcessManageSignal: [
    ['uuid', 1, 'string'], ['jobId', 2, 'string'], ['signalType', 3, 'string'], ['actions', 4, 'string', 'repeated'],
    ['faultRanks', 5, 'FaultRank', 'repeated'], ['changeStrategy', 6, 'string'], ['timeout', 7, 'int64'],
    ['nodeRankIds', 8, 'string', 'repeated'], ['extraParams', 9, 'string'],
  ],
  StopCompleteRequest: [['jobId', 1, 'string'], ['status', 2, 'Status'], ['faultRanks', 3, 'FaultRank', 'repeated']],
  RecoverStrategyRequest: [['jobId', 1, 'string'], ['faultRanks', 2, 'FaultRank', 'repeated'], ['strategies', 3, 'string', 'repeated']],
  RecoverStatusRequest: [['jobId', 1, 'string'], ['status', 2, 'Status'], ['strategy', 3, 'string'], ['isolateRankIds', 4, 'string', 'repeated']],
  ProcessFaultRequest: [['jobId', 1, 'string'], ['faultRanks', 2, 'FaultRank', 'repeated']],
  FaultQueryResult: [['code', 1, 'int32'], ['info', 2, 'string'], ['faultSignal', 3, 'FaultMsgSignal']],
  FaultMsgSignal: [['uuid', 1, 'string'], ['jobId', 2, 'string'], ['signalType', 3, 'string'], ['nodeFaultInfo', 4, 'NodeFaultInfo', 'repeated']],
  NodeFaultInfo: [['nodeName', 1, 'string'], ['nodeIP', 2, 'string'], ['nodeSN', 3, 'string'], ['faultLevel', 4, 'string'], ['faultDevice', 5, 'DeviceFaultInfo', 'repeated']],
  DeviceFaultInfo: [
    ['deviceId', 1, 'string'], ['deviceType', 2, 'string'], ['faultCodes', 3, 'string', 'repeated'], ['faultLevel', 4, 'string'],
    ['faultType', 5, 'string', 'repeated'], ['faultReason', 6, 'string', 'repeated'], ['switchFaultInfos', 7, 'SwitchFaultInfo', 'repeated'],
    ['faultLevels', 8, 'string', 'repeated'],
  ],
  SwitchFaultInfo: [['faultCode', 1, 'string'], ['switchChipId', 2, 'string'], ['switchPortId', 3, 'string'], ['faultTime', 4, 'string'], ['faultLevel', 5, 'string']],
  PublicFaultRequest: [['id', 1, 'string'], ['timestamp', 2, 'int64'], ['version', 3, 'string'], ['resource', 4, 'string'], ['faults', 5, 'PubFault', 'repeated']],
  PubFault: [
    ['faultId', 1, 'string'], ['faultType', 2, 'string'], ['faultCode', 3, 'string'], ['faultTime', 4, 'int64'], ['assertion', 5, 'string'],
    ['faultLocation', 6, 'string', 'map<string>'], ['influence', 7, 'PubFaultInfo', 'repeated'], ['description', 8, 'string'],
  ],
  PubFaultInfo: [['nodeName', 1, 'string'], ['nodeSN', 2, 'string'], ['deviceIds', 3, 'int32', 'packed']],
  PubFaultInfoUnpacked: [['nodeName', 1, 'string'], ['nodeSN', 2, 'string'], ['deviceIds', 3, 'int32', 'unpacked']],
  PublicFaultRequestUnpacked: [['id', 1, 'string'], ['timestamp', 2, 'int64'], ['version', 3, 'string'], ['resource', 4, 'string'], ['faults', 5, 'PubFaultUnpacked', 'repeated']],
  PubFaultUnpacked: [
    ['faultId', 1, 'string'], ['faultType', 2, 'string'], ['faultCode', 3, 'string'], ['faultTime', 4, 'int64'], ['assertion', 5, 'string'],
    ['faultLocation', 6, 'string', 'map<string>'], ['influence', 7, 'PubFaultInfoUnpacked', 'repeated'], ['description', 8, 'string'],
  ],
};

const root = new protobuf.Root();
for (const [name, fields] of Object.entries(TABLE)) {
  const type = new protobuf.Type(name);
  for (const [field, id, t, rule] of fields) {
    if (rule?.startsWith('map<')) type.add(new protobuf.MapField(field, id, rule.slice(4, -1), t));
    else if (rule === 'packed' || rule === 'unpacked') type.add(new protobuf.Field(field, id, t, 'repeated', undefined, { packed: rule === 'packed' }));
    else type.add(new protobuf.Field(field, id, t, rule));
  }
  root.add(type);
}
root.resolveAll();
const encode = (type: string, value: object): Buffer => {
  const t = root.lookupType(type);
  return Buffer.from(t.encode(t.fromObject(value)).finish());
};
const decode = (type: string, bytes: Buffer): Record<string, unknown> => {
  const t = root.lookupType(type);
  return t.toObject(t.decode(bytes), { longs: Number, defaults: true, arrays: true, objects: true });
};

const JOB = '5e6f7a8b-aaaa-bbbb-cccc-0123456789ab';
const ranks = [{ rankId: '8', faultType: '1' }, { rankId: '15', faultType: '2' }];

describe('wire compatibility with TaskD / NodeD clients', () => {
  let t: StubServer;
  let raw: Client;
  beforeAll(async () => {
    t = await startStubServer({ limits: { keepAliveSignalMs: 60_000 } }, [JOB]);
    raw = new Client(t.server.address, credentials.createInsecure());
  });
  afterAll(async () => {
    raw.close();
    await t.close();
  });

  const send = (path: string, bytes: Buffer): Promise<Buffer> =>
    new Promise((resolve, reject) =>
      raw.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, bytes, (err, res) => (err || !res ? reject(err) : resolve(res))),
    );

  it('the test encoder follows the table: ClientInfo{jobId:"a", role:"b"} = 0a 01 61 12 01 62', () => {
    expect(encode('ClientInfo', { jobId: 'a', role: 'b' }).toString('hex')).toBe('0a0161120162');
  });

  it('service paths: Recover and PubFault have no package, Fault is fault.Fault', () => {
    const s = loadClusterdServices();
    expect(Object.values(s.recover).map((m) => m.path)).toEqual(
      ['Init', 'Register', 'SubscribeProcessManageSignal', 'ReportStopComplete', 'ReportRecoverStrategy', 'ReportRecoverStatus',
        'ReportProcessFault', 'SwitchNicTrack', 'SubscribeSwitchNicSignal', 'SubscribeNotifySwitch', 'ReplySwitchNicResult',
        'HealthCheck', 'StressTest', 'SubscribeStressTestResponse', 'SubscribeNotifyExecStressTest', 'ReplyStressTestResult'].map((m) => `/Recover/${m}`),
    );
    expect(Object.values(s.fault).map((m) => m.path)).toEqual(['Register', 'SubscribeFaultMsgSignal', 'GetFaultMsgSignal'].map((m) => `/fault.Fault/${m}`));
    expect(Object.values(s.pubFault).map((m) => m.path)).toEqual(['/PubFault/SendPublicFault']);
    expect(Object.values(s.job).map((m) => m.path)).toEqual(['Register', 'SubscribeJobSummarySignal', 'SubscribeJobSummarySignalList'].map((m) => `/job.Job/${m}`));
    expect(Object.values(s.config).map((m) => m.path)).toEqual(['/config.Config/Register', '/config.Config/SubscribeRankTable']);
    expect(Object.values(s.trainingDataTrace).map((m) => m.path)).toEqual(
      ['ModifyTrainingDataTraceSwitch', 'GetTrainingDataTraceSwitch', 'SubscribeDataTraceSwitch'].map((m) => `/TrainingDataTrace/${m}`),
    );
  });

  it('the server answers on the packageless paths and not on packaged ones', async () => {
    const hc = encode('ClientInfo', { jobId: JOB, role: 'taskd' });
    expect(decode('Status', await send('/Recover/HealthCheck', hc))).toEqual({ code: 0, info: `jobId=${JOB}, receive HeathCheck` });
    for (const wrong of ['/recover.Recover/HealthCheck', '/pb.Recover/HealthCheck', '/Fault/Register', '/pubfault.PubFault/SendPublicFault']) {
      await expect(send(wrong, hc)).rejects.toMatchObject({ code: GrpcStatus.UNIMPLEMENTED } satisfies Partial<ServiceError>);
    }
  });

  it('bytes that are not a valid message are refused (INTERNAL) and the server keeps serving', async () => {
    await expect(send('/Recover/Init', Buffer.from([0x0a, 0xff, 0xff, 0xff]))).rejects.toMatchObject({ code: GrpcStatus.INTERNAL });
    await expect(send('/PubFault/SendPublicFault', Buffer.from([0x2a, 0x05, 0x22]))).rejects.toMatchObject({ code: GrpcStatus.INTERNAL });
    const hc = decode('Status', await send('/Recover/HealthCheck', encode('ClientInfo', { jobId: JOB, role: 'taskd' })));
    expect(hc.code).toBe(0);
  });

  it('Recover requests decode field by field into what the handlers see', async () => {
    const init = decode('Status', await send('/Recover/Init', encode('ClientInfo', { jobId: JOB, role: 'taskd' })));
    expect(init).toEqual({ code: 0, info: `job(uid=${JOB}) init success` });
    expect(t.stub.calls.find((c) => c.method === 'Init')?.request).toEqual({ jobId: JOB, role: 'taskd' });
    await send('/Recover/Register', encode('ClientInfo', { jobId: JOB, role: 'taskd' }));
    const cases: Array<[string, string, object]> = [
      ['ReportStopComplete', 'StopCompleteRequest', { jobId: JOB, status: { code: 404, info: 'not ready' }, faultRanks: ranks }],
      ['ReportRecoverStrategy', 'RecoverStrategyRequest', { jobId: JOB, faultRanks: ranks, strategies: ['retry', 'recover', 'dump'] }],
      ['ReportRecoverStatus', 'RecoverStatusRequest', { jobId: JOB, status: { code: 201, info: 'scale in' }, strategy: 'downgrade', isolateRankIds: ['8', '15'] }],
      ['ReportProcessFault', 'ProcessFaultRequest', { jobId: JOB, faultRanks: ranks }],
    ];
    for (const [rpc, type, message] of cases) {
      const reply = decode('Status', await send(`/Recover/${rpc}`, encode(type, message)));
      expect(reply.code).toBe(0);
      expect(t.stub.calls.find((c) => c.method === rpc)?.request).toEqual(message);
    }
  });

  it('ProcessManageSignal fields 1-9 arrive where the table says', async () => {
    const chunks: Buffer[] = [];
    const call = raw.makeServerStreamRequest('/Recover/SubscribeProcessManageSignal', (b: Buffer) => b, (b: Buffer) => b, encode('ClientInfo', { jobId: JOB, role: 'taskd' }));
    call.on('data', (b: Buffer) => chunks.push(b));
    call.on('error', () => {});
    const stream = await t.stub.waitForStream(JOB);
    const signal = processManageSignal({
      uuid: '1868A1B2C3D4E5F6-0123456789abcdef0123456789abcdef', jobId: JOB, signalType: 'changeStrategy', actions: ['change_strategy', 'fault_nodes_exit'],
      faultRanks: ranks, changeStrategy: 'downgrade', timeout: 2 ** 40 + 33, nodeRankIds: ['1', '2'], extraParams: '{"scale-in-strategy": "DP"}',
    });
    await stream.send(signal);
    await eventually(() => chunks[0]);
    expect(decode('ProcessManageSignal', chunks[0]!)).toEqual(signal);
    call.cancel();
  });

  it('FaultQueryResult with a nested FaultMsgSignal decodes by the table', async () => {
    const view = {
      uuid: 'u-1', jobId: JOB, signalType: 'fault',
      nodeFaultInfo: [{
        nodeName: 'node-a01', nodeIP: '10.0.0.1', nodeSN: 'SN01', faultLevel: 'UnHealthy',
        faultDevice: [{
          deviceId: '-1', deviceType: 'Switch', faultCodes: ['8C1F8609'], faultLevel: 'SubHealthy', faultType: ['Switch'], faultReason: ['port down'],
          switchFaultInfos: [{ faultCode: '8C1F8609', switchChipId: '1', switchPortId: '7', faultTime: '1732182000', faultLevel: 'SubHealthy' }],
          faultLevels: ['SubHealthFault'],
        }],
      }],
    };
    t.stub.faultView = () => view;
    const res = decode('FaultQueryResult', await send('/fault.Fault/GetFaultMsgSignal', encode('ClientInfo', { jobId: JOB, role: 'mindie' })));
    expect(res).toEqual({ code: 200, info: 'all info returned', faultSignal: view });
  });

  it('PublicFaultRequest: int64 ms, map<string,string> and packed or unpacked int32 device ids', async () => {
    const req = {
      id: 'fd-online-000001', timestamp: 1_763_700_000_000, version: '1.0', resource: 'fd-online',
      faults: [{
        faultId: 'f-000000001', faultType: 'NPU', faultCode: '110001010', faultTime: 1_763_699_999_000, assertion: 'once',
        faultLocation: { npuIp: '10.0.0.8', port: '3' }, influence: [{ nodeName: 'node-a01', nodeSN: 'SN01', deviceIds: [0, 7, 31] }], description: 'd',
      }],
    };
    const packed = encode('PublicFaultRequest', req);
    const unpacked = encode('PublicFaultRequestUnpacked', req);
    expect(packed.equals(unpacked)).toBe(false);
    for (const bytes of [packed, unpacked]) {
      t.stub.calls.length = 0;
      expect(decode('Status', await send('/PubFault/SendPublicFault', bytes))).toEqual({ code: 0, info: 'public fault send successfully' });
      expect(t.stub.calls.find((c) => c.method === 'SendPublicFault')?.request).toEqual(req);
    }
  });
});
