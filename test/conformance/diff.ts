/**
 * Field-by-field comparison of two normalised snapshots, and the allow-list check. A value absent
 * on one side is `undefined` there (an object only one side created shows as its `exists` field).
 */
import type { Snapshot } from './collect.ts';

export interface Difference {
  /** `ConfigMap mindx-dl/cluster-info-switch-0`, `Node node-a`, ... */
  readonly object: string;
  /** `data DeviceInfoCfg`, `annotation x`, `taint k:NoSchedule`, `exists`, ... */
  readonly field: string;
  readonly clusterd: string | undefined;
  readonly ours: string | undefined;
}

export function compare(clusterd: Snapshot, ours: Snapshot): Difference[] {
  const out: Difference[] = [];
  const objects = [...new Set([...clusterd.keys(), ...ours.keys()])].sort();
  for (const object of objects) {
    const a = clusterd.get(object) ?? {};
    const b = ours.get(object) ?? {};
    for (const field of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      if (a[field] !== b[field]) out.push({ object, field, clusterd: a[field], ours: b[field] });
    }
  }
  return out;
}

/** One reviewed, documented divergence. */
export interface Allowed {
  /** Short name, used in reports. */
  readonly id: string;
  readonly object: RegExp;
  readonly field: RegExp;
  /** Extra condition on the two values (default: any). */
  readonly when?: (d: Difference) => boolean;
  /** Only after these steps (default: every step). */
  readonly steps?: RegExp;
  /** The clusterd-ts flag that turns the extension off (`--flag=value`), or `none yet` with a TODO. */
  readonly flag: string;
  readonly why: string;
}

export function allowedBy(d: Difference, list: readonly Allowed[], step = ''): Allowed | undefined {
  return list.find((a) => a.object.test(d.object) && a.field.test(d.field) && (a.when === undefined || a.when(d)) && (a.steps === undefined || a.steps.test(step)));
}

const show = (v: string | undefined): string => (v === undefined ? '(absent)' : JSON.stringify(v));

/** Where two strings first differ, with some context (long JSON values are hard to eyeball). */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 40);
  return `first difference at char ${i}: clusterd …${JSON.stringify(a.slice(from, i + 60))}… ours …${JSON.stringify(b.slice(from, i + 60))}…`;
}

export function formatDifference(d: Difference): string {
  const lines = [`${d.object} [${d.field}]`, `  clusterd: ${show(d.clusterd)}`, `  ours:     ${show(d.ours)}`];
  if (d.clusterd !== undefined && d.ours !== undefined && d.clusterd.length + d.ours.length > 160) lines.push(`  ${firstDifference(d.clusterd, d.ours)}`);
  return lines.join('\n');
}
