/**
 * `cluster-system/clusterd-config-cm`, key `manually_separate_policy.conf` (docs/formats.md#manual-separate-policy,
 * docs/rules.md#manual.policy-config): ClusterD's own "N hardware faults in a window -> ManuallySeparateNPU" policy, YAML.
 * A missing field takes its default; a wrongly typed or out-of-range field rejects the whole document,
 * so the caller keeps its last good policy (MANUAL_SEPARATE_POLICY_OFF when there is none yet).
 */
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import schema from './manual-separate-policy.schema.json' with { type: 'json' };
import { ok, rejected, type Parsed } from '../parsed.ts';

export const CLUSTERD_CONFIG_CM_NAMESPACE = 'cluster-system';
export const CLUSTERD_CONFIG_CM_NAME = 'clusterd-config-cm';
export const MANUAL_SEPARATE_POLICY_KEY = 'manually_separate_policy.conf';
/** ClusterD re-reads the policy every 300 s; an informer makes this immediate, the figure is kept for reference. */
export const MANUAL_SEPARATE_POLICY_RELOAD_MS = 300_000;

/** Field names as on the wire. */
export interface ManualSeparatePolicy {
  readonly enabled: boolean;
  readonly separate: { readonly fault_window_hours: number; readonly fault_threshold: number };
  /** -1 = never release automatically. */
  readonly release: { readonly fault_free_hours: number };
}

export const MANUAL_SEPARATE_POLICY_RANGES = {
  fault_window_hours: { min: 1, max: 720 },
  fault_threshold: { min: 1, max: 50 },
  fault_free_hours: { min: 1, max: 240, never: -1 },
} as const;

export const DEFAULT_MANUAL_SEPARATE_POLICY: ManualSeparatePolicy = {
  enabled: true,
  separate: { fault_window_hours: 24, fault_threshold: 3 },
  release: { fault_free_hours: 48 },
};

/** What ClusterD runs with when the policy was invalid from the start. */
export const MANUAL_SEPARATE_POLICY_OFF: ManualSeparatePolicy = { ...DEFAULT_MANUAL_SEPARATE_POLICY, enabled: false };

/** The JSON Schema of a complete, valid policy document (documentation and tests). */
export const MANUAL_SEPARATE_POLICY_SCHEMA: unknown = schema;

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function intIn(v: unknown, name: string, r: { min: number; max: number; never?: number }, def: number): Parsed<number> {
  if (v === undefined || v === null) return ok(def);
  if (typeof v !== 'number' || !Number.isInteger(v)) return rejected(`${name} must be an integer, got ${JSON.stringify(v)}`);
  if (v === r.never || (v >= r.min && v <= r.max)) return ok(v);
  return rejected(`${name} ${v} outside ${r.min}-${r.max}${r.never !== undefined ? ` (or ${r.never})` : ''}`);
}

function section(doc: Record<string, unknown>, name: string): Parsed<Record<string, unknown>> {
  const v = doc[name];
  if (v === undefined || v === null) return ok({});
  return isMap(v) ? ok(v) : rejected(`${name} must be a mapping`);
}

/** Parses the YAML text. Never throws. */
export function parseManualSeparatePolicy(text: string): Parsed<ManualSeparatePolicy> {
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 10 }) as unknown;
  } catch (e) {
    return rejected(`${MANUAL_SEPARATE_POLICY_KEY}: malformed YAML: ${(e as Error).message}`);
  }
  if (doc === null || doc === undefined) doc = {};
  if (!isMap(doc)) return rejected(`${MANUAL_SEPARATE_POLICY_KEY}: not a mapping`);
  const fail = (reason: string): Parsed<ManualSeparatePolicy> => rejected(`${MANUAL_SEPARATE_POLICY_KEY}: ${reason}`);
  const enabled = doc['enabled'] ?? DEFAULT_MANUAL_SEPARATE_POLICY.enabled;
  if (typeof enabled !== 'boolean') return fail(`enabled must be true or false, got ${JSON.stringify(enabled)}`);
  const sep = section(doc, 'separate');
  if (!sep.ok) return fail(sep.reason);
  const rel = section(doc, 'release');
  if (!rel.ok) return fail(rel.reason);
  const R = MANUAL_SEPARATE_POLICY_RANGES;
  const D = DEFAULT_MANUAL_SEPARATE_POLICY;
  const window = intIn(sep.value['fault_window_hours'], 'separate.fault_window_hours', R.fault_window_hours, D.separate.fault_window_hours);
  if (!window.ok) return fail(window.reason);
  const threshold = intIn(sep.value['fault_threshold'], 'separate.fault_threshold', R.fault_threshold, D.separate.fault_threshold);
  if (!threshold.ok) return fail(threshold.reason);
  const free = intIn(rel.value['fault_free_hours'], 'release.fault_free_hours', R.fault_free_hours, D.release.fault_free_hours);
  if (!free.ok) return fail(free.reason);
  return ok({
    enabled,
    separate: { fault_window_hours: window.value, fault_threshold: threshold.value },
    release: { fault_free_hours: free.value },
  });
}

/** The YAML text, in the layout of the shipped clusterd.yaml. */
export function encodeManualSeparatePolicy(p: ManualSeparatePolicy): string {
  return stringifyYaml({
    enabled: p.enabled,
    separate: { fault_window_hours: p.separate.fault_window_hours, fault_threshold: p.separate.fault_threshold },
    release: { fault_free_hours: p.release.fault_free_hours },
  });
}
