import { npuClaimOf, requestedNpus, type ClaimPod } from './npu-claims.ts';

const pod = (ascendReal: string | undefined, resources?: { limits?: Record<string, string>; requests?: Record<string, string> }): ClaimPod => ({
  metadata: { annotations: ascendReal === undefined ? {} : { 'huawei.com/AscendReal': ascendReal } },
  spec: { containers: [{ ...(resources === undefined ? {} : { resources }) }] },
});

describe('which AscendReal claims count', () => {
  it('counts the NPU request: limits, else requests, whole NPUs and vNPUs, over containers', () => {
    expect(requestedNpus(pod(undefined, { limits: { 'huawei.com/Ascend910': '2' }, requests: { 'huawei.com/Ascend910': '2' } }))).toBe(2);
    expect(requestedNpus(pod(undefined, { requests: { 'huawei.com/npu': '1' } }))).toBe(1);
    expect(requestedNpus(pod(undefined, { limits: { 'huawei.com/Ascend910-4c': '1', cpu: '4' } }))).toBe(1);
    expect(requestedNpus({ spec: { containers: [{ resources: { limits: { 'huawei.com/Ascend310P': '1' } } }, { resources: { limits: { 'huawei.com/Ascend310P': '3' } } }] } })).toBe(4);
    expect(requestedNpus(pod(undefined, { limits: { 'huawei.com/Ascend910': '1.5' } }))).toBe(0); // not an integer
    expect(requestedNpus(pod(undefined, { limits: { cpu: '8', 'example.com/Ascend910': '8' } }))).toBe(0);
    expect(requestedNpus({})).toBe(0);
  });

  it('a claim counts when the pod requests at least as many NPUs as it names', () => {
    expect(npuClaimOf(pod('Ascend910-0,Ascend910-1', { limits: { 'huawei.com/Ascend910': '2' } }))).toEqual({ npus: ['Ascend910-0', 'Ascend910-1'] });
    expect(npuClaimOf(pod('Ascend910-3', { limits: { 'huawei.com/Ascend910': '8' } }))).toEqual({ npus: ['Ascend910-3'] });
    expect(npuClaimOf(pod(undefined))).toEqual({ npus: [] });
  });

  it('a pod with no NPU request, or naming more chips than it requests, holds none', () => {
    expect(npuClaimOf(pod('Ascend910-0,Ascend910-1'))).toEqual({ npus: [], refused: { reason: 'no-npu-request', claimed: ['Ascend910-0', 'Ascend910-1'], requested: 0 } });
    expect(npuClaimOf(pod('Ascend910-0,Ascend910-1,Ascend910-2', { limits: { 'huawei.com/Ascend910': '1' } })).refused).toMatchObject({ reason: 'more-than-requested', requested: 1 });
    // a repeated name is one chip
    expect(npuClaimOf(pod('Ascend910-0,Ascend910-0', { limits: { 'huawei.com/Ascend910': '1' } })).npus).toEqual(['Ascend910-0', 'Ascend910-0']);
  });

  it('annotation mode (ClusterD, --trust-pod-npu-annotations) takes AscendReal as written', () => {
    expect(npuClaimOf(pod('Ascend910-0,Ascend910-1'), 'annotation')).toEqual({ npus: ['Ascend910-0', 'Ascend910-1'] });
  });
});
