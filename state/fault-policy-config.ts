/**
 * The fault policy's configuration, read from the informer caches and kept as last good values:
 * - `kube-system/mindx-dl-fault-config` (docs/formats.md#mindx-dl-fault-config): faultCode.json / SwitchFaultCode.json re-level
 *   codes centrally, but only while the ConfigMap exists (otherwise the levels the agents wrote are
 *   trusted); faultCustomization.json sets the FaultFrequency / FaultDuration rules (the shipped
 *   defaults when the ConfigMap or the key is absent). A rejected key keeps its previous good value.
 * - `<cluster-system>/clusterd-config-cm` key `manually_separate_policy.conf` (docs/rules.md#manual.policy-config):
 *   ClusterD's own manual separation; absent = the shipped default; invalid = the last good policy,
 *   or the feature off when there never was one.
 * Every change says what changed, so the engine only re-runs what depends on it; warnings are returned
 * for the caller to log (this module does no I/O).
 */
import {
  effectiveFaultConfig,
  parseFaultConfigCm,
  type EffectiveFaultConfig,
  type FaultConfigFallback,
} from '../schemas/fault-config-cm/fault-config-cm.ts';
import { DEFAULT_SWITCH_FAULT_CODE_CONFIG } from '../schemas/fault-config-cm/switch-fault-code.ts';
import { DEFAULT_FAULT_CODE_CONFIG, encodeFaultCode } from '../schemas/fault-code/fault-code.ts';
import { DEFAULT_FAULT_CUSTOMIZATION, encodeFaultCustomization } from '../schemas/fault-customization/fault-customization.ts';
import {
  DEFAULT_MANUAL_SEPARATE_POLICY,
  MANUAL_SEPARATE_POLICY_KEY,
  MANUAL_SEPARATE_POLICY_OFF,
  encodeManualSeparatePolicy,
  parseManualSeparatePolicy,
  type ManualSeparatePolicy,
} from '../schemas/manual-separate-policy/manual-separate-policy.ts';
import type { LevelTables } from '../policy/faults/fault-level.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';

export interface PolicyConfig {
  readonly fault: EffectiveFaultConfig;
  /** Central code tables; undefined while mindx-dl-fault-config is absent (trust reported levels). */
  readonly tables: LevelTables | undefined;
  readonly manual: ManualSeparatePolicy;
}

export interface ConfigUpdate {
  /** Code tables or the central flag changed: every node must be re-levelled. */
  readonly levelsChanged: boolean;
  /** FaultFrequency / FaultDuration rules changed. */
  readonly customizationChanged: boolean;
  readonly manualChanged: boolean;
  /** One line per ignored or defaulted value, for a warn log each. */
  readonly warnings: readonly string[];
}

const BUILT_IN: FaultConfigFallback = {
  faultCode: DEFAULT_FAULT_CODE_CONFIG,
  customization: DEFAULT_FAULT_CUSTOMIZATION,
  switchFaultCode: DEFAULT_SWITCH_FAULT_CODE_CONFIG,
};

const tablesOf = (f: EffectiveFaultConfig): LevelTables | undefined =>
  f.central ? { chip: f.faultCodeTable.chip, network: f.faultCodeTable.network, switchCodes: f.switchCodeTable } : undefined;

/** Stable text of the level-relevant part, to detect changes. */
const levelsKey = (f: EffectiveFaultConfig): string =>
  `${f.central}|${encodeFaultCode(f.faultCode)}|${[...f.switchCodeTable].map(([k, v]) => `${k}=${v}`).sort().join(',')}`;

export class PolicyConfigTracker {
  private fallback: FaultConfigFallback = BUILT_IN;
  private manualGood: ManualSeparatePolicy | undefined;
  /** null = nothing seen yet. */
  private lastFaultCmRv: string | undefined | null = null;
  private lastManualText: string | undefined | null = null;
  private cur: PolicyConfig;

  constructor() {
    const fault = effectiveFaultConfig(undefined, BUILT_IN);
    this.cur = { fault, tables: undefined, manual: DEFAULT_MANUAL_SEPARATE_POLICY };
  }

  get current(): PolicyConfig { return this.cur; }

  /** mindx-dl-fault-config as cached now (undefined = absent). */
  updateFaultConfig(cm: ConfigMap | undefined): ConfigUpdate {
    const rv = cm === undefined ? undefined : `${cm.metadata?.uid}/${cm.metadata?.resourceVersion}`;
    if (rv === this.lastFaultCmRv) return { levelsChanged: false, customizationChanged: false, manualChanged: false, warnings: [] };
    this.lastFaultCmRv = rv;
    if (cm === undefined) this.fallback = BUILT_IN; // a deleted ConfigMap means "the built-in files"
    const parsed = cm === undefined ? undefined : parseFaultConfigCm(cm.data);
    const fault = effectiveFaultConfig(parsed, this.fallback);
    if (parsed !== undefined) {
      this.fallback = {
        faultCode: parsed.faultCode?.ok === true ? parsed.faultCode.value : this.fallback.faultCode,
        customization: parsed.faultCustomization?.config ?? this.fallback.customization,
        switchFaultCode: parsed.switchFaultCode?.ok === true ? parsed.switchFaultCode.value.config : this.fallback.switchFaultCode,
      };
    }
    const prev = this.cur.fault;
    const levelsChanged = levelsKey(prev) !== levelsKey(fault);
    const customizationChanged = encodeFaultCustomization(prev.customization) !== encodeFaultCustomization(fault.customization);
    this.cur = { ...this.cur, fault, tables: tablesOf(fault) };
    return { levelsChanged, customizationChanged, manualChanged: false, warnings: fault.warnings };
  }

  /** clusterd-config-cm as cached now (undefined = absent). */
  updateClusterdConfig(cm: ConfigMap | undefined): ConfigUpdate {
    const text = cm?.data?.[MANUAL_SEPARATE_POLICY_KEY];
    if (text === this.lastManualText) return { levelsChanged: false, customizationChanged: false, manualChanged: false, warnings: [] };
    this.lastManualText = text;
    const warnings: string[] = [];
    let manual: ManualSeparatePolicy;
    if (text === undefined) {
      manual = DEFAULT_MANUAL_SEPARATE_POLICY;
      this.manualGood = manual;
    } else {
      const p = parseManualSeparatePolicy(text);
      if (p.ok) {
        manual = p.value;
        this.manualGood = manual;
      } else {
        manual = this.manualGood ?? MANUAL_SEPARATE_POLICY_OFF;
        warnings.push(`${p.reason}; ${this.manualGood === undefined ? 'manual separation off (no good policy yet)' : 'last good policy kept'}`);
      }
    }
    const manualChanged = manual !== this.cur.manual && encodeManualSeparatePolicy(manual) !== encodeManualSeparatePolicy(this.cur.manual);
    this.cur = { ...this.cur, manual };
    return { levelsChanged: false, customizationChanged: false, manualChanged, warnings };
  }
}
