#!/usr/bin/env node
/**
 * kubectl-clusterd: the operator's view of and control over clusterd-ts, as a kubectl plugin
 * (`kubectl clusterd ...`). It talks only to the apiserver, with the user's kubeconfig and RBAC (never
 * the controller's port). The top floor of the layering: nothing in the controller imports cli/.
 * Exit codes: cli/errors.ts EXIT (0 ok, 1 error, 2 usage, 3 not found, 4 forbidden, 5 apiserver unreachable or credentials refused).
 */
import { Command, CommanderError, Option } from 'commander';
import { connect, whoAmI, type ConnectOptions } from './kube.ts';
import { CliError, EXIT, toCliError } from './errors.ts';
import { ago, emit, parseFormat, table } from './output.ts';
import { explainText, jobHistory, parseJobRef } from './explain.ts';
import { listFaults } from './faults.ts';
import { release } from './release.ts';
import { BREAKER_CM_NAME, breakerReset, breakerStatus, sourceLines } from './breaker.ts';
import { checkNamespace, checkNodeName } from './names.ts';

interface Globals extends ConnectOptions { readonly output?: string; readonly clusterSystemNamespace: string; readonly controllerNamespace: string }

const EXIT_HELP = `
Exit codes:
  0  success
  1  unexpected error (apiserver 5xx, unreadable data the command needs)
  2  usage error (bad arguments or flags)
  3  not found (no decision history for the job; release: an unknown node or NPU; breaker reset: no
     breaker state, an unknown scope, or nothing tripped in it)
  4  forbidden: your RBAC does not allow a request the command needs (the message names it)
  5  the apiserver cannot be reached, or refused the kubeconfig's credentials`;

