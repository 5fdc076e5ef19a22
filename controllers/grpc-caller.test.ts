import type { Pod } from '../runtime/kube-objects.ts';
import { podCallerIps, podIpCallerCheck } from './grpc-caller.ts';

const pod = (phase: string, podIP?: string, podIPs?: string[]): Pod => ({
  metadata: { name: 'p', namespace: 'ns' },
  status: { phase, ...(podIP ? { podIP } : {}), ...(podIPs ? { podIPs: podIPs.map((ip) => ({ ip })) } : {}) },
});

describe('gRPC caller check against the pod cache', () => {
  it('a pod may call from its podIP and every podIPs entry, until it is over', () => {
    expect(podCallerIps(pod('Running', '10.0.0.5', ['10.0.0.5', 'FD00::5']))).toEqual(['10.0.0.5', 'fd00::5']);
    expect(podCallerIps(pod('Pending'))).toEqual([]);
    // a finished pod gave its address back; it may be another pod's now
    expect(podCallerIps(pod('Succeeded', '10.0.0.5'))).toEqual([]);
    expect(podCallerIps(pod('Failed', '10.0.0.5'))).toEqual([]);
  });

  it('the caller must be a pod of the job named in the call', () => {
    const pods: Record<string, Pod[]> = { 'job-a': [pod('Running', '10.0.0.5'), pod('Running', '10.0.0.6')], 'job-b': [pod('Running', '10.0.0.7')] };
    const check = podIpCallerCheck((jobId) => pods[jobId]);
    expect(check('job-a', '10.0.0.6')).toBe(true);
    expect(check('job-a', '10.0.0.7')).toBe(false);
    expect(check('job-b', '10.0.0.7')).toBe(true);
    expect(check('job-unknown', '10.0.0.7')).toBe(false);
  });
});
