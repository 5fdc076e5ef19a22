/**
 * Default levels the simulated node agents give a fault code when the caller names no level:
 * chip and parameter-plane codes from the shipped faultCode.json subset (docs/formats.md#fault-code-json,
 * schemas/fault-code DEFAULT_FAULT_CODE_TABLE), NodeD codes (docs/formats.md#noded-config), switch codes (docs/formats.md#switch-fault-code-json).
 */
import { DEFAULT_FAULT_CODE_TABLE, PARAMETER_PLANE_CODES, type FaultCodeTable } from '../../schemas/fault-code/fault-code.ts';
import { NPU_LEVELS_BY_SEVERITY, type NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { NODE_FAULT_LEVEL_TO_NPU, type NodeFaultLevel } from '../../schemas/node-info/node-info.ts';
import { SWITCH_LEVEL_TO_NPU, type SwitchFaultLevel } from '../../schemas/device-info/switch-info.ts';

/** A fault request that cannot be simulated (bad NPU, level or code): the caller's mistake, not the apiserver's. */
export class InvalidFaultError extends Error {
  override readonly name = 'InvalidFaultError';
}

/** Chip name prefix (`DevicePublicNamePre` default). */
export const NPU_NAME_PREFIX = 'Ascend910';
/** A5 chips (`huawei.com/npu`): `npu-<phyId>`, the ascend plugin's NPUCardNamePre. */
export const A5_NPU_NAME_PREFIX = 'npu';
export const npuName = (phyId: number): string => `${NPU_NAME_PREFIX}-${phyId}`;
/** `Ascend910-3` -> 3; also accepts a bare id (`3`). Undefined when malformed. */
export function npuPhyId(name: string): number | undefined {
  const m = /^(?:[A-Za-z][A-Za-z0-9_]*-)?(0|[1-9][0-9]{0,4})$/.exec(name);
  return m === null ? undefined : Number(m[1]);
}

export const isNpuLevel = (s: string): s is NpuFaultLevel => (NPU_LEVELS_BY_SEVERITY as readonly string[]).includes(s);

/** True for the parameter-plane codes the device plugin reports as `CardNetworkUnhealthy`. */
export const isParameterPlaneCode = (code: string): boolean => PARAMETER_PLANE_CODES.includes(code.toUpperCase());

/**
 * Level of a chip code: the table's, else the device plugin's fallback for a code with no known
 * driver severity (SeparateNPU; docs/formats.md#fault-code-json).
 */
export function defaultChipLevel(code: string, table: FaultCodeTable = DEFAULT_FAULT_CODE_TABLE): NpuFaultLevel {
  return table.chip.get(code.toUpperCase()) ?? 'SeparateNPU';
}

/** Level of a network code: the network table's, else PreSeparateNPU (docs/rules.md#levels.unknown-codes). */
export function defaultNetworkLevel(code: string, table: FaultCodeTable = DEFAULT_FAULT_CODE_TABLE): NpuFaultLevel {
  return table.network.get(code.toUpperCase()) ?? 'PreSeparateNPU';
}

/** NodeD default levels (docs/formats.md#noded-config, the codes the spec names). */
export const DEFAULT_NODE_CODE_LEVELS: Readonly<Record<string, NodeFaultLevel>> = {
  '0100000D': 'NotHandleFault',
  '0300000D': 'NotHandleFault',
  '0000001D': 'PreSeparateFault',
  '2800001F': 'PreSeparateFault',
  '08000001': 'PreSeparateFault',
  '2C000031': 'SeparateFault',
};

/** Switch default levels (docs/formats.md#switch-fault-code-json, the codes the spec names). */
export const DEFAULT_SWITCH_CODE_LEVELS: Readonly<Record<string, SwitchFaultLevel>> = {
  '[0x00f103b0,155904,na,na]': 'Separate',
  '[0x08520003,na,L2,na]': 'NotHandle',
};

/** NPU spelling -> NodeD spelling, so callers may say SeparateNPU for a node fault. */
const NPU_TO_NODE_LEVEL: Readonly<Record<string, NodeFaultLevel>> = Object.fromEntries(
  Object.entries(NODE_FAULT_LEVEL_TO_NPU).map(([node, npu]) => [npu, node as NodeFaultLevel]),
);
const NPU_TO_SWITCH_LEVEL: Readonly<Record<string, SwitchFaultLevel>> = Object.fromEntries(
  Object.entries(SWITCH_LEVEL_TO_NPU).map(([sw, npu]) => [npu, sw as SwitchFaultLevel]),
);

/** A NodeD level for `code`: the given one (NodeD or NPU spelling) or the default table's. Throws on neither. */
export function nodeLevel(code: string, level?: string): NodeFaultLevel {
  if (level !== undefined) {
    if (Object.hasOwn(NODE_FAULT_LEVEL_TO_NPU, level)) return level as NodeFaultLevel;
    const mapped = NPU_TO_NODE_LEVEL[level];
    if (mapped !== undefined) return mapped;
    throw new InvalidFaultError(`node fault level ${JSON.stringify(level)} is not one of ${Object.keys(NODE_FAULT_LEVEL_TO_NPU).join(', ')}`);
  }
  const d = DEFAULT_NODE_CODE_LEVELS[code.toUpperCase()];
  if (d === undefined) throw new InvalidFaultError(`node fault code ${code} has no default level; give one of ${Object.keys(NODE_FAULT_LEVEL_TO_NPU).join(', ')}`);
  return d;
}

/** A switch level for `code`: the given one (switch or NPU spelling) or the default table's. Throws on neither. */
export function switchLevel(code: string, level?: string): SwitchFaultLevel {
  if (level !== undefined) {
    if (Object.hasOwn(SWITCH_LEVEL_TO_NPU, level)) return level as SwitchFaultLevel;
    const mapped = NPU_TO_SWITCH_LEVEL[level];
    if (mapped !== undefined) return mapped;
    throw new InvalidFaultError(`switch fault level ${JSON.stringify(level)} is not one of ${Object.keys(SWITCH_LEVEL_TO_NPU).join(', ')}`);
  }
  const d = DEFAULT_SWITCH_CODE_LEVELS[code];
  if (d === undefined) throw new InvalidFaultError(`switch fault code ${code} has no default level; give one of ${Object.keys(SWITCH_LEVEL_TO_NPU).join(', ')}`);
  return d;
}

/** A chip/network level given by a caller, checked against the NPU vocabulary. */
export function npuLevel(level: string): NpuFaultLevel {
  if (!isNpuLevel(level)) throw new InvalidFaultError(`NPU fault level ${JSON.stringify(level)} is not one of ${NPU_LEVELS_BY_SEVERITY.join(', ')}`);
  return level;
}
