import { Ajv } from 'ajv';
import {
  DEFAULT_FAULT_CUSTOMIZATION,
  FAULT_CUSTOMIZATION_SCHEMA,
  encodeFaultCustomization,
  indexFaultCustomization,
  parseFaultCustomization,
} from './fault-customization.ts';

const parse = (v: unknown) => parseFaultCustomization(JSON.stringify(v));
const grace = DEFAULT_FAULT_CUSTOMIZATION.GraceTolerance;

describe('faultCustomization.json', () => {
  it('the shipped defaults encode, validate against the schema and parse back without warnings', () => {
    const text = encodeFaultCustomization(DEFAULT_FAULT_CUSTOMIZATION);
    const validate = new Ajv({ strict: true }).compile(FAULT_CUSTOMIZATION_SCHEMA as object);
    expect(validate(JSON.parse(text))).toBe(true);
    expect(parseFaultCustomization(text)).toEqual({ config: DEFAULT_FAULT_CUSTOMIZATION, warnings: [] });
  });

  it('defaults are 30/150/15 s and 81078603: 20 s -> PreSeparateNPU, 5 x 24 h -> ManuallySeparateNPU, release 48 h', () => {
    expect(grace).toEqual({ WaitProcessReadCMTime: 30, WaitDeviceResetTime: 150, WaitFaultSelfHealingTime: 15 });
    const idx = indexFaultCustomization(DEFAULT_FAULT_CUSTOMIZATION);
    expect(idx.duration.get('81078603')).toEqual({ EventId: ['81078603'], FaultTimeout: 20, RecoverTimeout: 60, FaultHandling: 'PreSeparateNPU' });
    expect(idx.frequency.get('81078603')).toMatchObject({ TimeWindow: 86400, Times: 5, FaultHandling: 'ManuallySeparateNPU', ReleaseTimeWindow: 172800 });
    expect(idx.frequency.get('80E18005')).toMatchObject({ Times: 3, FaultHandling: 'ManuallySeparateNPU' });
    expect(idx.frequency.get('80E01801')).toMatchObject({ Times: 2 });
    expect(idx.frequency.size).toBe(43);
  });

  describe('GraceTolerance', () => {
    it('uses each default for a missing, mistyped or out-of-range value, keeping valid ones', () => {
      const r = parse({ GraceTolerance: { WaitProcessReadCMTime: 91, WaitDeviceResetTime: 60, WaitFaultSelfHealingTime: '5' } });
      expect(r.config.GraceTolerance).toEqual({ WaitProcessReadCMTime: 30, WaitDeviceResetTime: 60, WaitFaultSelfHealingTime: 15 });
      expect(r.warnings).toHaveLength(2);
    });
    it.each([[4, 30], [5, 5], [90, 90]])('WaitProcessReadCMTime %d -> %d', (v, want) => {
      expect(parse({ GraceTolerance: { WaitProcessReadCMTime: v } }).config.GraceTolerance.WaitProcessReadCMTime).toBe(want);
    });
    it('a missing or non-object GraceTolerance gives the defaults', () => {
      expect(parse({}).config.GraceTolerance).toEqual(grace);
      expect(parse({ GraceTolerance: [1] }).config.GraceTolerance).toEqual(grace);
    });
  });

  describe('FaultFrequency', () => {
    const rule = { EventId: ['80E18005'], TimeWindow: 3600, Times: 2, FaultHandling: 'ManuallySeparateNPU' };

    it('ignores an out-of-range entry but keeps the valid ones', () => {
      const r = parse({ FaultFrequency: [{ ...rule, TimeWindow: 59 }, { ...rule, EventId: ['80E18008'] }, { ...rule, EventId: ['80DE1801'], Times: 101 }] });
      expect(r.config.FaultFrequency).toEqual([{ ...rule, EventId: ['80E18008'] }]);
      expect(r.warnings.join('\n')).toMatch(/FaultFrequency\[0\] ignored: TimeWindow 59/);
      expect(r.warnings.join('\n')).toMatch(/FaultFrequency\[2\] ignored: Times 101/);
    });

    it.each([
      ['TimeWindow 864001', { TimeWindow: 864_001 }],
      ['Times 0', { Times: 0 }],
      ['ReleaseTimeWindow 59', { ReleaseTimeWindow: 59 }],
      ['an unknown level', { FaultHandling: 'Reboot' }],
      ['NormalNPU', { FaultHandling: 'NormalNPU' }],
      ['a non-manual level without ReleaseTimeWindow', { FaultHandling: 'SeparateNPU' }],
      ['an empty EventId', { EventId: [] }],
      ['a non-hex EventId', { EventId: ['xyz'] }],
    ])('ignores an entry with %s', (_n, patch) => {
      const r = parse({ FaultFrequency: [{ ...rule, ...patch }] });
      expect(r.config.FaultFrequency).toEqual([]);
      expect(r.warnings).toHaveLength(1);
    });

    it('accepts a non-manual level with a ReleaseTimeWindow', () => {
      const r = parse({ FaultFrequency: [{ ...rule, FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 600 }] });
      expect(r.config.FaultFrequency).toEqual([{ ...rule, FaultHandling: 'SeparateNPU', ReleaseTimeWindow: 600 }]);
    });

    it('only the first valid entry per EventId counts; codes are upper-cased', () => {
      const r = parse({
        FaultFrequency: [
          { ...rule, EventId: ['80e18005'], Times: 0 }, // invalid: does not claim the code
          { ...rule, EventId: ['80e18005', '80E18008'], Times: 4 },
          { ...rule, EventId: ['80E18005', '80DE1801'], Times: 9 },
        ],
      });
      expect(r.config.FaultFrequency).toEqual([
        { ...rule, EventId: ['80E18005', '80E18008'], Times: 4 },
        { ...rule, EventId: ['80DE1801'], Times: 9 },
      ]);
      expect(r.warnings.join('\n')).toMatch(/80E18005 already configured/);
      expect(indexFaultCustomization(r.config).frequency.get('80E18005')?.Times).toBe(4);
    });

    it.each([
      ['not an array', { FaultFrequency: { EventId: ['80E18005'] } }],
      ['an entry that is not an object', { FaultFrequency: [rule, 3] }],
      ['a string Times', { FaultFrequency: [{ ...rule, Times: '3' }] }],
      ['a fractional TimeWindow', { FaultFrequency: [{ ...rule, TimeWindow: 60.5 }] }],
      ['a string EventId', { FaultFrequency: [{ ...rule, EventId: '80E18005' }] }],
      ['a numeric FaultHandling', { FaultFrequency: [{ ...rule, FaultHandling: 1 }] }],
    ])('falls back to the default section when it is malformed: %s', (_n, doc) => {
      const r = parse({ ...doc, FaultDuration: [] });
      expect(r.config.FaultFrequency).toEqual(DEFAULT_FAULT_CUSTOMIZATION.FaultFrequency);
      expect(r.config.FaultDuration).toEqual([]);
      expect(r.warnings).toEqual([expect.stringMatching(/^FaultFrequency malformed/)]);
    });

    it('a missing section means no rules (a Go nil slice)', () => {
      expect(parse({ FaultDuration: [] }).config.FaultFrequency).toEqual([]);
    });
  });

  describe('FaultDuration', () => {
    const rule = { EventId: ['81078603'], FaultTimeout: 30, RecoverTimeout: 120, FaultHandling: 'SeparateNPU' };

    it.each([
      ['FaultTimeout 601', { FaultTimeout: 601 }],
      ['FaultTimeout -1', { FaultTimeout: -1 }],
      ['RecoverTimeout 86401', { RecoverTimeout: 86_401 }],
      ['ManuallySeparateNPU', { FaultHandling: 'ManuallySeparateNPU' }],
    ])('ignores an entry with %s', (_n, patch) => {
      const r = parse({ FaultDuration: [{ ...rule, ...patch }] });
      expect(r.config.FaultDuration).toEqual([]);
    });

    it('accepts the range edges 0 and 600 / 86400; a missing timeout is 0', () => {
      const r = parse({ FaultDuration: [{ ...rule, FaultTimeout: 600, RecoverTimeout: 86_400 }, { EventId: ['81B18603'], FaultHandling: 'PreSeparateNPU' }] });
      expect(r.config.FaultDuration).toEqual([
        { ...rule, FaultTimeout: 600, RecoverTimeout: 86_400 },
        { EventId: ['81B18603'], FaultTimeout: 0, RecoverTimeout: 0, FaultHandling: 'PreSeparateNPU' },
      ]);
    });

    it('81078603 accepts only NotHandleFault/PreSeparateNPU/SeparateNPU; other handlings become NotHandleFault', () => {
      const r = parse({ FaultDuration: [{ ...rule, EventId: ['80E01801', '81078603'], FaultHandling: 'RestartNPU' }] });
      expect(r.config.FaultDuration).toEqual([
        { ...rule, EventId: ['80E01801'], FaultHandling: 'RestartNPU' },
        { ...rule, EventId: ['81078603'], FaultHandling: 'NotHandleFault' },
      ]);
      expect(r.warnings.join()).toMatch(/81078603 cannot be handled as RestartNPU/);
    });

    it('the 81078603 restriction does not apply to FaultFrequency (its default is ManuallySeparateNPU)', () => {
      const r = parse({ FaultFrequency: [{ EventId: ['81078603'], TimeWindow: 60, Times: 1, FaultHandling: 'ManuallySeparateNPU' }] });
      expect(r.config.FaultFrequency[0]?.FaultHandling).toBe('ManuallySeparateNPU');
    });

    it('duplicate EventIds: first valid entry wins', () => {
      const r = parse({ FaultDuration: [rule, { ...rule, FaultTimeout: 5 }] });
      expect(r.config.FaultDuration).toEqual([rule]);
    });

    it('a malformed section falls back to the default (81078603 20 s rule) without touching FaultFrequency', () => {
      const r = parse({ FaultDuration: [{ ...rule, FaultTimeout: '20' }], FaultFrequency: [] });
      expect(r.config.FaultDuration).toEqual(DEFAULT_FAULT_CUSTOMIZATION.FaultDuration);
      expect(r.config.FaultFrequency).toEqual([]);
    });
  });

  it.each([['malformed JSON', '{"GraceTolerance":'], ['a JSON array', '[]'], ['null', 'null']])('%s gives all defaults with a warning', (_n, text) => {
    const r = parseFaultCustomization(text);
    expect(r.config).toEqual(DEFAULT_FAULT_CUSTOMIZATION);
    expect(r.warnings).toHaveLength(1);
  });
});
