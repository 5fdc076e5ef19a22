/**
 * The declarative builder (controller-runtime's builder, kube-rs's Controller, as data): each flow is
 * a spec naming the ports it provides, the ports it consumes (calls), the events it emits and the
 * events it watches with how each maps to its queue keys. `buildFlows` builds the specs in dependency
 * order (a stable topological sort over the call ports; a call cycle or a port without its one
 * provider is a build error), hands each spec only the ports it declared, and records the runtime
 * graph it built (`FlowGraph`), which tools/layering checks and docs/ARCHITECTURE.md shows.
 *
 * A call port is a small typed capability owned by its provider (e.g. RecoveryStatus); an event port
 * is a Subject the builder owns: emitters get a sink, watchers a handler subscribed before any flow
 * starts, in flow order. Calls may not close a cycle; events may.
 */
import { Subject, type Subscription } from 'rxjs';
import type { Flow } from './flows.ts';

/** Where a flow sits: a node may call only ports of its own layer or below (docs/ARCHITECTURE.md#the-flow-graph). */
export type Layer = 'state' | 'reconciler' | 'controller' | 'process';
export const LAYER_RANK: Readonly<Record<Layer, number>> = { state: 0, reconciler: 1, controller: 2, process: 3 };
/**
 * `read`: a pure read of a provider's state (a snapshot, a store, a document to persist); `call`: the
 * provider's behaviour (evaluate, hand off, submit); `event`: a Subject of the builder's.
 */
export type PortKind = 'read' | 'call' | 'event';

export interface GraphNode {
  readonly name: string;
  readonly layer: Layer;
  readonly provides: readonly string[];
  readonly consumes: readonly string[];
  readonly emits: readonly string[];
  readonly watches: readonly string[];
}

/** consumer -> provider (read, call) or watcher -> emitter (event). */
export interface GraphEdge {
  readonly from: string;
  readonly to: string;
  readonly port: string;
  readonly kind: PortKind;
}

/** The runtime graph a build recorded. */
export interface FlowGraph {
  /** In lifecycle (declaration) order. */
  readonly nodes: readonly GraphNode[];
  /** Every edge the declarations make, sorted. */
  readonly edges: readonly GraphEdge[];
  /** The order the specs were built in. */
  readonly buildOrder: readonly string[];
  /** Ports and event sinks each spec took from what it was handed while it was built (`node:port`): declared and used must match. */
  readonly used: readonly string[];
  /** Ports a spec reached for without declaring them (`node:port`): always a violation. */
  readonly undeclared: readonly string[];
}

type Sinks<Ev, E extends keyof Ev> = { readonly [K in E]: (v: Ev[K]) => void };
type Handlers<Ev, W extends keyof Ev> = { readonly [K in W]: (v: Ev[K]) => void };

/** What one spec's build returns. */
export interface Built<Calls, Ev, P extends keyof Calls, W extends keyof Ev, Out> {
  /** The flow's own parts (the Manager exposes them to tests and operators). */
  readonly out: Out;
  readonly provide: Pick<Calls, P>;
  /** Events -> the flow's queue keys (or its controller's input). */
  readonly on: Handlers<Ev, W>;
  /** Its lifecycle steps (flows.ts); none for a state node. */
  readonly flow?: Omit<Flow, 'name'>;
}

export interface Spec<X, Calls, Ev, C extends keyof Calls, P extends keyof Calls, E extends keyof Ev, W extends keyof Ev, Out> {
  readonly name: string;
  readonly layer: Layer;
  readonly consumes: readonly C[];
  readonly provides: readonly P[];
  readonly emits: readonly E[];
  readonly watches: readonly W[];
  build(use: Pick<Calls, C>, emit: Sinks<Ev, E>, x: X): Built<Calls, Ev, P, W, Out>;
}

/** A spec with its key types erased (a list of them is the manager's declaration). */
export interface FlowSpec<X, Calls, Ev> {
  readonly name: string;
  readonly layer: Layer;
  readonly consumes: readonly (keyof Calls & string)[];
  readonly provides: readonly (keyof Calls & string)[];
  readonly emits: readonly (keyof Ev & string)[];
  readonly watches: readonly (keyof Ev & string)[];
  build(use: Partial<Calls>, emit: Partial<Sinks<Ev, keyof Ev>>, x: X): Built<Calls, Ev, keyof Calls, keyof Ev, unknown>;
}

