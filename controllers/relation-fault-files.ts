/**
 * --relation-fault-config-dir (docs/formats.md#clusterd-config-files): ClusterD's two relation-fault files
 * read once at start from a directory, as ClusterD reads /home/hwMindX
 * (component/clusterd/pkg/application/faultmanager/jobprocess/relationfault/relation_fault_processor.go loadConfig).
 * A file that is missing, not JSON or not valid keeps the shipped one (policy/faults/relation-fault-config.ts):
 * logged once and counted in clusterd_invalid_input_total{format="relation-fault-config"}.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { DEFAULT_RELATION_FAULT_CONFIG, validateRelationFaultConfig, type RelationFaultConfig } from '../policy/faults/relation-fault-config.ts';

export const RELATION_RULES_FILE = 'relationFaultCustomization.json';
export const RELATION_DURATIONS_FILE = 'faultDuration.json';

function readJson(path: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return { ok: false, reason: `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
}

/** The relation-fault configuration of `dir` (empty: the shipped one). Never throws. */
export function loadRelationFaultConfig(dir: string, log: Logger, metrics?: Metrics): RelationFaultConfig {
  if (dir === '') return DEFAULT_RELATION_FAULT_CONFIG;
  const bad = (file: string, reason: string): void => {
    log.warn('relation fault configuration file ignored; the shipped one is used', { file: join(dir, file), reason });
    metrics?.invalidInput.inc({ format: 'relation-fault-config', reason: 'invalid' });
  };
  const rules = readJson(join(dir, RELATION_RULES_FILE));
  const durations = readJson(join(dir, RELATION_DURATIONS_FILE));
  if (!rules.ok) bad(RELATION_RULES_FILE, rules.reason);
  if (!durations.ok) bad(RELATION_DURATIONS_FILE, durations.reason);
  const r = rules.ok ? rules.value : DEFAULT_RELATION_FAULT_CONFIG.rules;
  const d = durations.ok ? durations.value : DEFAULT_RELATION_FAULT_CONFIG.durations;
  // Each file is judged alone: a bad one does not discard the other.
  const rulesOk = validateRelationFaultConfig(r, DEFAULT_RELATION_FAULT_CONFIG.durations);
  const durationsOk = validateRelationFaultConfig(DEFAULT_RELATION_FAULT_CONFIG.rules, d);
  if (!rulesOk.ok) bad(RELATION_RULES_FILE, rulesOk.reason);
  if (!durationsOk.ok) bad(RELATION_DURATIONS_FILE, durationsOk.reason);
  const config: RelationFaultConfig = {
    rules: rulesOk.ok ? rulesOk.value.rules : DEFAULT_RELATION_FAULT_CONFIG.rules,
    durations: durationsOk.ok ? durationsOk.value.durations : DEFAULT_RELATION_FAULT_CONFIG.durations,
  };
  log.info('relation fault configuration read', { dir, rules: config.rules.length, windowsSeconds: config.durations.map((x) => `${x.FaultCode}=${x.TimeOutInterval}`).join(',') });
  return config;
}
