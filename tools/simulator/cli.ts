/**
 * Command line for the device plugin / NodeD simulator and fault injector:
 *   node tools/simulator/cli.ts <command> --kubeconfig .cluster/kubeconfig ...
 * Each run takes the nodes over from what is in the cluster (device-info, node-info, Node), so faults
 * injected by separate runs add up. Exit 0 ok, 1 the apiserver or the simulator failed, 2 bad arguments.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HttpKubeClient, paths, type KubeClient, type KubeObject } from '../../runtime/kube-client.ts';
import { DEVICE_INFO_NAMESPACE, deviceInfoCmName, parseDeviceInfoData } from '../../schemas/device-info/device-info.ts';
import { NODE_INFO_NAMESPACE, nodeInfoCmName } from '../../schemas/node-info/node-info.ts';
import type { ConfigMap } from './device-plugin.ts';
import { InvalidFaultError, isParameterPlaneCode } from './fault-codes.ts';
import { FAULT_KINDS, FaultInjector, type FaultKind, type InjectSpec } from './injector.ts';
import { NPU_RESOURCE, createFakeNodes, nodeNames } from './nodes.ts';
import type { SwitchMode } from './switch-state.ts';

export const USAGE = `usage: node tools/simulator/cli.ts <command> [--kubeconfig FILE] [options]

commands:
  nodes create --count N [--prefix node] [--npus 8]     create kwok nodes <prefix>-000.. with huawei.com/Ascend910
  init (--nodes a,b | --all) [--npus N] [--switch zero|enabled|absent]
                                                        write healthy device-info for the nodes (resets their faults)
  inject --node X --npu Ascend910-3 --code 80E18402 [--level SeparateNPU] [--kind npu|network]
                                                        chip or parameter-plane fault (level defaults from faultCode.json)
  inject-node-fault --node X --code 2C000031 [--level SeparateFault] [--device-type CPU] [--device-id 0]
                                                        NodeD hardware fault (mindx-dl-nodeinfo-<node>)
  not-ready --node X [--status False|Unknown] [--reason KubeletNotReady]
  ready --node X
  recover --node X [--kind npu|network|node|switch|public|not-ready] [--npu N] [--code C] [--manual]
          [--fault-id ID] [--device-type T] [--device-id N] [--chip N] [--port N]
                                                        without --code: every fault of that kind (on --npu)
  public-fault --node a[,b] --code 220001001 [--npu 0,1] [--assertion occur|once] [--fault-id ID]
               [--resource CCAE] [--namespace mindx-dl] [--name CM]
  public-fault --recover --fault-id ID [--namespace mindx-dl] [--name CM]
  switch-fault --node X --code '[0x00f103b0,155904,na,na]' [--level Separate] [--chip 0] [--port 0] [--recover]
  show --node X                                         print the device-info and node-info CMs and the Node's NPU state

--kubeconfig defaults to $KUBECONFIG, else .cluster/kubeconfig.`;

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface CliIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

const OPTIONS = {
  kubeconfig: { type: 'string' }, help: { type: 'boolean', short: 'h' },
  count: { type: 'string' }, prefix: { type: 'string' }, npus: { type: 'string' },
  nodes: { type: 'string' }, all: { type: 'boolean' }, switch: { type: 'string' },
  node: { type: 'string' }, npu: { type: 'string' }, code: { type: 'string' }, level: { type: 'string' }, kind: { type: 'string' },
  'device-type': { type: 'string' }, 'device-id': { type: 'string' }, status: { type: 'string' }, reason: { type: 'string' },
  manual: { type: 'boolean' }, 'fault-id': { type: 'string' }, chip: { type: 'string' }, port: { type: 'string' },
  assertion: { type: 'string' }, resource: { type: 'string' }, namespace: { type: 'string' }, name: { type: 'string' }, recover: { type: 'boolean' },
} as const;
type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

/** Options each command accepts (besides --kubeconfig and --help). */
const ALLOWED: Readonly<Record<string, readonly (keyof Values)[]>> = {
  'nodes create': ['count', 'prefix', 'npus'],
  init: ['nodes', 'all', 'npus', 'switch'],
  inject: ['node', 'npu', 'code', 'level', 'kind', 'device-type', 'device-id', 'chip', 'port', 'fault-id', 'resource', 'namespace', 'name', 'reason'],
  'inject-node-fault': ['node', 'code', 'level', 'device-type', 'device-id'],
  'not-ready': ['node', 'status', 'reason'],
  ready: ['node'],
  recover: ['node', 'kind', 'npu', 'code', 'manual', 'fault-id', 'device-type', 'device-id', 'chip', 'port', 'namespace', 'name'],
  'public-fault': ['node', 'npu', 'code', 'assertion', 'fault-id', 'resource', 'namespace', 'name', 'recover'],
  'switch-fault': ['node', 'code', 'level', 'chip', 'port', 'recover'],
  show: ['node'],
};

