#!/usr/bin/env node
// The README's test command runs this (through `make test`): type check, lint, every jest project
// in four shards side by side (those that run integration files each with a real control plane of
// its own), then a check that no
// control-plane process outlived the run. Ends with one plain line: "tests: N passed, N failed, N skipped".
import { spawn, execSync } from 'node:child_process';
import { openSync, readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';

const args = process.argv.slice(2);
const summaryFile = join(tmpdir(), `clusterd-ts-jest-${process.pid}.json`);
const step = (name) => process.stdout.write(`\n==> ${name}\n`);

/**
 * This checkout's control-plane processes running now (`pid args` lines): the supervisors started
 * from this repo's tools/control-plane, their children, and orphaned control-plane binaries. Other
 * checkouts' runs on the same machine are not ours.
 */
function controlPlaneProcesses() {
  const repo = process.cwd();
  let rows = [];
  try {
    rows = execSync('ps -eo pid=,ppid=,args=', { encoding: 'utf8' }).split('\n').map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/)).filter(Boolean);
  } catch { return []; } // no ps
  const supervisors = new Set(rows.filter((r) => r[3].includes(`${repo}/tools/control-plane/supervise.mjs`)).map((r) => r[1]));
  // The real ClusterD runs as /run/clusterd inside its mount namespace (tools/clusterd-peer).
  const binary = (args) => (/clusterd-ts\/bin\/.*\/(kube-apiserver|etcd|kwok|kube-scheduler|clusterd|vc-scheduler|vc-scheduler-stock|vc-controller-manager|ascend-operator) /.test(args) || args.startsWith('/run/clusterd ')) && !args.includes('supervise.mjs') && !args.includes('ps -eo');
  return rows
    .filter((r) => supervisors.has(r[1]) || (binary(r[3]) && (supervisors.has(r[2]) || r[2] === '1')))
    .map((r) => `${r[1]} ${r[3]}`);
}
// Processes that were already running (e.g. `make cluster-up`) are not this run's.
const before = new Set(controlPlaneProcesses().map((l) => l.split(' ')[0]));
// The real ClusterD (conformance suite) sees these paths only inside its own mount namespace; on the
// host they must not appear.
const CLUSTERD_PATHS = ['/var/run/secrets/kubernetes.io/serviceaccount', '/home/hwMindX', '/var/log/mindx-dl'];
const hostPathsBefore = new Set(CLUSTERD_PATHS.filter((p) => existsSync(p)));

// Type check and lint side by side (each is one CPU-bound process); their output is printed after both.
// Beside them, the bundle the tests run the controller from (docs/CONVENTIONS.md#tests): built here
// once, so the shards do not each build it at their first controller.
step('type check (tsc --noEmit) beside lint (eslint) and the controller bundle');
const bundled = import('../tools/bundle/build.ts').then((m) => m.cachedBundle()).then((f) => ({ name: 'bundle', code: 0, out: `${f}\n` }), (e) => ({ name: 'bundle', code: 1, out: `${e?.stack ?? e}\n` }));
const checks = await Promise.all([bundled, ...[
  ['tsc', ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit']],
  ['eslint', ['node_modules/eslint/bin/eslint.js', '.']],
].map(([name, argv]) => new Promise((resolve) => {
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { out += c; });
  child.on('exit', (code) => resolve({ name, code, out }));
}))]);
for (const c of checks) process.stdout.write(`${c.name}: ${c.code === 0 ? (c.name === 'bundle' ? 'built' : 'clean') : 'FAILED'}\n${c.out}`);
if (checks.some((c) => c.code !== 0)) { process.stdout.write('\ntests: 0 passed, 1 failed, 0 skipped\n'); process.exit(1); }

