import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metrics } from '../telemetry/metrics.ts';
import { recordingLogger, type LogLine } from '../test/support/fault-policy-test-kit.ts';
import { DEFAULT_RELATION_FAULT_CONFIG } from '../policy/faults/relation-fault-config.ts';
import { loadRelationFaultConfig, RELATION_DURATIONS_FILE, RELATION_RULES_FILE } from './relation-fault-files.ts';

describe('--relation-fault-config-dir (ClusterD\'s /home/hwMindX files)', () => {
  const dir = (files: Record<string, string>): string => {
    const d = mkdtempSync(join(tmpdir(), 'relcfg-'));
    for (const [k, v] of Object.entries(files)) writeFileSync(join(d, k), v);
    return d;
  };

  it('empty: the shipped files', () => {
    expect(loadRelationFaultConfig('', recordingLogger([]))).toBe(DEFAULT_RELATION_FAULT_CONFIG);
  });

  it('reads both files; a shorter faultDuration.json shortens the windows', () => {
    const durations = [{ FaultCode: '[0x08520003,na,L2,na]', FaultType: 'faultSwitch', TimeOutInterval: 8 }];
    const c = loadRelationFaultConfig(dir({ [RELATION_RULES_FILE]: JSON.stringify(DEFAULT_RELATION_FAULT_CONFIG.rules), [RELATION_DURATIONS_FILE]: JSON.stringify(durations) }), recordingLogger([]));
    expect(c).toEqual({ rules: DEFAULT_RELATION_FAULT_CONFIG.rules, durations });
  });

  it('a missing or invalid file keeps the shipped one, logged and counted; the other file is still read', async () => {
    const lines: LogLine[] = [];
    const metrics = new Metrics({ processMetrics: false });
    const durations = [{ FaultCode: '81078603', FaultType: 'faultDevice', TimeOutInterval: 20 }];
    const c = loadRelationFaultConfig(dir({ [RELATION_RULES_FILE]: '[{"TriggerFault":"x"}]', [RELATION_DURATIONS_FILE]: JSON.stringify(durations) }), recordingLogger(lines), metrics);
    expect(c).toEqual({ rules: DEFAULT_RELATION_FAULT_CONFIG.rules, durations });
    const none = loadRelationFaultConfig(dir({}), recordingLogger(lines), metrics);
    expect(none).toEqual(DEFAULT_RELATION_FAULT_CONFIG);
    expect(lines.filter((l) => l.msg === 'relation fault configuration file ignored; the shipped one is used')).toHaveLength(3);
    expect((await metrics.invalidInput.get()).values.find((v) => v.labels.format === 'relation-fault-config')?.value).toBe(3);
  });
});
