/** The comparison machinery itself: normalisation keeps what must match, the allow-list stays narrow. */
import { normaliseValue } from './normalise.ts';
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

  test('input millisecond times, times outside the run and other numbers stay as they are', () => {
    expect(normaliseValue('{"fault_time":1795600800500}', { ...window, inputs: new Set(['1795600800500']) })).toBe('{"fault_time":1795600800500}');
    expect(normaliseValue('{"UpdateTime":0,"x":1600000000,"ids":"Ascend910-1234567890"}', window)).toBe('{"UpdateTime":0,"x":1600000000,"ids":"Ascend910-1234567890"}');
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
