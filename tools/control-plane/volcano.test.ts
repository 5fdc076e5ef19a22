import { withPluginArguments } from './volcano.ts';

// The init-params block as Huawei's build/volcano-v1.12.0.yaml writes it (a flow map over three lines).
const HUAWEI = `actions: "enqueue, allocate, backfill"
configurations:
  - name: init-params
    arguments: {"grace-over-time":"900","presetVirtualDevice":"true","nslb-version":"1.0","shared-tor-num":"2",
"useClusterInfoManager":"true","self-maintain-available-card":"true","super-pod-size": "48", "reserve-nodes": "2",
"forceEnqueue": "true", "prefer-previous-node": "true"}
`;

describe('withPluginArguments', () => {
  it('replaces a key in place and leaves every other byte as Huawei wrote it', () => {
    const out = withPluginArguments(HUAWEI, { 'grace-over-time': '6', 'super-pod-size': '8' });
    expect(out).toBe(HUAWEI.replace('"grace-over-time":"900"', '"grace-over-time":"6"').replace('"super-pod-size": "48"', '"super-pod-size":"8"'));
  });

  it('adds a key the map lacks at its start', () => {
    expect(withPluginArguments(HUAWEI, { 'new-key': 'x' })).toContain('arguments: {"new-key":"x","grace-over-time":"900"');
  });

  it('refuses a configuration without init-params rather than running with the defaults', () => {
    expect(() => withPluginArguments('actions: "allocate"\n', { 'grace-over-time': '6' })).toThrow(/init-params/);
  });
});
