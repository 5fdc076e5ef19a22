/**
 * The layering check (the architecture's layers kept by a test, not by review): dependency-cruiser with the repo's .dependency-cruiser.cjs for
 * the import graph, plus two rules an import graph cannot see, checked on the TypeScript AST:
 *
 * - `only-writers-write`: the write verbs of the kube client (KubeClient.create/replace/patch/delete,
 *   HttpKubeClient's `request` with any method but a literal 'GET') and ConfigMapWriter.ensure are used only in
 *   reconcilers/, actions/ and runtime/ (the client and its write helpers). Found by the receiver's
 *   type, so `Map.delete` or `String.replace` never count. tools/ and tests are not checked.
 * - `policy-no-clock`: policy/ reads no clock and schedules nothing itself (Date.now(), new Date(),
 *   performance.now(), process.hrtime, setTimeout/setInterval/setImmediate); time reaches it as a
 *   parameter or an injected RxJS scheduler.
 * - `state-no-clock`: the same for state/ (indexes and stores take time as a parameter).
 * - `timers-through-runtime`: controllers/, reconcilers/ and actions/ arm no timer of their own
 *   (one mechanism for time, so tests drive every timer). Every delay goes through the runtime's work queue
 *   (runtime/timer-loop.ts, WorkQueue.addAfter, the rate limiter) or the FSM driver on an injected
 *   scheduler: no setTimeout/setInterval/setImmediate (global or as a method, e.g. a QueueClock's),
 *   no `schedule` call on an RxJS scheduler, no RxJS time operator (timer, delay, auditTime, ...)
 *   without an injected scheduler argument.
 * - `one-clock`: the controller has one clock, runtime/clock.ts, injected once (the Manager hands it
 *   to every part): no other product module reads the wall clock (Date.now, new Date(),
 *   performance.now(), process.hrtime) or arms a timer of its own (setTimeout/setInterval/
 *   setImmediate, AbortSignal.timeout, RxJS's asyncScheduler/asapScheduler), so a test on a manual clock runs the whole
 *   controller in virtual time. cli/ (the operator's program) and tools/ are not the controller.
 *   ONE_CLOCK_ALLOWED lists the few real-time uses it keeps, each with its reason; policy/, state/,
 *   controllers/, reconcilers/ and actions/ are held by the rules above as well.
 *
 * - the runtime graph's rules (`graph-*`, tools/layering/graph.ts) on the graph the Manager's builder
 *   records; `manager-no-closures`: no closure in controllers/manager.ts reaches into a controller;
 *   `specs-share-nothing`: controllers/build.ts keeps no controller and no mutable binding at module scope.
 *
 * There is no exceptions list for the other rules: any violation fails. `node tools/layering/layering.ts` prints the
 * report (exit 1 on any violation); `--json` prints {violations}; `--root DIR` checks another tree
 * (the self-test's; the graph rules are this repo's); `--graph` prints the recorded graph (mermaid).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { graphViolations, managerGraph, readDoc } from './graph.ts';
import { graphText } from '../../controllers/wiring.ts';

export interface Violation {
  readonly rule: string;
  readonly from: string;
  readonly to: string;
  /** Where, for the report (`file:line`); not part of the identity, so edits above it do not churn the baseline. */
  readonly at?: string;
}

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Product code; test files and test/ are excluded by the config (dependency rules) and below (AST rules). */
export const CHECKED_ROOTS = ['main.ts', 'vocabulary', 'controllers', 'reconcilers', 'actions', 'policy', 'runtime', 'state', 'schemas', 'telemetry', 'grpc', 'cli', 'tools'];
/** cli/ is kubectl-clusterd, the operator's own program (their RBAC), not the controller: its writes are the user's. */
const WRITERS = /^(reconcilers|actions|runtime|tools|cli)\//;
const isTestFile = (f: string): boolean => /\.test\.ts$/.test(f) || f.startsWith('test/');

export const violationKey = (v: Pick<Violation, 'rule' | 'from' | 'to'>): string => `${v.rule}: ${v.from} -> ${v.to}`;

