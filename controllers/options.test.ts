import { parseRecoveryTimings } from '../policy/recovery/recovery-timings.ts';
import { parseOptions, publicFaultNamespacesOf, OptionsError, usage } from './options.ts';

describe('controller options', () => {
  it('has the documented defaults', () => {
    const o = parseOptions([], {});
    expect(o.grpcPort).toBe(8899);
    expect(o.httpPort).toBe(11253);
    expect(o.rescheduling).toBe(true);
    expect(o.dryRun).toBe(false);
    expect(o.graceOverTimeSeconds).toBe(900);
  });

  it('takes public faults from the MindCluster namespaces and existing nodes by default; * and --public-fault-unknown-nodes restore ClusterD', () => {
    const o = parseOptions([], {});
    const allowed = publicFaultNamespacesOf(o);
    expect(['mindx-dl', 'kube-system', 'cluster-system', 'default', 'tenant-a'].map(allowed)).toEqual([true, true, true, false, false]);
    expect(o.publicFaultUnknownNodes).toBe(false);
    const open = parseOptions(['--public-fault-namespaces=*', '--public-fault-unknown-nodes'], {});
    expect(publicFaultNamespacesOf(open)('tenant-a')).toBe(true);
    expect(open.publicFaultUnknownNodes).toBe(true);
    expect(publicFaultNamespacesOf(parseOptions(['--public-fault-namespaces=ccae-senders'], {}))('mindx-dl')).toBe(false);
  });

  it('reads flags, --no- booleans and env fallbacks', () => {
    const o = parseOptions(['--grpc-port', '9000', '--no-rescheduling', '--dry-run'], { KUBECONFIG: '/k', POD_IP: '10.1.2.3' });
    expect(o.grpcPort).toBe(9000);
    expect(o.rescheduling).toBe(false);
    expect(o.kubeconfig).toBe('/k');
    expect(o.grpcHost).toBe('10.1.2.3');
    expect(o.dryRun).toBe(true);
  });

  it.each([
    [['--grpc-port=70000'], /outside/],
    [['--grace-over-time-seconds=1'], /outside/],
    [['--http-port=abc'], /not an integer/],
    [['--log-level=loud'], /not one of/],
    [['--dry-run=maybe'], /not true\/false/],
    [['--recovery-timings=preExit=5'], /--recovery-timings: "preExit=5" is not valid/],
    [['--recovery-timings=flush=-1'], /not valid/],
    [['--public-fault-namespaces=Tenant_A'], /--public-fault-namespaces: "Tenant_A" is not valid/],
    [['--public-fault-namespaces=a,,b'], /not valid/],
    [['--recovery-timings=flush=1,'], /not valid/],
  ])('rejects %j with a clear message', (argv, msg) => {
    expect(() => parseOptions(argv, {})).toThrow(msg);
    expect(() => parseOptions(argv, {})).toThrow(OptionsError);
  });

  it('--recovery-timings overrides the named FSM waits only', () => {
    expect(parseRecoveryTimings(parseOptions(['--recovery-timings=preExitWait=1000,forceRelease=0'], {}).recoveryTimings)).toEqual({ preExitWaitMs: 1000, forceReleaseMs: 0 });
    expect(parseRecoveryTimings(parseOptions([], {}).recoveryTimings)).toEqual({});
  });

  it('rejects unknown flags', () => {
    expect(() => parseOptions(['--frobnicate=1'], {})).toThrow(/Unknown option/);
  });

  it('documents every flag', () => {
    expect(usage()).toContain('--cluster-info-refresh-seconds');
  });
});
