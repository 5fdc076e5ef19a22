import { FaultPolicyEngine } from './fault-policy-engine.ts';
import { FaultView } from './fault-view.ts';
import { FaultViewStage } from './fault-view-stage.ts';
import type { FaultStore } from '../state/fault-store.ts';
import { PolicyConfigTracker } from '../state/fault-policy-config.ts';
import type { NpuUsage } from '../state/npu-usage.ts';
import { ManualClock, rec, recordingLogger, settle, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { Metrics } from '../telemetry/metrics.ts';
import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { encodeFaultCode, DEFAULT_FAULT_CODE_CONFIG } from '../schemas/fault-code/fault-code.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';

const S = 1000;
const H = 3_600_000;
const LINK_DOWN = '81078603';

/** `deviceRules` defaults to on here: most of these tests are about the --device-plugin-rules extension. */
function setup(opts: { usage?: NpuUsage; clock?: ManualClock; deviceRules?: boolean } = {}) {
  const clock = opts.clock ?? new ManualClock();
  const lines: LogLine[] = [];
  const metrics = new Metrics({ processMetrics: false });
  const store = new Map<string, FaultRecord[]>();
  const viewChanges: string[][] = [];
  let stateChanges = 0;
  const tracker = new PolicyConfigTracker();
  tracker.updateFaultConfig(undefined);
  tracker.updateClusterdConfig(undefined);
  const engine = new FaultPolicyEngine({
    log: recordingLogger(lines, {}, () => clock.now()), metrics, clock,
    usage: opts.usage ?? { jobOf: () => undefined, inUse: () => false, nodeHasNpuPods: () => false },
    records: (n) => store.get(n) ?? [], nodes: () => store.keys(),
    onViewChange: (nodes) => viewChanges.push([...nodes]), onStateChange: () => { stateChanges++; },
    deviceRules: opts.deviceRules ?? true,
  }, tracker.current);
  const put = (node: string, records: FaultRecord[]): void => { store.set(node, records); engine.observe([node], clock.now()); };
  const levelOf = (node: string, device: string, code: string): string | undefined =>
    engine.effective(node, store.get(node) ?? [], clock.now()).find((r) => r.device === device && r.code === code)?.level;
  return { clock, lines, metrics, store, engine, tracker, put, levelOf, viewChanges, stateChanges: () => stateChanges };
}

describe('fault policy engine: default, as ClusterD (no --device-plugin-rules)', () => {
  // ClusterD never reads mindx-dl-fault-config nor applies FaultFrequency / FaultDuration: the device
  // plugin does (its faultCustomization.json), before it writes device-info. ClusterD keeps that level
  // (faultdomain.splitDeviceFault takes fault_time_and_level_map's level as written).
  it('81078603 held 30 s keeps the device plugin\'s NotHandleFault: no timer, no escalation, no state', async () => {
    const t = setup({ deviceRules: false });
    t.engine.restore(undefined, undefined, t.clock.now());
    t.put('n1', [rec('n1', 'Ascend910-2', LINK_DOWN, 'NotHandleFault', t.clock.now(), 'network')]);
    expect(t.clock.pending).toBe(0);
    await t.clock.run(30 * S);
    await settle();
    expect(t.levelOf('n1', 'Ascend910-2', LINK_DOWN)).toBe('NotHandleFault');
    expect(t.lines.filter((l) => l.msg === 'fault escalated')).toEqual([]);
    expect(t.engine.persistedState(t.clock.now())?.escalation.tracks).toEqual({});
  });

  it('a FaultFrequency code 3 times in 24 h is not escalated, and mindx-dl-fault-config re-levels nothing', async () => {
    const t = setup({ deviceRules: false });
    t.engine.restore(undefined, undefined, t.clock.now());
    for (let i = 0; i < 3; i++) {
      t.put('n1', [rec('n1', 'Ascend910-0', '80E18005', 'RestartNPU', t.clock.now())]);
      await t.clock.run(H);
      t.put('n1', []);
      await t.clock.run(H);
    }
    expect(t.engine.effective('n1', [], t.clock.now())).toEqual([]);
    const faultCode = encodeFaultCode({ ...DEFAULT_FAULT_CODE_CONFIG, NotHandleFaultCodes: DEFAULT_FAULT_CODE_CONFIG.NotHandleFaultCodes.filter((c) => c !== '80E21007'), SeparateNPUCodes: [...DEFAULT_FAULT_CODE_CONFIG.SeparateNPUCodes, '80E21007'] });
    const u = t.tracker.updateFaultConfig({ metadata: { name: 'mindx-dl-fault-config', namespace: 'kube-system', uid: 'u', resourceVersion: '1' }, data: { 'faultCode.json': faultCode } });
    t.engine.setConfig(t.tracker.current, u, t.clock.now());
    t.put('n1', [rec('n1', 'Ascend910-0', '80E21007', 'RestartNPU', t.clock.now())]);
    expect(t.levelOf('n1', 'Ascend910-0', '80E21007')).toBe('RestartNPU');
  });
});

describe('fault policy engine (--device-plugin-rules): parameter plane 20 s rule', () => {
  it('escalates 81078603 held > 20 s to PreSeparateNPU from its timer, with no new input, logged and counted', async () => {
    const t = setup();
    t.engine.restore(undefined, undefined, t.clock.now());
    const t0 = t.clock.now();
    t.put('n1', [rec('n1', 'Ascend910-2', LINK_DOWN, 'NotHandleFault', t0, 'network')]);
    await t.clock.run(20 * S);
    expect(t.levelOf('n1', 'Ascend910-2', LINK_DOWN)).toBe('NotHandleFault');
    await settle();
    t.viewChanges.length = 0;
    await t.clock.run(1); // 20.001 s: the timer fires
    await settle();
    expect(t.viewChanges).toEqual([['n1']]);
    expect(t.levelOf('n1', 'Ascend910-2', LINK_DOWN)).toBe('PreSeparateNPU');
    const line = t.lines.find((l) => l.msg === 'fault escalated');
    expect(line).toMatchObject({ node: 'n1', npu: 'Ascend910-2', code: LINK_DOWN, faultLevel: 'PreSeparateNPU', rule: 'FaultDuration' });
    expect(String(line?.reasons)).toMatch(/^81078603 -> NotHandleFault \(base-level.*PreSeparateNPU \(FaultDuration \[detect\.duration-escalation\]: held longer than FaultTimeout 20 s/);
    const m = (await t.metrics.escalations.get()).values.find((v) => v.labels.rule === 'parameter_plane');
    expect(m?.value).toBe(1);
    expect(t.engine.verdicts('n1')[0]).toMatchObject({ device: 'Ascend910-2', level: 'PreSeparateNPU' });
  });

  it('held <= 20 s it stays a NotHandleFault network fault', async () => {
    const t = setup();
    t.engine.restore(undefined, undefined, t.clock.now());
    t.put('n1', [rec('n1', 'Ascend910-2', LINK_DOWN, 'NotHandleFault', t.clock.now(), 'network')]);
    await t.clock.run(20 * S);
    t.put('n1', []);
    await t.clock.run(120 * S);
    expect(t.lines.filter((l) => l.msg === 'fault escalated')).toEqual([]);
    expect(t.engine.persistedState(t.clock.now())?.escalation.tracks).toEqual({});
    expect(t.clock.pending).toBe(0);
  });

  it('makes no decision before restore, and trusts the reported records meanwhile', async () => {
    const t = setup();
    const r = [rec('n1', 'Ascend910-2', LINK_DOWN, 'NotHandleFault', t.clock.now() - 60 * S, 'network')];
    t.store.set('n1', r);
    expect(t.engine.effective('n1', r, t.clock.now())).toBe(r);
    expect(t.engine.persistedState(t.clock.now())).toBeUndefined();
    t.engine.restore(undefined, undefined, t.clock.now());
    expect(t.levelOf('n1', 'Ascend910-2', LINK_DOWN)).toBe('PreSeparateNPU'); // judged on its real age
  });
});

describe('fault policy engine: ClusterD manual separation', () => {
  const usage: NpuUsage = { jobOf: (_n, d) => (d === 'Ascend910-1' ? 'ns/job-a' : undefined), inUse: (_n, d) => d === 'Ascend910-1', nodeHasNpuPods: () => true };

  it('3 hardware faults in 24 h on a job NPU -> ManuallySeparateNPU, in manual-info and the view; operator deletion releases', async () => {
    const t = setup({ usage });
    t.engine.restore(undefined, undefined, t.clock.now());
    const code = '8C084E00';
    for (let i = 0; i < 3; i++) {
      t.put('n1', [rec('n1', 'Ascend910-1', code, 'FreeRestartNPU', t.clock.now())]);
      await t.clock.run(2 * S);
      t.put('n1', []);
      await t.clock.run(2 * S);
    }
    expect(t.engine.manualInfo()).toEqual({});
    await t.clock.run(30 * S); // the job's 30 s software/hardware judgement, from the engine's own timer
    await settle();
    expect(t.engine.manualInfo()).toEqual({ n1: { Total: ['Ascend910-1'], Detail: { 'Ascend910-1': [{ FaultCode: code, FaultLevel: 'ManuallySeparateNPU', LastSeparateTime: expect.any(Number) }] } } });
    const eff = t.engine.effective('n1', [], t.clock.now());
    // as ClusterD's manual-fault processor: one code-less ManuallySeparateNPU fault on the chip
    expect(eff).toEqual([expect.objectContaining({ device: 'Ascend910-1', code: 'ManuallySeparateNPU', level: 'ManuallySeparateNPU', source: 'npu' })]);
    expect(t.viewChanges.flat()).toContain('n1');
    expect(t.lines.find((l) => l.msg === 'fault escalated')).toMatchObject({ node: 'n1', npu: 'Ascend910-1', code, faultLevel: 'ManuallySeparateNPU', rule: 'manual-separation' });
    // the CM is written and read back, then an operator deletes the NPU from Total
    t.engine.manualInfoChanged({ n1: ['Ascend910-1'] }, t.clock.now());
    expect(t.engine.manualInfo()).toEqual({ n1: expect.anything() });
    t.engine.manualInfoChanged({}, t.clock.now());
    expect(t.engine.manualInfo()).toEqual({});
    expect(t.engine.effective('n1', [], t.clock.now())).toEqual([]);
    expect(t.lines.find((l) => l.msg === 'manual separation released')).toMatchObject({ node: 'n1', npu: 'Ascend910-1', cause: 'operator' });
  });

  it('the same code on two NPUs of one job within 30 s is a software fault; a separation is released after 48 h', async () => {
    const both: NpuUsage = { jobOf: () => 'ns/job-a', inUse: () => true, nodeHasNpuPods: () => true };
    const t = setup({ usage: both });
    t.engine.restore(undefined, undefined, t.clock.now());
    for (let i = 0; i < 3; i++) {
      const at = t.clock.now();
      t.put('n1', [rec('n1', 'Ascend910-0', '8C084E00', 'FreeRestartNPU', at), rec('n1', 'Ascend910-1', '8C084E00', 'FreeRestartNPU', at + 5 * S)]);
      await t.clock.run(S);
      t.put('n1', []);
      await t.clock.run(40 * S);
    }
    expect(t.engine.manualInfo()).toEqual({});
    expect(t.lines.filter((l) => l.msg.startsWith('fault on several NPUs of one job judged software'))).toHaveLength(3);
    for (let i = 0; i < 3; i++) {
      t.put('n1', [rec('n1', 'Ascend910-0', '8C084E00', 'FreeRestartNPU', t.clock.now())]);
      await t.clock.run(S);
      t.put('n1', []);
    }
    await t.clock.run(30 * S);
    expect(Object.keys(t.engine.manualInfo() ?? {})).toEqual(['n1']);
    await t.clock.run(48 * H); // fault_free_hours, through the engine's re-armed timer
    await settle();
    expect(t.engine.manualInfo()).toEqual({});
    expect(t.lines.find((l) => l.msg === 'manual separation released')).toMatchObject({ cause: 'fault_free_hours' });
  });

  it('faults on an NPU no job uses are not counted', async () => {
    const t = setup({ usage });
    t.engine.restore(undefined, undefined, t.clock.now());
    for (let i = 0; i < 3; i++) {
      t.put('n1', [rec('n1', 'Ascend910-5', '8C084E00', 'FreeRestartNPU', t.clock.now())]);
      await t.clock.run(S);
      t.put('n1', []);
    }
    await t.clock.run(60 * S);
    expect(t.engine.manualInfo()).toEqual({});
  });
});

describe('fault policy engine: persistence', () => {
  it('counters and escalations survive a restart through the persisted document', async () => {
    const a = setup();
    a.engine.restore(undefined, undefined, a.clock.now());
    const hit = async (t: typeof a, device: string): Promise<void> => {
      t.put('n1', [rec('n1', device, '80E18005', 'RestartNPU', t.clock.now())]);
      await t.clock.run(H);
      t.put('n1', []);
      await t.clock.run(H);
    };
    for (let i = 0; i < 3; i++) await hit(a, 'Ascend910-0'); // 3 in 24 h -> ManuallySeparateNPU (FaultFrequency)
    for (let i = 0; i < 2; i++) await hit(a, 'Ascend910-4'); // 2 so far
    expect(a.engine.effective('n1', [], a.clock.now())).toEqual([expect.objectContaining({ device: 'Ascend910-0', code: 'ManuallySeparateNPU', level: 'ManuallySeparateNPU' })]);
    await settle();
    expect(a.stateChanges()).toBeGreaterThan(0); // counted occurrences ask for a write (coalesced per step)
    const doc = a.engine.persistedState(a.clock.now())!;

    const b = setup({ clock: a.clock });
    b.engine.restore(doc, undefined, b.clock.now());
    expect(b.engine.effective('n1', [], b.clock.now()).map((r) => `${r.device}:${r.level}`)).toEqual(['Ascend910-0:ManuallySeparateNPU']);
    await hit(b, 'Ascend910-4'); // the third, after the restart
    expect(b.engine.effective('n1', [], b.clock.now()).map((r) => r.device).sort()).toEqual(['Ascend910-0', 'Ascend910-4']);
  });
});

describe('fault policy engine: central levels', () => {
  it('re-levels a code only while mindx-dl-fault-config exists', async () => {
    const t = setup();
    t.engine.restore(undefined, undefined, t.clock.now());
    t.put('n1', [rec('n1', 'Ascend910-0', '80E21007', 'RestartNPU', t.clock.now())]);
    expect(t.levelOf('n1', 'Ascend910-0', '80E21007')).toBe('RestartNPU');
    const faultCode = encodeFaultCode({ ...DEFAULT_FAULT_CODE_CONFIG, NotHandleFaultCodes: DEFAULT_FAULT_CODE_CONFIG.NotHandleFaultCodes.filter((c) => c !== '80E21007'), SeparateNPUCodes: [...DEFAULT_FAULT_CODE_CONFIG.SeparateNPUCodes, '80E21007'] });
    const cm: ConfigMap = { metadata: { name: 'mindx-dl-fault-config', namespace: 'kube-system', uid: 'u', resourceVersion: '1' }, data: { 'faultCode.json': faultCode } };
    const u = t.tracker.updateFaultConfig(cm);
    expect(u.levelsChanged).toBe(true);
    t.engine.setConfig(t.tracker.current, u, t.clock.now());
    await settle();
    expect(t.viewChanges.flat()).toContain('n1');
    expect(t.levelOf('n1', 'Ascend910-0', '80E21007')).toBe('SeparateNPU');
    const gone = t.tracker.updateFaultConfig(undefined);
    t.engine.setConfig(t.tracker.current, gone, t.clock.now());
    expect(t.levelOf('n1', 'Ascend910-0', '80E21007')).toBe('RestartNPU');
  });
});

describe('fault policy engine: deadlines run from the work queue, in virtual time', () => {
  // The production path: the engines' earliest deadline is a work-queue key (runtime/timer-loop.ts)
  // on the queue's clock; nothing below gives the engine new input when a deadline passes.
  const since = (t0: number, l: LogLine): string => `${(l.nowMs as number) - t0}:${l.msg}:${String(l.rule ?? l.cause)}`;

  it('81078603 down 30 s in each of five hours: every escalation and its end fire at their own time, the 48 h release through 48 re-armed keys', async () => {
    const t = setup();
    t.engine.restore(undefined, undefined, t.clock.now());
    const t0 = t.clock.now();
    for (let i = 0; i < 5; i++) {
      t.put('n1', [rec('n1', 'Ascend910-2', LINK_DOWN, 'NotHandleFault', t.clock.now(), 'network')]);
      await t.clock.run(30 * S);
      t.put('n1', []);
      await t.clock.run(H - 30 * S);
    }
    await t.clock.run(60 * H);
    const expected: string[] = [];
    for (let i = 0; i < 5; i++) {
      expected.push(`${i * H + 20 * S + 1}:fault escalated:FaultDuration`);
      if (i === 4) expected.push(`${4 * H + 20 * S + 1}:fault escalated:FaultFrequency`);
      expected.push(`${i * H + 90 * S + 1}:fault escalation ended:FaultDuration`);
    }
    expected.push(`${4 * H + 90 * S + 1 + 48 * H + 1}:fault escalation ended:FaultFrequency`);
    expect(t.lines.filter((l) => l.msg.startsWith('fault escalat')).map((l) => since(t0, l))).toEqual(expected);
    expect(t.engine.persistedState(t.clock.now())?.escalation.tracks).toEqual({});
  });

  it('manual separation: each fault counted at its 30 s judgement, separated at the third, released 48 h after the third fault\'s receive time', async () => {
    const usage: NpuUsage = { jobOf: (_n, d) => (d === 'Ascend910-1' ? 'ns/job-a' : undefined), inUse: (_n, d) => d === 'Ascend910-1', nodeHasNpuPods: () => true };
    const t = setup({ usage });
    t.engine.restore(undefined, undefined, t.clock.now());
    const t0 = t.clock.now();
    for (const at of [0, 10 * H, 20 * H]) {
      await t.clock.run(t0 + at - t.clock.now());
      t.put('n1', [rec('n1', 'Ascend910-1', '8C084E00', 'FreeRestartNPU', t.clock.now())]);
      await t.clock.run(S);
      t.put('n1', []);
    }
    await t.clock.run(60 * H);
    const manual = t.lines.filter((l) => l.msg === 'hardware fault counted for manual separation' || l.rule === 'manual-separation' || l.msg === 'manual separation released');
    expect(manual.map((l) => since(t0, l))).toEqual([
      `${30 * S}:hardware fault counted for manual separation:undefined`,
      `${10 * H + 30 * S}:hardware fault counted for manual separation:undefined`,
      `${20 * H + 30 * S}:hardware fault counted for manual separation:undefined`,
      `${20 * H + 30 * S}:fault escalated:manual-separation`,
      `${20 * H + 48 * H}:manual separation released:fault_free_hours`,
    ]);
    expect(t.engine.manualInfo()).toEqual({});
  });
});

describe('fault policy engine: kubectl clusterd release requests', () => {
  it('releases a FaultFrequency ManuallySeparateNPU made before the request and resets its count; replaying the request changes nothing later', async () => {
    const t = setup();
    t.engine.restore(undefined, undefined, t.clock.now());
    const hit = async (): Promise<void> => {
      t.put('n1', [rec('n1', 'Ascend910-0', '80E18005', 'RestartNPU', t.clock.now())]);
      await t.clock.run(H);
      t.put('n1', []);
      await t.clock.run(H);
    };
    for (let i = 0; i < 3; i++) await hit();
    const separated = (): boolean => t.engine.effective('n1', [], t.clock.now()).some((r) => r.device === 'Ascend910-0' && r.level === 'ManuallySeparateNPU');
    expect(separated()).toBe(true);
    const req = { node: 'n1', npus: ['Ascend910-0'], by: 'alice', atMs: t.clock.now() };
    t.engine.operatorReleases([req], t.clock.now());
    expect(separated()).toBe(false);
    expect(t.lines.find((l) => l.msg === 'fault escalation ended')).toMatchObject({ rule: 'FaultFrequency', cause: 'operator' });
    expect(t.engine.persistedState(t.clock.now())?.escalation.tracks['n1/Ascend910-0/80E18005']?.upgrade ?? null).toBeNull();
    // Counting starts again: two more do not separate; a third does, and the old request (replayed
    // after a restart) does not release that newer separation.
    await hit(); await hit();
    expect(separated()).toBe(false);
    await hit();
    expect(separated()).toBe(true);
    t.engine.operatorReleases([req], t.clock.now());
    expect(separated()).toBe(true);
  });
});

describe('fault policy engine under flap damping (policy/faults/flap-damping.ts header)', () => {
  it('a flapping chip is escalated by FaultFrequency on every occurrence; the escalated level replaces the hold in the placement view', async () => {
    const t = setup();
    t.engine.restore(undefined, undefined, t.clock.now());
    const store = { records: (n: string) => t.store.get(n) ?? [], nodeState: () => ({}), nodeNames: () => [...t.store.keys()] } as unknown as FaultStore;
    const view = new FaultView(store, t.clock.now);
    const stage = new FaultViewStage({ view, policy: t.engine, clock: t.clock, log: recordingLogger([]), damping: { holdMs: 30 * S, recoveries: 2, windowMs: 60 * S } });
    stage.start();
    const step = async (records: FaultRecord[]): Promise<void> => {
      t.put('n1', records);
      await t.clock.run(5 * S);
      stage.intake({ nodes: ['n1'], atMs: t.clock.now() });
      await settle();
    };
    const fault = (): FaultRecord[] => [rec('n1', 'Ascend910-0', '80E18005', 'RestartNPU', t.clock.now())];
    await step(fault()); await step([]); // 1st occurrence, 1st recovery: as ClusterD
    expect(view.placement('n1')).toEqual([]);
    await step(fault()); await step([]); // 2nd occurrence, 2nd recovery: flapping, held
    expect(view.placement('n1').map((r) => `${r.code}:${r.level}`)).toEqual(['80E18005:RestartNPU']);
    expect(view.effective('n1')).toEqual([]); // decisions see the chip as it reports now
    await step(fault()); // 3rd occurrence within 24 h: counted although the chip was held -> ManuallySeparateNPU
    await step([]);
    expect(t.engine.effective('n1', [], t.clock.now()).map((r) => r.level)).toEqual(['ManuallySeparateNPU']);
    // The escalation keeps the chip faulty in the job view: no recovery, no hold; the escalated level shows.
    expect(view.placement('n1').map((r) => `${r.code}:${r.level}`)).toEqual(['ManuallySeparateNPU:ManuallySeparateNPU']);
    expect(view.effective('n1').map((r) => r.level)).toEqual(['ManuallySeparateNPU']);
  });
});