/** `spec` for one catalogue of ports: infers each spec's port names, checks its build against them. */
export function specKit<X, Calls, Ev>() {
  return <const C extends keyof Calls & string, const P extends keyof Calls & string, const E extends keyof Ev & string, const W extends keyof Ev & string, Out>(
    s: Spec<X, Calls, Ev, C, P, E, W, Out>,
  ): FlowSpec<X, Calls, Ev> & { readonly __out?: Out } => s as unknown as FlowSpec<X, Calls, Ev>;
}

export class BuildError extends Error {}

/** The built flows: their parts, the lifecycle list, the recorded graph and the event subscriptions. */
export interface BuiltFlows<Ev> {
  readonly outs: ReadonlyMap<string, unknown>;
  readonly flows: readonly Flow[];
  readonly graph: FlowGraph;
  /** A watcher outside the flows (the process: the Manager) on one event port, recorded as an edge. */
  watch<K extends keyof Ev & string>(node: string, port: K, handler: (v: Ev[K]) => void): void;
  /** Subscribes every watch (flows in order, then the process's); run before the flows' start step. */
  subscribe(): void;
  unsubscribe(): void;
}

/** Stable topological order over call ports: among the ready specs, the first declared goes first. */
function buildOrder(specs: readonly { name: string; consumes: readonly string[] }[], providerOf: ReadonlyMap<string, string>): string[] {
  const pending = specs.map((s) => ({ name: s.name, needs: new Set(s.consumes.map((p) => providerOf.get(p)!).filter((n) => n !== s.name)) }));
  const order: string[] = [];
  while (pending.length > 0) {
    const i = pending.findIndex((p) => [...p.needs].every((n) => order.includes(n)));
    if (i < 0) throw new BuildError(`call ports form a cycle among: ${pending.map((p) => p.name).join(', ')}`);
    order.push(pending.splice(i, 1)[0]!.name);
  }
  return order;
}

