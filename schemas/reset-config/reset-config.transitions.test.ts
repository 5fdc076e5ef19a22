import { encodeResetConfigData, encodeTaskResetInfo, parseTaskResetInfo, type TaskResetInfo } from './reset-config.ts';
import {
  clear,
  fault,
  gracefulExit,
  hotResetActive,
  notifyFaultFlushing,
  podRescheduled,
  restartAllProcess,
  type ResetWrite,
} from './reset-config.transitions.ts';

const INITIAL_JSON =
  '{"RankList":[],"UpdateTime":1732180000,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":false}';
const FAULT_JSON =
  '{"RankList":[{"RankId":8,"LogicId":0,"Status":"fault","Policy":"","InitialPolicy":"","ErrorCode":null,"ErrorCodeHex":""},' +
  '{"RankId":9,"LogicId":0,"Status":"fault","Policy":"","InitialPolicy":"","ErrorCode":null,"ErrorCodeHex":""}],' +
  '"UpdateTime":1732182200,"RetryTime":0,"FaultFlushing":false,"GracefulExit":0,"RestartFaultProcess":true}';

const info = (text: string): TaskResetInfo => {
  const r = parseTaskResetInfo(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
};
const value = (w: ResetWrite): TaskResetInfo => {
  if (!w.ok) throw new Error(w.reason);
  return w.value;
};
const initial = info(INITIAL_JSON);
const withRetry = (n: number, extra: Partial<TaskResetInfo> = {}): TaskResetInfo => ({ ...initial, RetryTime: n, ...extra });

describe('ClusterD operations', () => {
  it('fault on ranks 8 and 9 with recover-in-place gives the golden sample and checkCode', () => {
    const next = value(fault(initial, ['8', 9], true, 1732182200));
    expect(encodeTaskResetInfo(next)).toBe(FAULT_JSON);
    expect(encodeResetConfigData(next).checkCode).toBe('8e44dcc2065e8dc79e85297bc4dfa68b7be65129e27ffa45fa1b2b90e55b0077');
  });

  it('every operation keeps only RetryTime and stamps UpdateTime', () => {
    const old = withRetry(3, { GracefulExit: 1, FaultFlushing: true, RestartFaultProcess: true });
    expect(value(clear(old, 100))).toEqual({
      RankList: [], UpdateTime: 100, RetryTime: 3, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false,
    });
    expect(value(notifyFaultFlushing(old, 101))).toEqual({
      RankList: [], UpdateTime: 101, RetryTime: 3, FaultFlushing: true, GracefulExit: 0, RestartFaultProcess: false,
    });
    expect(value(restartAllProcess(old, 102))).toEqual({
      RankList: [], UpdateTime: 102, RetryTime: 4, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false,
    });
    const f = value(fault(old, [1], false, 103));
    expect(f).toMatchObject({ UpdateTime: 103, RetryTime: 3, FaultFlushing: false, GracefulExit: 0, RestartFaultProcess: false });
    expect(f.RankList).toEqual([{ RankId: 1, LogicId: 0, Status: 'fault', Policy: '', InitialPolicy: '', ErrorCode: null, ErrorCodeHex: '' }]);
  });

  it('a clear after a nil RankList writes []', () => {
    expect(encodeTaskResetInfo(value(clear(info('{}'), 7)))).toMatch(/^\{"RankList":\[\],"UpdateTime":7,/);
  });

  it('does not modify its input', () => {
    const old = info(FAULT_JSON);
    const before = encodeTaskResetInfo(old);
    clear(old, 1);
    restartAllProcess(old, 1);
    gracefulExit(old, 1);
    podRescheduled(old, 1, true);
    expect(encodeTaskResetInfo(old)).toBe(before);
  });

  it.each(['reset', 'restart'])('is refused while a rank has Policy %s (device-plugin hot reset)', (policy) => {
    const old: TaskResetInfo = {
      ...initial,
      RankList: [{ RankId: 3, LogicId: 3, Status: 'unrecovered', Policy: policy, InitialPolicy: 'restart', ErrorCode: [], ErrorCodeHex: '' }],
    };
    expect(hotResetActive(old)).toBe(true);
    for (const w of [fault(old, [1], false, 1), notifyFaultFlushing(old, 1), restartAllProcess(old, 1), clear(old, 1)]) {
      expect(w).toEqual({ ok: false, reason: expect.stringMatching(/hotReset=1 is not compatible/) });
    }
  });

  it.each(['isolate', 'restart_request', 'free_reset', 'empty', ''])('is allowed with Policy %j', (policy) => {
    const old: TaskResetInfo = { ...initial, RankList: [{ ...info(FAULT_JSON).RankList![0]!, Policy: policy }] };
    expect(clear(old, 1).ok).toBe(true);
  });

  it.each(['x', '-1', '1.5', '', ' 1', '99999999999999999999'])('refuses rank id %j', (rank) => {
    expect(fault(initial, ['1', rank], false, 1)).toEqual({ ok: false, reason: expect.stringMatching(/invalid rank id/) });
  });

  it('refuses non-integer numeric rank ids', () => {
    expect(fault(initial, [Number.NaN], false, 1).ok).toBe(false);
    expect(fault(initial, [-2], false, 1).ok).toBe(false);
  });

  it('floors fractional nowS (UpdateTime is int64 seconds)', () => {
    expect(value(clear(initial, 1732182200.9)).UpdateTime).toBe(1732182200);
  });
});

describe('Volcano operations', () => {
  it('gracefulExit sets only GracefulExit', () => {
    const old = info(FAULT_JSON);
    expect(gracefulExit(old, 1)).toEqual({ ...old, GracefulExit: 1 });
    expect(gracefulExit(gracefulExit(old, 1), 0)).toEqual(old);
  });

  it('gracefulExit is not refused during a hot reset', () => {
    const old: TaskResetInfo = { ...initial, RankList: [{ ...info(FAULT_JSON).RankList![0]!, Policy: 'reset' }] };
    expect(gracefulExit(old, 1).GracefulExit).toBe(1);
  });

  it('podRescheduled clears RankList and bumps or zeroes RetryTime', () => {
    const old = withRetry(2, { RankList: info(FAULT_JSON).RankList, GracefulExit: 1 });
    expect(podRescheduled(old, 50, true)).toEqual({ ...old, RankList: [], UpdateTime: 50, RetryTime: 3 });
    expect(podRescheduled(old, 50, false)).toEqual({ ...old, RankList: [], UpdateTime: 50, RetryTime: 0 });
  });
});