// Four jest runs side by side, each a shard of every project, split by each file's measured time
// (test/support/sequencer.mjs). Unit, integration and real-stack files go only to the three runs of
// one worker: integration files share their run's control plane (its globalSetup) and their
// controllers write cluster-wide objects; real-stack files start their own Volcano stacks, which
// need the CPU, so only two of those runs take them. The conformance files (one per scenario, each on
// two control planes of its own with the real ClusterD, mostly waiting on ClusterD's tickers) and the
// simulation suite fill the least loaded worker of any run; the fourth run has two workers. Five
// files at once keep two cores busy while most of them wait. The later runs' output is kept in files
// and printed when each ends, so none interleaves with another. Arguments (a path pattern,
// --selectProjects) mean one plain run.
const jestArgs = (file, extra) => ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', '--ci', '--json', `--outputFile=${file}`, ...extra];
const SLOTS = [1, 1, 1, 2];
const jestEnv = { ...process.env, NODE_NO_WARNINGS: '1', CLUSTERD_TS_TEST_SLOTS: SLOTS.join(',') };
const shard = (k) => ['--selectProjects', 'unit', 'integration', 'real-stack', 'conformance', 'simulation', `--maxWorkers=${SLOTS[k - 1]}`, `--shard=${k}/${SLOTS.length}`];
const runs = args.length > 0
  ? [{ name: 'jest', summary: summaryFile, extra: args }]
  : SLOTS.map((n, i) => ({
      name: `jest (shard ${i + 1}/${SLOTS.length}, ${n === 1 ? 'one worker' : `${n} workers`})`,
      summary: i === 0 ? summaryFile : `${summaryFile}.${i + 1}`,
      extra: shard(i + 1),
      ...(i === 0 ? {} : { log: `${summaryFile}.${i + 1}.log` }),
    }));
step(runs.map((r) => r.name).join(' beside '));
const statuses = await Promise.all(runs.map((r) => new Promise((resolve) => {
  const out = r.log === undefined ? 'inherit' : openSync(r.log, 'w');
  const t0 = Date.now();
  const child = spawn(process.execPath, jestArgs(r.summary, r.extra), { stdio: ['ignore', out, out], env: jestEnv });
  child.on('exit', (code) => {
    process.stdout.write(`\n${r.name}: ended after ${Math.round((Date.now() - t0) / 1000)} s\n`);
    if (r.log !== undefined) {
      step(`${r.name}: its output`);
      process.stdout.write(readFileSync(r.log, 'utf8'));
      rmSync(r.log, { force: true });
    }
    resolve(code);
  });
})));
const jest = { status: statuses.every((c) => c === 0) ? 0 : 1 };

step('no control-plane process left behind');
const stray = controlPlaneProcesses().filter((l) => !before.has(l.split(' ')[0]));
if (stray.length > 0) process.stdout.write(`stray processes:\n${stray.join('\n')}\n`); else process.stdout.write('none\n');

step('nothing of ClusterD left on the host');
const leaked = CLUSTERD_PATHS.filter((p) => existsSync(p) && !hostPathsBefore.has(p));
process.stdout.write(leaked.length > 0 ? `created on the host: ${leaked.join(', ')}\n` : 'none\n');

let passed = 0, failed = 0, skipped = 0;
const durations = {};
for (const { summary } of runs) {
  if (!existsSync(summary)) { failed += 1; continue; }
  const r = JSON.parse(readFileSync(summary, 'utf8'));
  passed += r.numPassedTests; failed += r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0); skipped += r.numPendingTests + r.numTodoTests;
  for (const t of r.testResults ?? []) {
    if (t.startTime > 0 && t.endTime >= t.startTime) durations[relative(process.cwd(), t.name)] = Math.round((t.endTime - t.startTime) / 100) / 10;
  }
  rmSync(summary, { force: true });
}
// The shards' balance (test/support/sequencer.mjs) reads test/durations.json: this run's figures, to copy there.
if (args.length === 0 && Object.keys(durations).length > 0) {
  const file = join(tmpdir(), 'clusterd-ts-test-durations.json');
  writeFileSync(file, `${JSON.stringify(Object.fromEntries(Object.entries(durations).sort()), null, 1)}\n`);
  step(`this run's file durations: ${file}`);
}
if (stray.length > 0) failed += 1;
if (leaked.length > 0) failed += 1;
process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
process.exit(jest.status === 0 && failed === 0 ? 0 : 1);