/** Import-graph rules of .dependency-cruiser.cjs (cycles reported once per module in the cycle). */
export function dependencyViolations(root: string): Violation[] {
  const roots = CHECKED_ROOTS.filter((r) => existsSync(join(root, r)));
  const cli = join(REPO, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');
  const r = spawnSync(process.execPath, [cli, '--config', '.dependency-cruiser.cjs', '--output-type', 'json', ...roots], { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`dependency-cruiser failed (${r.status}): ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { summary: { violations: Array<{ rule: { name: string }; from: string; to: string; cycle?: Array<{ name: string }> }> } };
  // A library is named from node_modules/ on, wherever node_modules really is (a symlinked one resolves elsewhere).
  const lib = (p: string): string => p.replace(/^.*?(?=node_modules\/)/, '');
  return out.summary.violations.map((v) => ({
    rule: v.rule.name,
    from: v.from,
    to: lib(v.to),
    ...(v.cycle !== undefined ? { at: `cycle ${[v.from, ...v.cycle.map((c) => c.name)].join(' -> ')}` } : {}),
  }));
}

const WRITE_METHODS: Record<string, ReadonlySet<string>> = {
  'runtime/kube-client.ts#KubeClient': new Set(['create', 'replace', 'patch', 'delete']),
  'runtime/kube-client.ts#HttpKubeClient': new Set(['create', 'replace', 'patch', 'delete', 'request']),
  'runtime/configmap-writer.ts#ConfigMapWriter': new Set(['ensure']),
};
const TIMERS = new Set(['setTimeout', 'setInterval', 'setImmediate']);
/** The floors that must leave time to the runtime. */
const NO_PRIVATE_TIMERS = /^(controllers|reconcilers|actions)\//;
/** Files held to `one-clock`: the controller's product code (not cli/, tools/ or tests). */
const ONE_CLOCK_FILES = /^main\.ts$|^(vocabulary|schemas|policy|runtime|state|reconcilers|actions|controllers|telemetry|grpc)\//;
/** RxJS's real-time schedulers: a product module takes the clock's scheduler instead. */
const RX_REAL_SCHEDULERS = new Set(['asyncScheduler', 'asapScheduler', 'animationFrameScheduler']);
/**
 * The real-time uses `one-clock` keeps: `file` -> what it may use, and why. Nothing here decides
 * what the controller does to the cluster.
 */
export const ONE_CLOCK_ALLOWED: Readonly<Record<string, { readonly uses: readonly string[]; readonly why: string }>> = {
  // The one clock itself.
  'runtime/clock.ts': { uses: ['Date.now', 'setTimeout()', 'asyncScheduler'], why: 'realClock: the process\'s real time (main.ts)' },
  'runtime/controller-loop.ts': {
    uses: ['performance.now()', 'Date.now', 'setTimeout()'],
    why: 'reconcile durations for the metrics histogram (a monotonic real timer); idle() waits in real time for real I/O to drain (tests, benchmarks)',
  },
  'runtime/kube-client.ts': { uses: ['Date.now', 'AbortSignal.timeout()'], why: 'a request\'s timeout and the HTTP connection pool\'s age: apiserver I/O stays real' },
  'reconcilers/job-decisions.reconciler.ts': { uses: ['performance.now()'], why: 'a decision\'s latency stages, logged and recorded, never read back' },
  'actions/job-action-executor.ts': { uses: ['performance.now()'], why: 'the deletions\' latency, logged and recorded, never read back' },
  'telemetry/http-server.ts': { uses: ['Date.now'], why: 'the HTTP server (real I/O) limits its own log lines on refused requests' },
  'grpc/server.ts': { uses: ['setTimeout()'], why: 'a shutdown\'s grace before connections are closed by force (socket I/O)' },
  'grpc/listener.ts': { uses: ['setTimeout()'], why: 'how long a new connection may take to send its first bytes (socket I/O)' },
  // Test kits beside the code they test (not loaded by the controller).
  'grpc/stub-handlers.ts': { uses: ['Date.now', 'setTimeout()'], why: 'test kit: waits for a stub server\'s calls in real time' },
  'grpc/fuzz-kit.ts': { uses: ['Date.now'], why: 'test kit: a fuzz seed' },
  'schemas/fuzz/fuzz-kit.ts': { uses: ['Date.now'], why: 'test kit: a fuzz seed' },
};

/** The process's lifecycle: it wires nothing, so none of its closures may reach into a controller (controllers/build.ts does the wiring). */
const MANAGER_FILE = 'controllers/manager.ts';
/** The flows' declarations: each spec's build sees only its declared ports, so nothing at module scope may carry a controller between specs. */
const BUILD_FILE = 'controllers/build.ts';
/**
 * `specs-share-nothing`: a mutable module binding (`let`, `var`) or a module-scope controller in
 * controllers/build.ts, the one way a spec's closure could reach a controller another spec built.
 */
function sharedBindings(sf: ts.SourceFile, controllerClassOf: (e: ts.Expression) => string | undefined, file: string): Violation[] {
  const out: Violation[] = [];
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st)) continue;
    const mutable = (st.declarationList.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const)) !== ts.NodeFlags.Const;
    for (const d of st.declarationList.declarations) {
      const name = d.name.getText(sf);
      const holdsController = ts.isIdentifier(d.name) && controllerClassOf(d.name) !== undefined;
      if (mutable || holdsController) out.push({ rule: 'specs-share-nothing', from: file, to: name, at: `${file}:${sf.getLineAndCharacterOfPosition(d.getStart(sf)).line + 1}` });
    }
  }
  return out;
}

/** Inside an arrow function or a function expression (a closure), not a method body. */
function inClosure(n: ts.Node): boolean {
  for (let p = n.parent; p !== undefined; p = p.parent) {
    if (ts.isArrowFunction(p) || ts.isFunctionExpression(p)) return true;
    if (ts.isMethodDeclaration(p) || ts.isConstructorDeclaration(p) || ts.isGetAccessorDeclaration(p) || ts.isFunctionDeclaration(p)) return false;
  }
  return false;
}

/** RxJS creation functions and operators that wait on a scheduler (the async one unless given). */
const RX_TIME = new Set(['timer', 'interval', 'delay', 'delayWhen', 'auditTime', 'debounceTime', 'bufferTime', 'throttleTime', 'sampleTime', 'timeout', 'timeoutWith', 'windowTime']);

/** The AST rules (see the file comment). */
export function astViolations(root: string): Violation[] {
  const cfg = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (cfg === undefined) throw new Error(`no tsconfig.json in ${root}`);
  const rel = (f: string): string => relative(root, f).split('\\').join('/');
  const files = cfg.fileNames.filter((f) => !isTestFile(rel(f)) && !rel(f).startsWith('tools/'));
  const program = ts.createProgram(files, { ...cfg.options, noEmit: true });
  const checker = program.getTypeChecker();
  const out: Violation[] = [];

  /** `runtime/kube-client.ts#KubeClient` when the expression's type is (or may be) one of our classes or interfaces. */
  const classOf = (e: ts.Expression): string | undefined => {
    const t = checker.getNonNullableType(checker.getTypeAtLocation(e));
    for (const part of t.isUnion() ? t.types : [t]) {
      const decl = part.getSymbol()?.declarations?.[0];
      if (decl === undefined || !(ts.isClassDeclaration(decl) || ts.isInterfaceDeclaration(decl)) || decl.name === undefined) continue;
      const id = `${rel(decl.getSourceFile().fileName)}#${decl.name.text}`;
      if (id in WRITE_METHODS) return id;
    }
    return undefined;
  };

  /** `RecoveryController` when the expression's type is a class of controllers/ other than the Manager. */
  const controllerClassOf = (e: ts.Expression): string | undefined => {
    const t = checker.getNonNullableType(checker.getTypeAtLocation(e));
    for (const part of t.isUnion() ? t.types : [t]) {
      const decl = part.getSymbol()?.declarations?.[0];
      if (decl === undefined || !ts.isClassDeclaration(decl) || decl.name === undefined) continue;
      const f = rel(decl.getSourceFile().fileName);
      if (f.startsWith('controllers/') && f !== MANAGER_FILE) return decl.name.text;
    }
    return undefined;
  };

  for (const sf of program.getSourceFiles()) {
    const file = rel(sf.fileName);
    if (sf.isDeclarationFile || file.startsWith('..') || file.includes('node_modules/') || isTestFile(file)) continue;
    const checkWrites = !WRITERS.test(file);
    const clockRule = file.startsWith('policy/') ? 'policy-no-clock' : file.startsWith('state/') ? 'state-no-clock' : undefined;
    const checkClock = clockRule !== undefined;
    const checkTimers = NO_PRIVATE_TIMERS.test(file);
    // policy/ and state/ read no clock at all (their own rules, above).
    const checkOneClock = ONE_CLOCK_FILES.test(file) && !checkClock;
    const allowed = new Set(ONE_CLOCK_ALLOWED[file]?.uses ?? []);
    const checkManager = file === MANAGER_FILE;
    if (file === BUILD_FILE) out.push(...sharedBindings(sf, controllerClassOf, file));
    if (!checkWrites && !checkClock && !checkTimers && !checkOneClock && !checkManager) continue;
    const at = (n: ts.Node): string => `${file}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`;
    const visit = (n: ts.Node): void => {
      if (checkWrites && ts.isPropertyAccessExpression(n)) {
        const cls = classOf(n.expression);
        const method = n.name.text;
        if (cls !== undefined && WRITE_METHODS[cls]!.has(method)) {
          const call = ts.isCallExpression(n.parent) && n.parent.expression === n ? n.parent : undefined;
          const first = call?.arguments[0];
          const isGet = method === 'request' && first !== undefined && ts.isStringLiteralLike(first) && first.text === 'GET';
          if (!isGet) out.push({ rule: 'only-writers-write', from: file, to: `${cls.split('#')[1]}.${method}`, at: at(n) });
        }
      }
      if (checkManager && ts.isPropertyAccessExpression(n) && inClosure(n)) {
        const cls = controllerClassOf(n.expression);
        if (cls !== undefined) out.push({ rule: 'manager-no-closures', from: file, to: `${cls}.${n.name.text}`, at: at(n) });
      }
      let reported = false;
      if (checkClock) {
        const clock = clockRead(n);
        if (clock !== undefined) { out.push({ rule: clockRule!, from: file, to: clock, at: at(n) }); reported = true; }
      }
      if (checkTimers && ts.isCallExpression(n)) {
        const timer = privateTimer(checker, n);
        if (timer !== undefined) { out.push({ rule: 'timers-through-runtime', from: file, to: timer, at: at(n) }); reported = true; }
      }
      if (checkOneClock && !reported) {
        const use = wallClock(checker, n);
        if (use !== undefined && !allowed.has(use)) out.push({ rule: 'one-clock', from: file, to: use, at: at(n) });
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}

/** A scheduler-like value: it has both `schedule` and `now` (rxjs SchedulerLike, TestScheduler, ...). */
function isScheduler(checker: ts.TypeChecker, e: ts.Expression): boolean {
  const t = checker.getNonNullableType(checker.getTypeAtLocation(e));
  return t.getProperty('schedule') !== undefined && t.getProperty('now') !== undefined;
}
/** `setTimeout()`, `x.setInterval()`, `scheduler.schedule()`, or an RxJS time operator without a scheduler. */
function privateTimer(checker: ts.TypeChecker, n: ts.CallExpression): string | undefined {
  const e = n.expression;
  const name = ts.isIdentifier(e) ? e.text : ts.isPropertyAccessExpression(e) ? e.name.text : undefined;
  if (name === undefined) return undefined;
  if (TIMERS.has(name)) return `${name}()`;
  if (ts.isPropertyAccessExpression(e) && name === 'schedule' && isScheduler(checker, e.expression)) return 'scheduler.schedule()';
  if (ts.isIdentifier(e) && RX_TIME.has(name)) {
    const decl = checker.getSymbolAtLocation(e)?.declarations?.[0];
    const fromRx = decl !== undefined && ts.isImportSpecifier(decl) && ts.isStringLiteral(decl.parent.parent.parent.moduleSpecifier) && decl.parent.parent.parent.moduleSpecifier.text === 'rxjs';
    if (fromRx && !n.arguments.some((a) => isScheduler(checker, a))) return `rxjs ${name}() without an injected scheduler`;
  }
  return undefined;
}

function clockRead(n: ts.Node): string | undefined {
  const prop = (e: ts.Expression, obj: string, name: string): boolean =>
    ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === obj && e.name.text === name;
  if (ts.isCallExpression(n)) {
    const e = n.expression;
    if (prop(e, 'Date', 'now')) return 'Date.now()';
    if (prop(e, 'performance', 'now')) return 'performance.now()';
    if (ts.isIdentifier(e) && TIMERS.has(e.text)) return `${e.text}()`;
    if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === 'globalThis' && TIMERS.has(e.name.text)) return `${e.name.text}()`;
  }
  if (ts.isNewExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'Date' && (n.arguments === undefined || n.arguments.length === 0)) return 'new Date()';
  if (ts.isPropertyAccessExpression(n) && (prop(n, 'process', 'hrtime'))) return 'process.hrtime';
  return undefined;
}

/**
 * A read of the wall clock or a timer of its own, by name: `Date.now` (called or passed), `new Date()`,
 * `performance.now()`, `process.hrtime`, a global `setTimeout()`/`setInterval()`/`setImmediate()`, or
 * RxJS's real-time schedulers.
 */
function wallClock(checker: ts.TypeChecker, n: ts.Node): string | undefined {
  const prop = (e: ts.Node, obj: string, name: string): boolean =>
    ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === obj && e.name.text === name;
  if (prop(n, 'Date', 'now')) return 'Date.now';
  if (ts.isCallExpression(n) && prop(n.expression, 'performance', 'now')) return 'performance.now()';
  if (ts.isCallExpression(n) && prop(n.expression, 'AbortSignal', 'timeout')) return 'AbortSignal.timeout()';
  if (prop(n, 'process', 'hrtime')) return 'process.hrtime';
  if (ts.isNewExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'Date' && (n.arguments === undefined || n.arguments.length === 0)) return 'new Date()';
  if (ts.isCallExpression(n)) {
    const e = n.expression;
    if (ts.isIdentifier(e) && TIMERS.has(e.text)) return `${e.text}()`;
    if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === 'globalThis' && TIMERS.has(e.name.text)) return `${e.name.text}()`;
  }
  if (ts.isIdentifier(n) && RX_REAL_SCHEDULERS.has(n.text) && !ts.isImportSpecifier(n.parent)) {
    const decl = checker.getSymbolAtLocation(n)?.declarations?.[0];
    const fromRx = decl !== undefined && ts.isImportSpecifier(decl) && ts.isStringLiteral(decl.parent.parent.parent.moduleSpecifier) && decl.parent.parent.parent.moduleSpecifier.text === 'rxjs';
    if (fromRx) return n.text;
  }
  return undefined;
}

/** Every violation in `root`, both kinds, sorted, one per (rule, from, to). */
export function allViolations(root: string): Violation[] {
  const seen = new Map<string, Violation>();
  for (const v of [...dependencyViolations(root), ...astViolations(root)]) if (!seen.has(violationKey(v))) seen.set(violationKey(v), v);
  return [...seen.values()].sort((a, b) => violationKey(a).localeCompare(violationKey(b)));
}

export function report(violations: readonly Violation[]): string {
  const line = (v: Violation): string => `  ${violationKey(v)}${v.at !== undefined ? `   (${v.at})` : ''}`;
  if (violations.length === 0) return 'layering: no violation';
  return [`layering: ${violations.length} violation(s) (fix them; see .dependency-cruiser.cjs and tools/layering/layering.ts for the rules):`, ...violations.map(line)].join('\n');
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const rootArg = args.indexOf('--root');
  const root = rootArg >= 0 ? resolve(args[rootArg + 1] ?? '.') : REPO;
  // The runtime graph is this repo's Manager's (another tree has none): tools/layering/graph.ts.
  const graph = root === REPO ? await managerGraph() : undefined;
  if (args.includes('--graph')) {
    if (graph !== undefined) process.stdout.write(graphText(graph) + '\n');
    process.exit(0);
  }
  const violations = [...allViolations(root), ...(graph === undefined ? [] : graphViolations(graph, readDoc(root)))];
  if (args.includes('--json')) process.stdout.write(JSON.stringify({ violations }) + '\n');
  else process.stdout.write(report(violations) + '\n');
  process.exitCode = violations.length > 0 ? 1 : 0;
}
