/**
 * The layering is a test: the repo's import graph and write-verb/clock use checked
 * against .dependency-cruiser.cjs and tools/layering/layering.ts, with no exceptions list. The second
 * test proves the checker sees each rule on a small tree; the last ones check the runtime graph the
 * Manager's builder records (tools/layering/graph.ts) and prove each graph rule and the builder's refusals.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { report, violationKey, type Violation } from './layering.ts';
import { graphViolations, managerGraph, readDoc } from './graph.ts';
import { buildFlows, specKit, type FlowGraph, type GraphEdge, type GraphNode } from '../../controllers/wiring.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHECK = join(REPO, 'tools/layering/layering.ts');

/** Runs the checker in its own process (it loads dependency-cruiser and the TypeScript compiler). */
function check(root: string): Violation[] {
  const r = spawnSync(process.execPath, [CHECK, '--json', '--root', root], { cwd: REPO, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.stdout.trim() === '') throw new Error(`layering check crashed (${r.status}): ${r.stderr}`);
  return (JSON.parse(r.stdout) as { violations: Violation[] }).violations;
}

describe('layering', () => {
  it('has no violation', () => {
    const violations = check(REPO);
    if (violations.length > 0) console.log(report(violations));
    expect(violations.map(violationKey)).toEqual([]);
  }, 180_000);

  describe('the checker, on a small tree that breaks every rule once', () => {
    let root = '';
    beforeAll(() => {
      root = mkdtempSync(join(realpathSync(tmpdir()), 'layering-'));
      symlinkSync(realpathSync(join(REPO, 'node_modules')), join(root, 'node_modules'));
      copyFileSync(join(REPO, '.dependency-cruiser.cjs'), join(root, '.dependency-cruiser.cjs'));
      const files: Record<string, string> = {
        'tsconfig.json': JSON.stringify({ extends: join(REPO, 'tsconfig.json'), compilerOptions: { rootDir: '.', noUnusedLocals: false, noUnusedParameters: false }, include: ['*.ts', 'vocabulary', 'policy', 'schemas', 'runtime', 'state', 'reconcilers', 'actions', 'controllers'] }),
        'vocabulary/v.ts': "import { of } from 'rxjs';\nexport const v = of(1);\n",
        'runtime/kube-client.ts': 'export interface KubeClient {\n  get(p: string): string;\n  delete(p: string): string;\n}\nexport class HttpKubeClient implements KubeClient {\n  get(p: string) { return p; }\n  delete(p: string) { return p; }\n  request(m: string, p: string) { return m + p; }\n}\n',
        'runtime/configmap-writer.ts': 'export class ConfigMapWriter {\n  ensure(k: string) { return k; }\n}\n',
        'runtime/clock.ts': 'export const now = (): number => Date.now();\n',
        'runtime/wall.ts': [
          "import { asyncScheduler, type SchedulerLike } from 'rxjs';",
          'export const own = (): unknown => [Date.now(), setTimeout(() => {}, 1), asyncScheduler];',
          'export const given = (s: SchedulerLike, c: { setTimeout(f: () => void, ms: number): unknown }): unknown => [s.now(), c.setTimeout(() => {}, 1), new Date(0)];',
        ].join('\n'),
        'runtime/uses-wiring.ts': "import type { Wiring } from '../controllers/writes.ts';\nexport type W = Wiring;\n",
        'policy/p.ts': [
          "import { readFileSync } from 'node:fs';",
          "import winston from 'winston';",
          "import { of } from 'rxjs';",
          "import type { KubeClient } from '../runtime/kube-client.ts';",
          'export const p = (k?: KubeClient): unknown => [readFileSync, winston, of, k, new Date(0)];',
          'export const stamp = (): number => Date.now() + new Date().getTime();',
          'export const later = (): unknown => setTimeout(() => {}, 1);',
        ].join('\n'),
        'policy/p.test.ts': "import { readFileSync } from 'node:fs';\nexport const t = readFileSync;\n",
        'schemas/s.ts': "import { p } from '../policy/p.ts';\nexport const s = p;\n",
        'schemas/compiles.ts': "import { Ajv } from 'ajv';\nimport ucs2length from 'ajv/dist/runtime/ucs2length.js';\nexport const c: unknown = [new Ajv(), ucs2length];\n",
        'schemas/types-only.ts': "import type { ErrorObject } from 'ajv';\nexport type E = ErrorObject;\n",
        'actions/a.ts': "import { r } from '../reconcilers/r.ts';\nexport const a = (): unknown => r;\n",
        'reconcilers/r.ts': [
          "import { a } from '../actions/a.ts';",
          "import type { KubeClient } from '../runtime/kube-client.ts';",
          "import type { Wiring } from '../controllers/writes.ts';",
          "import type { Index } from '../state/index.ts';",
          'export const r = (k: KubeClient, w?: Wiring, i?: Index): unknown => [a, k.delete(\'x\'), w, i];',
        ].join('\n'),
        'runtime/uses-state.ts': "import type { Index } from '../state/index.ts';\nexport type I = Index;\n",
        'state/index.ts': [
          "import { readFileSync } from 'node:fs';",
          "import winston from 'winston';",
          "import type { KubeClient } from '../runtime/kube-client.ts';",
          "import { p } from '../policy/p.ts';",
          "import type { Wiring } from '../controllers/writes.ts';",
          'export type Index = Map<string, number>;',
          'export const i = (k?: KubeClient, w?: Wiring): unknown => [readFileSync, winston, k, p, w, Date.now()];',
        ].join('\n'),
        'controllers/writes.ts': [
          "import type { HttpKubeClient, KubeClient } from '../runtime/kube-client.ts';",
          "import type { ConfigMapWriter } from '../runtime/configmap-writer.ts';",
          'export type Wiring = number;',
          "export const w = (k: KubeClient | undefined, h: HttpKubeClient, cm: ConfigMapWriter): unknown => [k?.delete('x'), h.request('PUT', 'x'), cm.ensure('x')];",
        ].join('\n'),
        'controllers/timers.ts': [
          "import { timer, type SchedulerLike } from 'rxjs';",
          'export const later = (s: SchedulerLike): unknown => [setTimeout(() => {}, 1), s.schedule(() => {}, 1), timer(5), timer(5, s)];',
        ].join('\n'),
        'actions/clock-timer.ts': 'export const later = (c: { setInterval(f: () => void, ms: number): unknown }): unknown => c.setInterval(() => {}, 1);\n',
        'controllers/thing.controller.ts': 'export class ThingController {\n  count = 0;\n  bump(): void { this.count++; }\n}\n',
        'controllers/manager.ts': [
          "import { ThingController } from './thing.controller.ts';",
          'export class Manager {',
          '  readonly thing = new ThingController();',
          '  readonly hooks: Array<() => void> = [() => this.thing.bump()];',
          '  start(): void { this.thing.bump(); }',
          '}',
        ].join('\n'),
        'controllers/build.ts': [
          "import { ThingController } from './thing.controller.ts';",
          'export const made = new ThingController();',
          'export let shared: number | undefined;',
          "export const names = ['a'];",
        ].join('\n'),
        'controllers/reads.ts': [
          "import type { HttpKubeClient, KubeClient } from '../runtime/kube-client.ts';",
          "export const reads = (k: KubeClient, h: HttpKubeClient, m: Map<string, number>): unknown => [k.get('x'), h.request('GET', 'x'), m.delete('x'), 'a'.replace('a', 'b')];",
        ].join('\n'),
      };
      for (const [f, text] of Object.entries(files)) {
        mkdirSync(dirname(join(root, f)), { recursive: true });
        writeFileSync(join(root, f), text);
      }
    });
    afterAll(() => {
      if (root !== '') rmSync(root, { recursive: true, force: true });
    });

    it('reports exactly the violations it was given (and not a method of the Manager calling a controller, Map.delete, String.replace, request GET, timer() on an injected scheduler, the timers of an injected clock, Date.now in runtime/clock.ts, state/ reading runtime/ and policy/, ajv types and runtime helpers, or test files)', () => {
      const keys = check(root).map(violationKey).sort();
      expect(keys).toEqual([
        'actions-not-reconcilers: actions/a.ts -> reconcilers/r.ts',
        'manager-no-closures: controllers/manager.ts -> ThingController.bump',
        'no-circular: actions/a.ts -> reconcilers/r.ts',
        'no-schema-compiler: schemas/compiles.ts -> node_modules/ajv/dist/ajv.js',
        'one-clock: runtime/wall.ts -> Date.now',
        'one-clock: runtime/wall.ts -> asyncScheduler',
        'one-clock: runtime/wall.ts -> setTimeout()',
        'only-writers-write: controllers/writes.ts -> ConfigMapWriter.ensure',
        'only-writers-write: controllers/writes.ts -> HttpKubeClient.request',
        'only-writers-write: controllers/writes.ts -> KubeClient.delete',
        'policy-no-clock: policy/p.ts -> Date.now()',
        'policy-no-clock: policy/p.ts -> new Date()',
        'policy-no-clock: policy/p.ts -> setTimeout()',
        'policy-no-node-builtins: policy/p.ts -> fs',
        'policy-not-above: policy/p.ts -> runtime/kube-client.ts',
        'policy-only-rxjs: policy/p.ts -> node_modules/winston/lib/winston.js',
        'runtime-not-above: runtime/uses-state.ts -> state/index.ts',
        'runtime-not-above: runtime/uses-wiring.ts -> controllers/writes.ts',
        'schemas-not-above: schemas/s.ts -> policy/p.ts',
        'specs-share-nothing: controllers/build.ts -> made',
        'specs-share-nothing: controllers/build.ts -> shared',
        'state-no-clock: state/index.ts -> Date.now()',
        'state-no-io: state/index.ts -> fs',
        'state-no-io: state/index.ts -> node_modules/winston/lib/winston.js',
        'state-not-above: state/index.ts -> controllers/writes.ts',
        'timers-through-runtime: actions/clock-timer.ts -> setInterval()',
        'timers-through-runtime: controllers/timers.ts -> rxjs timer() without an injected scheduler',
        'timers-through-runtime: controllers/timers.ts -> scheduler.schedule()',
        'timers-through-runtime: controllers/timers.ts -> setTimeout()',
        'vocabulary-is-ground: vocabulary/v.ts -> node_modules/rxjs/dist/cjs/index.js',
        'writers-not-wiring: reconcilers/r.ts -> controllers/writes.ts',
      ]);
    }, 180_000);
  });
});

describe('the runtime graph (tools/layering/graph.ts)', () => {
  let graph: FlowGraph;
  beforeAll(async () => { graph = await managerGraph(); }, 60_000);
  const has = (from: string, to: string, port: string, kind: GraphEdge['kind']): boolean =>
    graph.edges.some((e) => e.from === from && e.to === to && e.port === port && e.kind === kind);

  it('of the Manager built as production builds it breaks no rule, and docs/ARCHITECTURE.md shows it', () => {
    const violations = graphViolations(graph, readDoc(REPO));
    if (violations.length > 0) console.log(report(violations));
    expect(violations.map(violationKey)).toEqual([]);
  });

  it('records the ports that replaced the closures: the jobs flow calls the recovery flow, which only tells it back by event', () => {
    expect(has('jobs', 'recovery-grpc', 'recoveryHandOff', 'call')).toBe(true);
    expect(has('jobs', 'recovery-grpc', 'recoveryStatus', 'read')).toBe(true);
    expect(has('jobs', 'recovery-grpc', 'redecide', 'event')).toBe(true);
    expect(has('filters', 'recovery-grpc', 'faultSubscriptions', 'read')).toBe(true);
    expect(graph.edges.filter((e) => e.from === 'recovery-grpc' && e.to === 'jobs')).toEqual([]);
    // The process only watches: it reaches into no flow.
    expect(graph.edges.filter((e) => e.from === 'manager').map((e) => e.kind)).toEqual(['event']);
    // Dependency order: a provider is built before its consumers.
    const at = (n: string): number => graph.buildOrder.indexOf(n);
    for (const e of graph.edges.filter((x) => x.kind !== 'event' && x.from !== x.to)) expect([e.from, at(e.to) < at(e.from)]).toEqual([e.from, true]);
  });

  it('the rules, on a graph that breaks each once', () => {
    const node = (name: string, layer: GraphNode['layer'], p: Partial<GraphNode> = {}): GraphNode => ({ name, layer, provides: [], consumes: [], emits: [], watches: [], ...p });
    const g: FlowGraph = {
      nodes: [
        node('a', 'controller', { provides: ['pa', 'unused'], consumes: ['pb'], emits: ['nobody'] }),
        node('b', 'controller', { provides: ['pb'], consumes: ['pa', 'stale'] }),
        node('c', 'controller', { provides: ['stale'] }),
        node('w', 'reconciler', { consumes: ['pa'], watches: ['silent'] }),
      ],
      edges: [
        { from: 'a', to: 'b', port: 'pb', kind: 'call' },
        { from: 'b', to: 'a', port: 'pa', kind: 'read' },
        { from: 'b', to: 'c', port: 'stale', kind: 'read' },
        { from: 'w', to: 'a', port: 'pa', kind: 'call' },
      ],
      buildOrder: ['a', 'b', 'c', 'w'],
      used: ['a:pb', 'b:pa', 'w:pa'],
      undeclared: ['w:pb'],
    };
    expect(graphViolations(g, 'no diagram here').map(violationKey).sort()).toEqual([
      'graph-call-cycle: a -> b',
      'graph-dead-port: a -> nobody',
      'graph-dead-port: a -> unused',
      'graph-declared-unused: a -> nobody',
      'graph-declared-unused: b -> stale',
      'graph-doc-stale: docs/ARCHITECTURE.md -> the recorded flow graph',
      'graph-no-upward-call: w -> a',
      'graph-one-provider: w -> silent',
      'graph-undeclared: w -> pb',
      'graph-writers-read-only: w -> a',
    ]);
  });

  describe('the builder (controllers/wiring.ts)', () => {
    interface Calls { readonly one: { n(): number }; readonly two: { n(): number } }
    interface Events { readonly tick: number }
    const spec = specKit<undefined, Calls, Events>();
    const kinds = { one: 'read', two: 'call' } as const;
    const provider = spec({ name: 'provider', layer: 'state', consumes: [], provides: ['one'], emits: ['tick'], watches: [], build: () => ({ out: 1, provide: { one: { n: () => 1 } }, on: {} }) });

    it('records a port a spec reaches for without declaring it, and serves it nothing', () => {
      let served: unknown = 'not read';
      const sneaky = spec({
        name: 'sneaky', layer: 'controller', consumes: [], provides: ['two'], emits: [], watches: ['tick'],
        build: (use) => {
          served = (use as Partial<Calls>).one;
          return { out: 2, provide: { two: { n: () => 2 } }, on: { tick: () => undefined } };
        },
      });
      const b = buildFlows([provider, sneaky], kinds, undefined);
      expect(served).toBeUndefined();
      expect(b.graph.undeclared).toEqual(['sneaky:one']);
      expect(graphViolations(b.graph).map(violationKey)).toContain('graph-undeclared: sneaky -> one');
    });

    it('builds providers first whatever the declared order, and refuses a call cycle, a second provider and a missing one', () => {
      const consumer = spec({ name: 'consumer', layer: 'controller', consumes: ['one'], provides: ['two'], emits: [], watches: [], build: ({ one }) => ({ out: one.n(), provide: { two: { n: () => one.n() + 1 } }, on: {} }) });
      const b = buildFlows([consumer, provider], kinds, undefined);
      expect(b.graph.buildOrder).toEqual(['provider', 'consumer']);
      expect(b.flows.map((f) => f.name)).toEqual(['consumer', 'provider']);
      expect(b.outs.get('consumer')).toBe(1);
      const loop = spec({ name: 'loop', layer: 'controller', consumes: ['two'], provides: ['one'], emits: [], watches: [], build: () => ({ out: 0, provide: { one: { n: () => 0 } }, on: {} }) });
      expect(() => buildFlows([consumer, loop], kinds, undefined)).toThrow(/cycle among: consumer, loop/);
      expect(() => buildFlows([provider, loop, consumer], kinds, undefined)).toThrow(/port one has two providers/);
      expect(() => buildFlows([consumer], kinds, undefined)).toThrow(/consumer consumes one, which no flow provides/);
    });
  });
});