const required = (v: Values, k: keyof Values): string => {
  const x = v[k];
  if (typeof x !== 'string' || x === '') throw new UsageError(`--${k} is required`);
  return x;
};
const int = (v: Values, k: keyof Values, min = 0): number | undefined => {
  const x = v[k];
  if (x === undefined) return undefined;
  if (typeof x !== 'string' || !/^\d+$/.test(x) || Number(x) < min) throw new UsageError(`--${k} must be an integer >= ${min}, got ${JSON.stringify(x)}`);
  return Number(x);
};
const csv = (s: string | undefined): string[] => (s === undefined ? [] : s.split(',').map((x) => x.trim()).filter((x) => x !== ''));
const oneOf = <T extends string>(v: string | undefined, allowed: readonly T[], what: string): T | undefined => {
  if (v === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw new UsageError(`--${what} must be one of ${allowed.join('|')}, got ${JSON.stringify(v)}`);
  return v as T;
};
const opt = <K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } => (v === undefined ? {} : ({ [k]: v } as { [P in K]?: V }));

function parse(argv: readonly string[]): { command: string; values: Values } {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const values = parsed.values as Values;
  const pos = parsed.positionals;
  if (values.help === true && pos.length === 0) return { command: 'help', values };
  if (pos.length === 0) throw new UsageError('no command given');
  const command = pos[0] === 'nodes' ? `nodes ${pos[1] ?? ''}`.trim() : pos[0]!;
  const extra = pos.slice(command.split(' ').length);
  if (ALLOWED[command] === undefined) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
  const allowed = new Set<string>([...ALLOWED[command], 'kubeconfig', 'help']);
  const bad = Object.keys(values).find((k) => !allowed.has(k));
  if (bad !== undefined) throw new UsageError(`${command} does not take --${bad}`);
  return { command: values.help === true ? 'help' : command, values };
}

function kubeconfigPath(values: Values, env: NodeJS.ProcessEnv): string {
  const file = values.kubeconfig ?? env.KUBECONFIG ?? '.cluster/kubeconfig';
  if (!existsSync(file)) throw new UsageError(`kubeconfig ${file} not found (start a cluster with make cluster-up, or pass --kubeconfig)`);
  return file;
}

type NodeObj = KubeObject & { status?: { capacity?: Record<string, string>; allocatable?: Record<string, string>; conditions?: Array<{ type: string; status: string; reason?: string }> } };

