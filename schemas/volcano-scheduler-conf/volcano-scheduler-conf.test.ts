import { schedulerPluginNames } from './volcano-scheduler-conf.ts';

/** The shape of Huawei's configuration (build/volcano-v1.12.0.yaml): the plugin in the first tier. */
const MINDCLUSTER = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
    enableNodeOrder: false
  - name: volcano-npu_v26.1.0
    enablePreemptable: true
  - name: priority
- plugins:
  - name: drf
  - name: predicates
    arguments:
      predicate.GPUSharingEnable: false
configurations:
  - name: init-params
    arguments: {"grace-over-time":"900","presetVirtualDevice":"true",
"useClusterInfoManager":"true"}
`;

/** Volcano's own default (no ascend plugin). */
const STOCK = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
`;

describe('Volcano scheduler configuration: the plugin names of every tier', () => {
  it('reads every tier in order (a flow map outside the tiers indented as Go\'s YAML reader takes it, as in Huawei\'s manifest)', () => {
    expect(schedulerPluginNames(MINDCLUSTER)).toEqual({ ok: true, value: ['gang', 'volcano-npu_v26.1.0', 'priority', 'drf', 'predicates'] });
    expect(schedulerPluginNames(STOCK)).toEqual({ ok: true, value: ['priority', 'gang', 'conformance', 'overcommit', 'drf', 'predicates', 'proportion', 'nodeorder', 'binpack'] });
    expect(schedulerPluginNames('tiers:\n- plugins:\n')).toEqual({ ok: true, value: [] });
  });

  it('refuses what is no scheduler configuration, without throwing', () => {
    expect(schedulerPluginNames('tiers: [').ok).toBe(false);
    expect(schedulerPluginNames('tiers:\n- plugins:\n  - name: {"a":\n"b"}\n').ok).toBe(false);
    expect(schedulerPluginNames('actions: allocate\n')).toMatchObject({ ok: false, kind: 'schema' });
    expect(schedulerPluginNames('tiers:\n- plugins: gang\n')).toMatchObject({ ok: false, kind: 'schema' });
    expect(schedulerPluginNames('tiers:\n- plugins:\n  - enableNodeOrder: false\n')).toMatchObject({ ok: false, kind: 'schema' });
    expect(schedulerPluginNames('x'.repeat(1024 * 1024 + 1))).toMatchObject({ ok: false, kind: 'oversized' });
  });
});
