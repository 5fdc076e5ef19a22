/**
 * `cluster-system/clusterd-manual-info-cm`, written by ClusterD (docs/formats.md#manual-info): ClusterD's own
 * manual separation (N faults in a window -> ManuallySeparateNPU). Data key = node name.
 */
import { compareUtf8, goJson, goMap } from '../go-json.ts';
import { ok, parseValidated, rejected, type Parsed, type SchemaValidator } from '../parsed.ts';
import { isNpuName } from '../device-info/device-fault.ts';
import { validate as generated } from './manual-info.validators.gen.ts';

export const MANUAL_INFO_NAMESPACE = 'cluster-system';
export const MANUAL_INFO_CM_NAME = 'clusterd-manual-info-cm';

/** Fields in Go order. */
export interface ManualFaultDetail {
  readonly FaultCode: string;
  readonly FaultLevel: string;
  /** Unix ms. */
  readonly LastSeparateTime: number;
}

export interface ManualInfo {
  /** Manually separated chips of the node; null = nil slice. */
  readonly Total: readonly string[] | null;
  /** Go map chip -> details (keys sorted on output); null = nil map. */
  readonly Detail: Readonly<Record<string, readonly ManualFaultDetail[] | null>> | null;
}

// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated as SchemaValidator<ManualInfo>;

export const encodeManualInfo = (v: ManualInfo): string =>
  goJson({
    Total: v.Total === null ? null : [...v.Total],
    Detail: v.Detail === null ? null : goMap(Object.fromEntries(Object.entries(v.Detail).map(([chip, ds]) => [
      chip,
      ds === null ? null : ds.map((d) => ({ FaultCode: d.FaultCode, FaultLevel: d.FaultLevel, LastSeparateTime: d.LastSeparateTime })),
    ]))),
  });

/** Parses one node's value; chip names are checked. */
export function parseManualInfo(text: string): Parsed<ManualInfo> {
  const p = parseValidated('manual-info', text, validate);
  if (!p.ok) return p;
  const raw = p.value;
  const bad = [...(raw.Total ?? []), ...Object.keys(raw.Detail ?? {})].find((c) => !isNpuName(c));
  if (bad !== undefined) return rejected(`manual-info: bad NPU name ${JSON.stringify(bad)}`);
  const detail = raw.Detail === null ? null : Object.fromEntries(Object.entries(raw.Detail).map(([chip, ds]) => [
    chip,
    ds === null ? null : ds.map((d) => ({ FaultCode: d.FaultCode, FaultLevel: d.FaultLevel, LastSeparateTime: d.LastSeparateTime })),
  ]));
  return ok({ Total: raw.Total === null ? null : [...raw.Total], Detail: detail });
}

/** Parses the whole CM `data` (node -> ManualInfo); the first bad value rejects, naming its node. */
export function parseManualInfoData(data: Readonly<Record<string, string>> | undefined): Parsed<Record<string, ManualInfo>> {
  const out: Record<string, ManualInfo> = {};
  for (const [node, text] of Object.entries(data ?? {})) {
    const p = parseManualInfo(text);
    if (!p.ok) return rejected(`node ${node}: ${p.reason}`);
    out[node] = p.value;
  }
  return ok(out);
}

/** The CM `data`: one key per node with separated chips (Total sorted). */
export function encodeManualInfoData(byNode: Readonly<Record<string, ManualInfo>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const node of Object.keys(byNode).sort(compareUtf8)) out[node] = encodeManualInfo(byNode[node]!);
  return out;
}