async function initNodes(inj: FaultInjector, v: Values): Promise<unknown[]> {
  if ((v.all === true) === (v.nodes !== undefined)) throw new UsageError('init needs exactly one of --nodes a,b and --all');
  const switchMode = oneOf<SwitchMode>(v.switch, ['absent', 'zero', 'enabled'], 'switch');
  const npus = int(v, 'npus', 1);
  const nodes = v.all === true
    ? (await inj.client.list<NodeObj>(paths.nodes())).items.filter((n) => n.status?.capacity?.[NPU_RESOURCE] !== undefined)
    : await Promise.all(csv(v.nodes).map(async (name) => (await inj.client.getOrUndefined<NodeObj>(paths.node(name))) ?? { metadata: { name } }));
  if (nodes.length === 0) throw new UsageError(v.all === true ? 'no node has huawei.com/Ascend910 capacity' : '--nodes is empty');
  const specs = nodes.map((n) => {
    const cap = Number(n.status?.capacity?.[NPU_RESOURCE]);
    return { name: n.metadata!.name!, npus: npus ?? (Number.isInteger(cap) && cap > 0 ? cap : 8), ...opt('switchMode', switchMode) };
  });
  const acks = await inj.addNodes(specs);
  return acks.map((a) => ({ node: a.node, name: a.name, resourceVersion: a.resourceVersion, atMs: a.atMs, allocatable: a.allocatable?.count }));
}

async function show(client: KubeClient, node: string): Promise<unknown> {
  const [di, ni, n] = await Promise.all([
    client.getOrUndefined<ConfigMap>(paths.configMap(DEVICE_INFO_NAMESPACE, deviceInfoCmName(node))),
    client.getOrUndefined<ConfigMap>(paths.configMap(NODE_INFO_NAMESPACE, nodeInfoCmName(node))),
    client.getOrUndefined<NodeObj>(paths.node(node)),
  ]);
  const brief = (cm: ConfigMap | undefined): unknown => cm === undefined ? null : {
    namespace: cm.metadata?.namespace, name: cm.metadata?.name, resourceVersion: cm.metadata?.resourceVersion, labels: cm.metadata?.labels, data: cm.data,
  };
  const parsed = di === undefined ? undefined : parseDeviceInfoData(di.data, Date.now());
  return {
    deviceInfo: brief(di),
    deviceInfoCheck: parsed === undefined ? null : parsed.ok
      ? { valid: true, available: parsed.value.lists.available, unhealthy: parsed.value.lists.unhealthy, networkUnhealthy: parsed.value.lists.networkUnhealthy, recovering: parsed.value.lists.recovering, faults: parsed.value.lists.faults, manuallySeparateNpu: parsed.value.manuallySeparateNpu }
      : { valid: false, reason: parsed.reason },
    nodeInfo: brief(ni),
    node: n === undefined ? null : {
      capacity: n.status?.capacity?.[NPU_RESOURCE], allocatable: n.status?.allocatable?.[NPU_RESOURCE],
      ready: n.status?.conditions?.find((c) => c.type === 'Ready') ?? null, kwokManaged: n.metadata?.annotations?.['kwok.x-k8s.io/node'] !== undefined,
    },
  };
}

function injectSpec(command: string, v: Values): InjectSpec {
  const node = required(v, 'node');
  if (command === 'inject-node-fault') {
    return { kind: 'node', node, code: required(v, 'code'), ...opt('level', v.level), ...opt('deviceType', v['device-type']), ...opt('deviceId', int(v, 'device-id')) };
  }
  const code = v.code;
  const kind = oneOf<FaultKind>(v.kind, FAULT_KINDS, 'kind') ?? (code !== undefined && isParameterPlaneCode(code) ? 'network' : 'npu');
  if (kind === 'npu' || kind === 'network') required(v, 'npu');
  if (kind !== 'not-ready') required(v, 'code');
  return {
    kind, node, ...opt('npu', v.npu), ...opt('code', code), ...opt('level', v.level), ...opt('deviceType', v['device-type']), ...opt('deviceId', int(v, 'device-id')),
    ...opt('switchChipId', int(v, 'chip')), ...opt('switchPortId', int(v, 'port')), ...opt('faultId', v['fault-id']), ...opt('resource', v.resource),
    ...opt('namespace', v.namespace), ...opt('name', v.name), ...opt('reason', v.reason),
  };
}

