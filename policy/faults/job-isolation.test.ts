import { chipFault, nodeNotReady } from '../../test/support/job-fixtures.ts';
import { CLUSTERD_FAULT_TAINT_KEY, desiredNodeTaints, planNodeTaint, unusableNpus } from './job-isolation.ts';

describe('node taints', () => {
  it('taints NodeD Separate/PreSeparate and UnHealthy switches NoSchedule, sub-healthy switches PreferNoSchedule', () => {
    const wishes = desiredNodeTaints([
      chipFault('n1', undefined, 'SeparateNPU', 'PSU', 'node'),
      chipFault('n2', undefined, 'PreSeparateNPU', 'FAN', 'node'),
      chipFault('n3', undefined, 'SubHealthFault', 'sw', 'switch'),
      chipFault('n4', undefined, 'RestartRequest', 'sw', 'switch'),
      chipFault('n4', undefined, 'SubHealthFault', 'sw2', 'switch'),
      chipFault('n5', 'Ascend910-0', 'SeparateNPU'),
      chipFault('n6', undefined, 'NotHandleFault', 'x', 'node'),
      nodeNotReady('n7'),
    ]);
    expect([...wishes.keys()].sort()).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect(wishes.get('n1')?.taint).toEqual({ key: CLUSTERD_FAULT_TAINT_KEY, value: 'SeparateNPU', effect: 'NoSchedule' });
    expect(wishes.get('n2')?.taint).toEqual({ key: CLUSTERD_FAULT_TAINT_KEY, value: 'PreSeparateNPU', effect: 'NoSchedule' });
    expect(wishes.get('n3')?.taint).toEqual({ key: CLUSTERD_FAULT_TAINT_KEY, value: 'SubHealthFault', effect: 'PreferNoSchedule' });
    expect(wishes.get('n4')?.taint).toEqual({ key: CLUSTERD_FAULT_TAINT_KEY, value: 'RestartRequest', effect: 'NoSchedule' });
  });

  it('adds, replaces and (after the hold) lifts only our taint', () => {
    const wish = desiredNodeTaints([chipFault('n1', undefined, 'SeparateNPU', 'PSU', 'node')]).get('n1');
    const other = { key: 'team', value: 'a', effect: 'NoSchedule' as const };
    expect(planNodeTaint([other], wish, {}, 0)).toMatchObject({ remove: [], add: wish?.taint });
    const soft = { key: CLUSTERD_FAULT_TAINT_KEY, value: 'SubHealthFault', effect: 'PreferNoSchedule' as const };
    expect(planNodeTaint([other, soft], wish, {}, 0)).toMatchObject({ remove: [soft], add: wish?.taint });
    expect(planNodeTaint([other, wish!.taint], wish, {}, 0)).toEqual(expect.objectContaining({ remove: [] }));
    expect(planNodeTaint([other, wish!.taint], wish, {}, 0).add).toBeUndefined();
    const h1 = planNodeTaint([other, wish!.taint], undefined, {}, 1_000);
    expect(h1).toMatchObject({ remove: [], state: { healthySinceMs: 1_000 }, requeueAfterMs: 60_000 });
    const h2 = planNodeTaint([other, wish!.taint], undefined, h1.state, 61_000);
    expect(h2).toMatchObject({ remove: [wish!.taint], state: {} });
    // a fault coming back during the hold resets it
    expect(planNodeTaint([wish!.taint], wish, h1.state, 30_000).state).toEqual({});
  });
});

describe('unusableNpus', () => {
  it('lists chips with non-normal levels (PreSeparate included), network ones flagged', () => {
    const m = unusableNpus([
      chipFault('n1', 'Ascend910-10', 'SeparateNPU'),
      chipFault('n1', 'Ascend910-2', 'PreSeparateNPU', 'a'),
      chipFault('n1', 'Ascend910-2', 'RestartNPU', 'b'),
      chipFault('n1', 'Ascend910-3', 'SubHealthFault'),
      chipFault('n1', 'Ascend910-4', 'NotHandleFault'),
      chipFault('n2', 'Ascend910-1', 'PreSeparateNPU', '81078603', 'network'),
    ]);
    expect(m.get('n1')).toEqual([
      { npu: 'Ascend910-2', level: 'PreSeparateNPU', faultType: 'CardUnhealthy', codes: ['a', 'b'] },
      { npu: 'Ascend910-10', level: 'SeparateNPU', faultType: 'CardUnhealthy', codes: ['80E18005'] },
    ]);
    expect(m.get('n2')).toEqual([{ npu: 'Ascend910-1', level: 'PreSeparateNPU', faultType: 'CardNetworkUnhealthy', codes: ['81078603'] }]);
  });
});
