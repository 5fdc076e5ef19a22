import { ascendPluginIn, holdsReschedulingRole } from './ascend-plugin.ts';

describe('the ascend plugin in Volcano\'s scheduler configuration, and who reschedules', () => {
  const stock = { source: 'volcano-system/volcano-scheduler-configmap', plugins: ['gang', 'drf', 'predicates'] };
  const huawei = { source: 'volcano-system/volcano-scheduler-configmap', plugins: ['gang', 'volcano-npu_v26.1.0', 'priority'] };

  it('finds a plugin named volcano-npu_<version> in any configuration read, and says which', () => {
    expect(ascendPluginIn([stock])).toEqual({ unreadable: [] });
    expect(ascendPluginIn([huawei])).toEqual({ found: { plugin: 'volcano-npu_v26.1.0', source: huawei.source }, unreadable: [] });
    expect(ascendPluginIn([{ source: 'volcano-system/b', plugins: ['volcano-npu_v6.0.RC1_linux-x86_64'] }, { ...stock, source: 'volcano-system/a' }]).found)
      .toEqual({ plugin: 'volcano-npu_v6.0.RC1_linux-x86_64', source: 'volcano-system/b' });
    expect(ascendPluginIn([{ source: 'volcano-system/x', plugins: { unreadable: 'not YAML' } }, stock])).toEqual({ unreadable: ['volcano-system/x'] });
    // A plugin merely named like a prefix of it is not it.
    expect(ascendPluginIn([{ source: 's/c', plugins: ['volcano', 'npu', 'nodeorder'] }]).found).toBeUndefined();
  });

  it('holds the role when asked and no plugin is there, or when asked to act beside it', () => {
    const none = ascendPluginIn([stock]);
    const plugin = ascendPluginIn([huawei]);
    expect(holdsReschedulingRole({ rescheduling: true, besidePlugin: false }, none)).toBe(true);
    expect(holdsReschedulingRole({ rescheduling: true, besidePlugin: false }, plugin)).toBe(false);
    expect(holdsReschedulingRole({ rescheduling: true, besidePlugin: true }, plugin)).toBe(true);
    expect(holdsReschedulingRole({ rescheduling: false, besidePlugin: true }, none)).toBe(false);
  });
});