async function execute(command: string, v: Values, inj: FaultInjector): Promise<unknown> {
  switch (command) {
    case 'nodes create': {
      const count = int(v, 'count', 1);
      if (count === undefined) throw new UsageError('--count is required');
      const names = nodeNames(count, v.prefix ?? 'node');
      const npus = int(v, 'npus', 1) ?? 8;
      await createFakeNodes(inj.client, names.map((name) => ({ name, npus })));
      return { nodes: names, npus };
    }
    case 'init':
      return initNodes(inj, v);
    case 'inject':
    case 'inject-node-fault':
      return inj.inject(injectSpec(command, v));
    case 'not-ready': {
      const status = oneOf(v.status, ['False', 'Unknown'] as const, 'status');
      return inj.inject({ kind: 'not-ready', node: required(v, 'node'), ...opt('level', status === 'Unknown' ? 'Unknown' : undefined), ...opt('reason', v.reason) });
    }
    case 'ready':
      return inj.recover({ kind: 'not-ready', node: required(v, 'node') });
    case 'recover': {
      const kind = oneOf<FaultKind>(v.kind, FAULT_KINDS, 'kind') ?? 'npu';
      if (kind === 'public') required(v, 'fault-id');
      return inj.recover({
        kind, node: required(v, 'node'), ...opt('npu', v.npu), ...opt('code', v.code), ...opt('releaseManual', v.manual),
        ...opt('faultId', v['fault-id']), ...opt('deviceType', v['device-type']), ...opt('deviceId', int(v, 'device-id')),
        ...opt('switchChipId', int(v, 'chip')), ...opt('switchPortId', int(v, 'port')), ...opt('namespace', v.namespace), ...opt('name', v.name),
      });
    }
    case 'public-fault': {
      if (v.recover === true) {
        return inj.publicFaults.recover(required(v, 'fault-id'), { ...opt('namespace', v.namespace), ...opt('name', v.name) });
      }
      const assertion = oneOf(v.assertion, ['occur', 'once'] as const, 'assertion');
      const npus = csv(v.npu);
      return inj.publicFaults.send({
        code: required(v, 'code'), targets: csv(required(v, 'node')).map((node) => ({ node, ...(npus.length > 0 ? { npus } : {}) })),
        ...opt('assertion', assertion), ...opt('faultId', v['fault-id']), ...opt('resource', v.resource), ...opt('namespace', v.namespace), ...opt('name', v.name),
      });
    }
    case 'switch-fault': {
      const base = { kind: 'switch' as const, node: required(v, 'node'), ...opt('switchChipId', int(v, 'chip')), ...opt('switchPortId', int(v, 'port')) };
      if (v.recover === true) return inj.recover({ ...base, ...opt('code', v.code) });
      return inj.inject({ ...base, code: required(v, 'code'), ...opt('level', v.level) });
    }
    case 'show':
      return show(inj.client, required(v, 'node'));
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

/** Runs one command; returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo = { out: (l) => console.log(l), err: (l) => console.error(l) }, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let inj: FaultInjector | undefined;
  try {
    const { command, values } = parse(argv);
    if (command === 'help') {
      io.out(USAGE);
      return 0;
    }
    inj = new FaultInjector(HttpKubeClient.fromFile(kubeconfigPath(values, env)));
    const result = await execute(command, values, inj);
    await inj.close();
    io.out(JSON.stringify(result, null, 2));
    return 0;
  } catch (e) {
    inj?.devicePlugin.close();
    inj?.nodeD.close();
    if (e instanceof UsageError || e instanceof InvalidFaultError) {
      io.err(`error: ${e.message}\n\n${USAGE}`);
      return 2;
    }
    io.err(`error: ${(e as Error).message}`);
    return 1;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // exit at once: undici keeps idle apiserver connections open for seconds otherwise.
  process.exit(await runCli(process.argv.slice(2)));
}