export function buildFlows<X, Calls, Ev>(specs: readonly FlowSpec<X, Calls, Ev>[], kinds: { readonly [K in keyof Calls]: 'read' | 'call' }, x: X): BuiltFlows<Ev> {
  const names = new Set<string>();
  for (const s of specs) {
    if (names.has(s.name)) throw new BuildError(`two flows named ${s.name}`);
    names.add(s.name);
  }
  const providerOf = new Map<string, string>();
  for (const s of specs) {
    for (const p of s.provides) {
      const other = providerOf.get(p);
      if (other !== undefined) throw new BuildError(`port ${p} has two providers: ${other} and ${s.name}`);
      providerOf.set(p, s.name);
    }
  }
  for (const s of specs) for (const p of s.consumes) if (!providerOf.has(p)) throw new BuildError(`${s.name} consumes ${p}, which no flow provides`);
  const emitted = new Set(specs.flatMap((s) => s.emits));
  for (const s of specs) for (const e of s.watches) if (!emitted.has(e)) throw new BuildError(`${s.name} watches ${e}, which no flow emits`);

  const subjects = new Map<string, Subject<unknown>>();
  const subject = (e: string): Subject<unknown> => {
    let sub = subjects.get(e);
    if (sub === undefined) subjects.set(e, (sub = new Subject<unknown>()));
    return sub;
  };
  const ports = new Map<string, unknown>();
  const used: string[] = [];
  const undeclared: string[] = [];
  const built = new Map<string, Built<Calls, Ev, keyof Calls, keyof Ev, unknown>>();
  const byName = new Map(specs.map((s) => [s.name, s]));
  const order = buildOrder(specs, providerOf);
  for (const name of order) {
    const s = byName.get(name)!;
    const declared = new Set<string>(s.consumes);
    // Only the declared ports, each read recorded; reaching for another is recorded, never served.
    const use = new Proxy({} as Partial<Calls>, {
      get: (_t, key) => {
        if (typeof key !== 'string') return undefined;
        if (!declared.has(key)) { undeclared.push(`${name}:${key}`); return undefined; }
        if (!used.includes(`${name}:${key}`)) used.push(`${name}:${key}`);
        return ports.get(key);
      },
    });
    const sinks = new Map<string, (v: unknown) => void>();
    for (const e of s.emits) { const sub = subject(e); sinks.set(e, (v) => sub.next(v)); }
    const emits = new Set<string>(s.emits);
    // The same for the events it emits: a sink is taken while the spec is built, or the declaration is stale.
    const emit = new Proxy({} as Partial<Sinks<Ev, keyof Ev>>, {
      get: (_t, key) => {
        if (typeof key !== 'string') return undefined;
        if (!emits.has(key)) { undeclared.push(`${name}:${key}`); return undefined; }
        if (!used.includes(`${name}:${key}`)) used.push(`${name}:${key}`);
        return sinks.get(key);
      },
    });
    const b = s.build(use, emit, x);
    for (const p of s.provides) {
      const v = (b.provide as Record<string, unknown>)[p];
      if (v === undefined) throw new BuildError(`${name} declares port ${p} but did not provide it`);
      ports.set(p, v);
    }
    for (const w of s.watches) if (typeof (b.on as Record<string, unknown>)[w] !== 'function') throw new BuildError(`${name} watches ${w} but maps it to nothing`);
    built.set(name, b);
  }

  const edges: GraphEdge[] = [];
  const emitters = (e: string): string[] => specs.filter((s) => s.emits.includes(e as keyof Ev & string)).map((s) => s.name);
  for (const s of specs) {
    for (const p of s.consumes) edges.push({ from: s.name, to: providerOf.get(p)!, port: p, kind: kinds[p] });
    for (const e of s.watches) for (const m of emitters(e)) edges.push({ from: s.name, to: m, port: e, kind: 'event' });
  }
  const nodes: GraphNode[] = specs.map((s) => ({ name: s.name, layer: s.layer, provides: [...s.provides], consumes: [...s.consumes], emits: [...s.emits], watches: [...s.watches] }));
  const extra: Array<{ node: string; port: string; handler: (v: unknown) => void }> = [];
  const subs: Subscription[] = [];
  // Code-unit order, not localeCompare: the first collation loads ICU's collator, 2.6 MiB of the
  // node binary's data pages and 0.4 MiB of malloc for the life of the process (docs/benchmarks.md).
  const edgeKey = (e: GraphEdge): string => `${e.from} ${e.to} ${e.port}`;
  const keyed = edges.map((e) => ({ e, k: edgeKey(e) })).sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  edges.splice(0, edges.length, ...keyed.map((x) => x.e));
  // A later watch's edge goes in at its place (after its equals, as a stable sort would put it).
  const insertEdge = (e: GraphEdge): void => {
    const k = edgeKey(e);
    let lo = 0; let hi = edges.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (edgeKey(edges[mid]!) <= k) lo = mid + 1; else hi = mid; }
    edges.splice(lo, 0, e);
  };
  const graph = { nodes, edges, buildOrder: order, used, undeclared };
  return {
    outs: new Map([...built].map(([n, b]) => [n, b.out])),
    flows: specs.map((s) => ({ name: s.name, ...built.get(s.name)!.flow })),
    graph,
    watch: (node, port, handler) => {
      if (!emitted.has(port)) throw new BuildError(`${node} watches ${port}, which no flow emits`);
      if (!nodes.some((n) => n.name === node)) nodes.push({ name: node, layer: 'process', provides: [], consumes: [], emits: [], watches: [] });
      const n = nodes.find((m) => m.name === node)!;
      (n.watches as string[]).push(port);
      for (const m of emitters(port)) insertEdge({ from: node, to: m, port, kind: 'event' });
      extra.push({ node, port, handler: handler as (v: unknown) => void });
    },
    subscribe: () => {
      for (const s of specs) {
        const on = built.get(s.name)!.on as Record<string, (v: unknown) => void>;
        for (const w of s.watches) subs.push(subject(w).subscribe((v) => on[w]!(v)));
      }
      for (const e of extra) subs.push(subject(e.port).subscribe(e.handler));
    },
    unsubscribe: () => { for (const s of subs.splice(0)) s.unsubscribe(); },
  };
}

/** The graph as a mermaid flowchart (reads `-->`, calls `==>`, events `-.->`); docs/ARCHITECTURE.md holds it and a test checks the two agree. */
export function graphText(g: FlowGraph): string {
  const lines = ['flowchart LR'];
  for (const n of g.nodes) lines.push(`  ${id(n.name)}["${n.name} (${n.layer})"]`);
  for (const e of g.edges) lines.push(`  ${id(e.from)} ${ARROW[e.kind]}|${e.port}| ${id(e.to)}`);
  return lines.join('\n');
}
const id = (name: string): string => name.replace(/-/g, '_');
const ARROW: Readonly<Record<PortKind, string>> = { read: '-->', call: '==>', event: '-.->' };
