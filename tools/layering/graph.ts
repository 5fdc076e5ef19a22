/**
 * The runtime graph's rules: the graph the builder recorded (controllers/wiring.ts FlowGraph, of the
 * Manager built as production builds it) checked beside the import graph. Edges go consumer ->
 * provider (`read`, `call`) or watcher -> emitter (`event`).
 *
 * - `graph-undeclared`: a spec reached for a port it did not declare (the builder served nothing).
 * - `graph-declared-unused`: a spec declared a port it never read, or an event it never took the sink of,
 *   while it was built (a stale declaration).
 * - `graph-one-provider`: every port consumed has exactly one provider; every event watched has an emitter.
 * - `graph-dead-port`: a port provided or an event emitted that nobody consumes or watches.
 * - `graph-no-upward-call`: a call goes to a flow of the same layer or below (state < reconciler <
 *   controller < process); reads may cross layers (a snapshot), events go anywhere.
 * - `graph-writers-read-only`: state and reconciler flows call no flow's behaviour: they read and watch.
 * - `graph-call-cycle`: reads and calls between flows are acyclic (events may close cycles).
 * - `graph-doc-stale`: docs/ARCHITECTURE.md shows the graph as recorded.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { graphText, LAYER_RANK, type FlowGraph } from '../../controllers/wiring.ts';

/** One broken rule (the shape of layering.ts's Violation). */
export interface GraphViolation {
  readonly rule: string;
  readonly from: string;
  readonly to: string;
  readonly at?: string;
}

export function graphViolations(g: FlowGraph, doc?: string): GraphViolation[] {
  const out: GraphViolation[] = [];
  const v = (rule: string, from: string, to: string, at?: string): void => { out.push({ rule, from, to, ...(at === undefined ? {} : { at }) }); };
  const layer = new Map(g.nodes.map((n) => [n.name, n.layer]));
  for (const u of g.undeclared) { const [node = '', port = ''] = u.split(':'); v('graph-undeclared', node, port); }
  for (const n of g.nodes) {
    for (const p of [...n.consumes, ...n.emits]) if (n.layer !== 'process' && !g.used.includes(`${n.name}:${p}`)) v('graph-declared-unused', n.name, p);
  }
  const providers = (p: string): string[] => g.nodes.filter((n) => n.provides.includes(p)).map((n) => n.name);
  const emitters = (e: string): string[] => g.nodes.filter((n) => n.emits.includes(e)).map((n) => n.name);
  for (const n of g.nodes) {
    for (const p of n.consumes) if (providers(p).length !== 1) v('graph-one-provider', n.name, p, `providers: ${providers(p).join(', ') || 'none'}`);
    for (const e of n.watches) if (emitters(e).length === 0) v('graph-one-provider', n.name, e, 'no emitter');
    for (const p of n.provides) if (!g.nodes.some((m) => m.consumes.includes(p))) v('graph-dead-port', n.name, p);
    for (const e of n.emits) if (!g.nodes.some((m) => m.watches.includes(e))) v('graph-dead-port', n.name, e);
  }
  for (const e of g.edges) {
    if (e.kind !== 'call') continue;
    const from = layer.get(e.from) ?? 'process';
    const to = layer.get(e.to) ?? 'process';
    if (LAYER_RANK[from] < LAYER_RANK[to]) v('graph-no-upward-call', e.from, e.to, `${e.port}: ${from} -> ${to}`);
    if (from === 'state' || from === 'reconciler') v('graph-writers-read-only', e.from, e.to, e.port);
  }
  for (const cycle of callCycles(g)) v('graph-call-cycle', cycle[0]!, cycle[1]!, cycle.join(' -> '));
  if (doc !== undefined && !doc.includes(`\`\`\`mermaid\n${graphText(g)}\n\`\`\``)) v('graph-doc-stale', 'docs/ARCHITECTURE.md', 'the recorded flow graph', 'regenerate: node tools/layering/layering.ts --graph');
  return out;
}

/** One cycle per strongly connected set of flows over read and call edges (self-edges count). */
function callCycles(g: FlowGraph): string[][] {
  const next = new Map<string, string[]>();
  for (const e of g.edges) if (e.kind !== 'event') next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const cycles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (n: string): void => {
    if (onPath.has(n)) { cycles.push([...path.slice(path.indexOf(n)), n]); return; }
    if (done.has(n)) return;
    onPath.add(n);
    path.push(n);
    for (const m of next.get(n) ?? []) visit(m);
    path.pop();
    onPath.delete(n);
    done.add(n);
  };
  for (const n of g.nodes) visit(n.name);
  return cycles;
}

/**
 * The Manager built as production builds it (controllers/build.ts through `new Manager`), on the
 * in-memory apiserver and a manual clock: nothing starts, only the graph is read.
 */
export async function managerGraph(): Promise<FlowGraph> {
  const [{ Manager }, { parseOptions }, { silentLogger }, { Metrics }, { MemoryApiServer }, { ManualClock }] = await Promise.all([
    import('../../controllers/manager.ts'), import('../../controllers/options.ts'), import('../../telemetry/logger.ts'),
    import('../../telemetry/metrics.ts'), import('../../test/support/sim/memory-apiserver.ts'), import('../../test/support/manual-clock.ts'),
  ]);
  const server = new MemoryApiServer();
  try {
    const m = new Manager({
      client: server.client('clusterd-ts'), clock: new ManualClock(0), log: silentLogger, metrics: new Metrics({ processMetrics: false }),
      options: parseOptions(['--http-port=0', '--grpc-port=0'], {}),
    });
    return m.graph;
  } finally {
    server.close();
  }
}

export const ARCHITECTURE_DOC = 'docs/ARCHITECTURE.md';
export const readDoc = (root: string): string => readFileSync(join(root, ARCHITECTURE_DOC), 'utf8');
