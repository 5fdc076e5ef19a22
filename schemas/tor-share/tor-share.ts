/**
 * `volcano-system/tor-share-cm`, data key `global-tor-info` (docs/formats.md#tor-share-cm, docs/rules.md#tor.share-state):
 * NSLB 2.0 shared-TOR state, written by Volcano every session (we write it because we replace
 * Volcano's rescheduling half). Value: Go `map[torIP]TorShare`; an empty map is written as `{}`.
 *
 * The input `kube-system/basic-tor-node-cm` (keys `tor_info`, `tor_level`) is user-provided; the
 * spec does not give the shape of its values, so only its name and keys are defined here.
 * Parsing follows Go `json.Unmarshal` (absent or null scalars are zero, unknown keys dropped).
 */
import { goJson } from '../go-json.ts';
import { ok, parseValidated, type Parsed } from '../parsed.ts';
import { validate as generated } from './tor-share.validators.gen.ts';

export const TOR_SHARE_CM_NAME = 'tor-share-cm';
export const TOR_SHARE_NAMESPACE = 'volcano-system';
export const GLOBAL_TOR_INFO_KEY = 'global-tor-info';
/** The user-provided TOR topology input (docs/rules.md#tor; read with a one-minute refresh delay). */
export const BASIC_TOR_NODE_CM_NAME = 'basic-tor-node-cm';
export const BASIC_TOR_NODE_NAMESPACE = 'kube-system';
export const TOR_INFO_KEY = 'tor_info';
export const TOR_LEVEL_KEY = 'tor_level';
export const MAX_GLOBAL_TOR_INFO_CHARS = 1024 * 1024;

/** `IsHealthy`: 1 = unhealthy (shared by a large-model job). */
export const TOR_HEALTH = { healthy: 0, unhealthy: 1 } as const;
/** `IsSharedTor`. */
export const TOR_SHARING = { free: 0, shared: 1, exclusive: 2 } as const;
export type TorHealth = (typeof TOR_HEALTH)[keyof typeof TOR_HEALTH];
export type TorSharing = (typeof TOR_SHARING)[keyof typeof TOR_SHARING];

/** Go `NodeJobInfo` (no tags), fields in declaration order. */
export interface NodeJobInfo {
  readonly NodeIp: string;
  readonly NodeName: string;
  /** Jobs on the node; `null` = Go nil slice (Volcano writes `[]`). */
  readonly JobName: readonly string[] | null;
}

/** Go `TorShare`: `NodeJobs` carries the json tag `nodes`. */
export interface TorShare {
  readonly IsHealthy: TorHealth;
  readonly IsSharedTor: TorSharing;
  readonly nodes: readonly NodeJobInfo[] | null;
}

/** torIP -> state. A Map, so hostile keys such as `__proto__` are inert. */
export type GlobalTorInfo = ReadonlyMap<string, TorShare>;

type Raw = Record<string, unknown>;
// ajv's code, generated at build time (tools/gen-validators.ts): no schema compiler at run time.
const validate = generated;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const node = (n: NodeJobInfo | Raw): NodeJobInfo => {
  const x = n as Raw;
  return { NodeIp: str(x.NodeIp), NodeName: str(x.NodeName), JobName: Array.isArray(x.JobName) ? x.JobName.map(String) : null };
};
const torShare = (t: TorShare | Raw): TorShare => {
  const x = t as Raw;
  return {
    IsHealthy: (x.IsHealthy === 1 ? 1 : 0),
    IsSharedTor: (x.IsSharedTor === 1 || x.IsSharedTor === 2 ? x.IsSharedTor : 0),
    nodes: Array.isArray(x.nodes) ? (x.nodes as Raw[]).map(node) : null,
  };
};

/** Parses the `global-tor-info` value; `""` and `null` give an empty map. Never throws. */
export function parseGlobalTorInfo(text: string): Parsed<GlobalTorInfo> {
  if (text === '') return ok(new Map());
  const p = parseValidated(GLOBAL_TOR_INFO_KEY, text, validate, { maxChars: MAX_GLOBAL_TOR_INFO_CHARS });
  if (!p.ok) return p;
  return ok(new Map(Object.entries((p.value ?? {}) as Record<string, Raw>).map(([k, v]) => [k, torShare(v)] as const)));
}

/** The `global-tor-info` value as Go writes it: map keys sorted, `{}` when empty. */
export function encodeGlobalTorInfo(info: GlobalTorInfo): string {
  return goJson(new Map([...info].map(([k, v]) => [k, torShare(v)] as const)));
}

/** The ConfigMap data to write (Volcano replaces the whole data map with this one key). */
export function encodeTorShareData(info: GlobalTorInfo): Record<string, string> {
  return { [GLOBAL_TOR_INFO_KEY]: encodeGlobalTorInfo(info) };
}