export function program(): Command {
  const p = new Command('kubectl-clusterd')
    .description('Operate clusterd-ts (Ascend NPU fault handling): active faults, decision history, chip release, circuit breaker.')
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context')
    .addOption(new Option('-o, --output <format>', 'output format: json or yaml (default: a table)'))
    .option('--cluster-system-namespace <ns>', 'clusterd-ts --cluster-system-namespace (escalation state, manual-info, release requests)', 'cluster-system')
    .option('--controller-namespace <ns>', 'namespace of the controller (breaker state ConfigMap)', 'mindx-dl')
    .addHelpText('after', EXIT_HELP)
    .showHelpAfterError('(kubectl clusterd --help for usage)')
    .exitOverride();
  const g = (): Globals => {
    const o = p.opts<Globals>();
    checkNamespace('--cluster-system-namespace', o.clusterSystemNamespace);
    checkNamespace('--controller-namespace', o.controllerNamespace);
    return o;
  };
  const nowMs = (): number => Date.now();

  p.command('faults')
    .description('every active fault: source, code, level, the rule that set it, since when, and what it does to which job')
    .option('--node <node>', 'only this node')
    .option('--job <ns/name>', 'only faults on chips or nodes of this job')
    .action(async (o: { node?: string; job?: string }) => {
      const fmt = parseFormat(g().output);
      if (o.job !== undefined) parseJobRef(o.job);
      if (o.node !== undefined) checkNodeName(o.node);
      const r = await listFaults(connect(g()), { ...o, clusterSystemNamespace: g().clusterSystemNamespace, nowMs: nowMs() });
      for (const w of r.warnings) process.stderr.write(`warning: ${w}\n`);
      emit(fmt, r, () => (r.faults.length === 0 ? 'No active faults.\n' : table(
        ['node', 'npu', 'source', 'code', 'level', 'rule', 'since', 'effect'],
        r.faults.map((f) => [f.node, f.npu, f.source, f.code, f.level === f.reportedLevel || f.reportedLevel === '-' ? f.level : `${f.level} (reported ${f.reportedLevel})`, f.rule, f.since === '-' ? '-' : `${f.since} (${ago(Date.parse(f.since), nowMs())})`, f.effect]),
      )));
    });

  p.command('explain')
    .description('the decision history of a job, newest first, each with its reason chain')
    .argument('<ns/job>', 'namespace/name of the job (its PodGroup name works too)')
    .action(async (ref: string) => {
      const fmt = parseFormat(g().output);
      const { namespace, name } = parseJobRef(ref);
      const records = await jobHistory(connect(g()), namespace, name);
      if (records.length === 0) throw new CliError(`no decision recorded for ${namespace}/${name} (records are kept per job up to the history bounds and TTL)`, EXIT.notFound);
      emit(fmt, records.map((r) => ({ name: r.name, namespace: r.namespace, ...r.spec })), () => explainText(`${namespace}/${name}`, records));
    });

  p.command('release')
    .description('release manually separated NPUs of a node, whichever path separated them (device plugin key, clusterd-manual-info-cm, clusterd-ts escalation counters); records who and when')
    .argument('<node>', 'node name')
    .argument('<npu...>', 'NPU names, e.g. Ascend910-3 (at most 64; each known on the node)')
    .action(async (node: string, npus: string[]) => {
      const fmt = parseFormat(g().output);
      const client = connect(g());
      const by = await whoAmI(client);
      const r = await release(client, { node, npus, clusterSystemNamespace: g().clusterSystemNamespace, by, at: new Date(nowMs()).toISOString() });
      emit(fmt, r, () => `Released ${r.npus.join(', ')} on ${r.node} (by ${r.by} at ${r.at}):\n` + table(['path', 'released', 'note'], r.paths.map((x) => [x.path, x.released.join(',') || '-', x.note])));
    });

  const breaker = p.command('breaker').description(`the blast-radius circuit breaker (ConfigMap ${BREAKER_CM_NAME} in --controller-namespace)`);
  breaker.command('status')
    .description('each scope: tripped or not, since when, decisions held, chips/nodes/jobs counted in the sliding window (stamps that aged out are not shown) and from which source (the public-fault ConfigMap, device-info, ...), why')
    .action(async () => {
      const fmt = parseFormat(g().output);
      const s = await breakerStatus(connect(g()), g().controllerNamespace, nowMs());
      const reset = (label: string, r: unknown): string => (r === undefined ? '' : `${label}: ${typeof r === 'string' ? r : JSON.stringify(r)}\n`);
      const counted = (c: Readonly<Record<string, number>> | undefined): string => (c === undefined ? '-' : ['chips', 'nodes', 'jobs'].map((k) => String(c[k] ?? 0)).join('/'));
      const window = s.windowSeconds === undefined ? 'window: not recorded (state of an older controller), counts as stored\n' : `window: ${s.windowSeconds} s\n`;
      emit(fmt, s, () => (!s.present ? 'no breaker state\n' : (s.scopes.length === 0 ? 'nothing tripped, nothing counted in the window\n' : table(
        ['scope', 'tripped', 'since', 'held', 'chips/nodes/jobs', 'reason'],
        s.scopes.map((x) => [x.scope, x.tripped ? 'yes' : 'no', x.trippedAt ?? '-', String(x.held), counted(x.counts), x.reason || '-']),
      )) + sourceLines(s.scopes) + window + reset('last reset', s.lastReset) + reset('reset requested, not yet carried out', s.pendingReset)));
    });
  breaker.command('reset')
    .description('reset a tripped scope (default: all); the controller acts on it and records who and when')
    .argument('[scope]', '"cluster", a switch domain, or "all"', 'all')
    .action(async (scope: string) => {
      const fmt = parseFormat(g().output);
      const client = connect(g());
      const by = await whoAmI(client);
      const r = await breakerReset(client, g().controllerNamespace, scope, by, new Date(nowMs()).toISOString());
      emit(fmt, r, () => `breaker reset requested for scope ${r.scope} by ${r.by} at ${r.at}\n`);
    });
  return p;
}

export async function run(argv: readonly string[]): Promise<number> {
  const p = program();
  p.configureOutput({ writeErr: (s) => process.stderr.write(s), writeOut: (s) => process.stdout.write(s) });
  try {
    await p.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help / --version exit 0; any parse error is a usage error (commander printed it).
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const err = toCliError(e);
    process.stderr.write(`error: ${err.message}\n`);
    return err.code;
  }
}

// Not a top-level await: the packaged plugin is a CommonJS bundle (tools/kubectl-plugin/build.ts).
void run(process.argv.slice(2)).then((code) => { process.exitCode = code; });
