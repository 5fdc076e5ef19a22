import type { Pod } from '../runtime/kube-objects.ts';
import { isLoopback, PodAddressIndex, podCallerIps, podIpCallerCheck } from './grpc-caller.ts';
import { parseOptions, systemNamespacesOf } from './options.ts';

const pod = (phase: string, podIP?: string, podIPs?: string[], namespace = 'ns'): Pod => ({
  metadata: { name: 'p', namespace },
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

  it('scope job: a pod of the job named in the call; scope namespace: also any pod in the job\'s namespace', () => {
    const all = [pod('Running', '10.0.0.5', undefined, 'team-a'), pod('Running', '10.0.0.6', undefined, 'team-a'), pod('Running', '10.0.0.7', undefined, 'team-b'), pod('Running', '10.0.0.8', undefined, 'team-a')];
    const jobs: Record<string, { namespace: string; pods: Pod[] }> = { 'job-a': { namespace: 'team-a', pods: all.slice(0, 2) }, 'job-b': { namespace: 'team-b', pods: [all[2]!] } };
    const { onJob: check } = podIpCallerCheck({ job: (jobId) => jobs[jobId], addresses: new PodAddressIndex(() => all, () => 0), systemNamespaces: new Set() });
    expect(check('job-a', '10.0.0.6', 'job')).toBe(true);
    expect(check('job-a', '10.0.0.7', 'job')).toBe(false);
    expect(check('job-b', '10.0.0.7', 'job')).toBe(true);
    expect(check('job-unknown', '10.0.0.7', 'job')).toBe(false);
    // 10.0.0.8: a pod in team-a outside job-a (a MindIE controller beside its server job)
    expect(check('job-a', '10.0.0.8', 'job')).toBe(false);
    expect(check('job-a', '10.0.0.8', 'namespace')).toBe(true);
    expect(check('job-b', '10.0.0.8', 'namespace')).toBe(false); // another namespace's job
  });

  it('whois: a pod of a system namespace or of the controller\'s own is a system caller, as is a loopback address no pod has; a hostNetwork pod shares its node\'s address', () => {
    const all = [
      pod('Running', '10.0.0.5', undefined, 'team-a'),
      pod('Running', '10.0.0.6', undefined, 'mindx-dl'),
      pod('Running', '10.0.0.7', undefined, 'clusterd-ts'),
      // a node's address: a system daemonset and a tenant's hostNetwork pod on it
      pod('Running', '192.168.0.1', undefined, 'kube-system'), pod('Running', '192.168.0.1', undefined, 'team-b'),
      pod('Running', '127.0.0.5', undefined, 'team-c'),
    ];
    const systemNamespaces = systemNamespacesOf(parseOptions([], {}), 'clusterd-ts');
    expect([...systemNamespaces].sort()).toEqual(['cluster-system', 'clusterd-ts', 'kube-system', 'mindx-dl']);
    const { whois } = podIpCallerCheck({ job: () => undefined, addresses: new PodAddressIndex(() => all, () => 0), systemNamespaces });
    const at = (ip: string) => { const w = whois(ip); return { system: w.system, namespaces: [...w.namespaces].sort() }; };
    expect(at('10.0.0.5')).toEqual({ system: false, namespaces: ['team-a'] });
    expect(at('10.0.0.6')).toEqual({ system: true, namespaces: ['mindx-dl'] });
    expect(at('10.0.0.7')).toEqual({ system: true, namespaces: ['clusterd-ts'] });
    expect(at('192.168.0.1')).toEqual({ system: true, namespaces: ['kube-system', 'team-b'] });
    expect(at('10.9.9.9')).toEqual({ system: false, namespaces: [] });
    expect(at('127.0.0.1')).toEqual({ system: true, namespaces: [] });
    expect(at('::1')).toEqual({ system: true, namespaces: [] });
    // a loopback address some pod has (only in tests) is that pod's
    expect(at('127.0.0.5')).toEqual({ system: false, namespaces: ['team-c'] });
    expect([isLoopback('127.255.0.1'), isLoopback('::1'), isLoopback('128.0.0.1'), isLoopback('::2')]).toEqual([true, true, false, false]);
    expect([...systemNamespacesOf(parseOptions(['--grpc-system-namespaces=ops'], {}), undefined)]).toEqual(['ops']);
  });

  it('the address index is rebuilt at most every 250 ms on a miss and every 5 s otherwise', () => {
    let now = 0;
    let scans = 0;
    const pods = [pod('Running', '10.0.0.5')];
    const index = new PodAddressIndex(() => (scans++, pods), () => now);
    expect(index.has('10.0.0.5', 'ns')).toBe(true);
    for (let i = 0; i < 100; i++) expect(index.has('10.9.9.9', 'ns')).toBe(false); // a flood of strangers
    expect(scans).toBe(1);
    pods.push(pod('Running', '10.0.0.6'));
    now = 300;
    expect(index.has('10.0.0.6', 'ns')).toBe(true);
    expect(scans).toBe(2);
    now = 400;
    expect(index.has('10.0.0.5', 'ns')).toBe(true);
    now = 5_400;
    expect(index.has('10.0.0.5', 'ns')).toBe(true);
    expect(scans).toBe(3);
  });
});
