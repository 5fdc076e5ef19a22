/**
 * Where the controller's idle memory goes (docs/benchmarks.md "Idle memory: the breakdown"):
 * `node tools/bench/memory-breakdown.ts [--runs N] [--peer <bench report.json> --probe <probe.json>]...`
 *
 * Measures, each in a process of its own with the image's environment and node flags (Dockerfile
 * ENV and ENTRYPOINT), a few seconds after its start and before any forced GC:
 *   (a) bare node; (b) bare node + one library, bundled as the image bundles the controller
 *   (tools/bundle/build.ts), in the form the controller imports it; (c) the bundled controller with
 *   no cluster (a kubeconfig whose apiserver does not answer).
 * (d), the controller idle at 8 and 1,000 nodes, comes from the peer bench
 * (`node tools/bench.ts --scenario none --peer clusterd --peer-nodes N --controller-entry bundle
 * --memory-probe <probe.json> --out <report.json>`): pass both files to add the row.
 *
 * Columns (MiB): RSS and PSS, the node binary's own pages, shared libraries, glibc's main arena
 * ([heap]) and its other arenas, thread stacks, the rest of the anonymous memory; V8's heap as
 * committed (young generation, old, code, trusted, large objects) and the external memory (the
 * script source strings, Buffers). PSS divides the binary's pages among every process on the host
 * running the same `node`, so on a shared machine it is lower than in a pod of its own.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { bundle, bundleSource } from '../bundle/build.ts';
import { imageEnv, imageNodeArgs } from './controller-process.ts';
import { smapsBreakdown, type SmapsBreakdown } from './smaps.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PROBE = pathToFileURL(join(REPO, 'tools', 'bench', 'mem-probe.mjs')).href;
const KEEP = 'setInterval(() => {}, 1 << 30);';

/** Each library alone, as the controller imports it (the same modules of ours that wrap it). */
export const LIBRARIES: Readonly<Record<string, string>> = {
  'client-node (KubeConfig, Watch) + undici, as runtime/kube-client.ts': "import * as k from './runtime/kube-client.ts'; (globalThis as any).k = k;",
  'undici (Agent, fetch)': "import { Agent, fetch } from 'undici'; (globalThis as any).k = [Agent, fetch];",
  '@grpc/grpc-js + proto-loader, the protos loaded, a Server': "import { loadClusterdServices } from './grpc/protos.ts'; import { Server } from '@grpc/grpc-js'; (globalThis as any).k = [loadClusterdServices(), new Server()];",
  'rxjs (the whole package)': "import * as rx from 'rxjs'; (globalThis as any).k = rx;",
  'winston, as telemetry/logger.ts': "import { createLogger } from './telemetry/logger.ts'; (globalThis as any).k = createLogger('info');",
  'prom-client, as telemetry/metrics.ts (default metrics)': "import { Metrics } from './telemetry/metrics.ts'; (globalThis as any).k = new Metrics({ maxSeriesPerMetric: 1000 });",
  'ajv standalone validators (the 14 schemas)': '',
};

function validatorsEntry(): string {
  const found = readdirSync(join(REPO, 'schemas'), { recursive: true, encoding: 'utf8' }).filter((p) => p.endsWith('.validators.gen.ts')).sort();
  return `${found.map((p, i) => `import * as v${i} from './schemas/${p}';`).join(' ')} (globalThis as any).k = [${found.map((_, i) => `v${i}`).join(', ')}];`;
}

interface Probe { rss: number; heapUsed: number; external: number; spaces: Record<string, { committed: number }>; asIs?: Probe }
export interface Row { readonly name: string; readonly smaps: SmapsBreakdown; readonly probe: Probe }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `node <args>` with the image's environment, measures it after `settleMs`, kills it. */
async function measure(name: string, args: readonly string[], settleMs: number, dir: string): Promise<Row> {
  const out = join(dir, `probe-${Math.random().toString(36).slice(2)}.json`);
  const child = spawn(process.execPath, [...imageNodeArgs(), '--expose-gc', `--import=${PROBE}`, ...args], {
    stdio: 'ignore', cwd: REPO, env: { ...process.env, ...imageEnv(), NODE_NO_WARNINGS: '1', PROBE_OUT: out },
  });
  try {
    await sleep(settleMs);
    if (child.pid === undefined || child.exitCode !== null) throw new Error(`${name}: exited`);
    const smaps = smapsBreakdown(child.pid);
    child.kill('SIGUSR2');
    for (let i = 0; i < 50 && !existsSync(out); i++) await sleep(100);
    const probe = JSON.parse(readFileSync(out, 'utf8')) as Probe;
    return { name, smaps, probe: probe.asIs ?? probe };
  } finally {
    child.kill('SIGKILL');
  }
}

const mib = (kib: number): string => (kib / 1024).toFixed(1);
const f1 = (x: number | undefined): string => (x ?? Number.NaN).toFixed(1);

export function table(rows: readonly Row[]): string {
  const head = ['case', 'RSS', 'PSS', 'anon', 'file', 'node binary', 'libs', 'malloc main / arenas', 'thread stacks', 'other anon', 'V8 young', 'V8 old', 'V8 code', 'V8 trusted', 'V8 large', 'V8 used', 'external', 'threads'];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`];
  for (const r of rows) {
    const k = r.smaps.byKind;
    const s = r.probe.spaces;
    const c = (n: string): number => s[n]?.committed ?? 0;
    lines.push(`| ${[
      r.name, mib(r.smaps.rssKiB), mib(r.smaps.pssKiB), mib(r.smaps.anonKiB), mib(r.smaps.fileKiB), mib(k.exe.rssKiB), mib(k.libs.rssKiB),
      `${mib(k.malloc_main.rssKiB)} / ${mib(k.malloc_arenas.rssKiB)}`, mib(k.thread_stacks.rssKiB + k.main_stack.rssKiB), mib(k.anon_other.rssKiB),
      f1(c('new_space') + c('new_large_object_space')), f1(c('old_space')), f1(c('code_space') + c('code_large_object_space')),
      f1(c('trusted_space') + c('trusted_large_object_space')), f1(c('large_object_space')), f1(r.probe.heapUsed), f1(r.probe.external), String(r.smaps.threads),
    ].join(' | ')} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '1' }, peer: { type: 'string', multiple: true, default: [] }, probe: { type: 'string', multiple: true, default: [] }, only: { type: 'string', default: '' } }, strict: true });
  const runs = Number(values.runs);
  const dir = mkdtempSync(join(tmpdir(), 'memory-breakdown-'));
  const rows: Row[] = [];
  const keep = async (name: string, args: readonly string[], settleMs: number): Promise<void> => {
    if (values.only !== '' && !name.includes(values.only)) return;
    for (let i = 0; i < runs; i++) {
      const row = await measure(name, args, settleMs, dir);
      rows.push(row);
      process.stderr.write(`# ${name}: RSS ${mib(row.smaps.rssKiB)} MiB, PSS ${mib(row.smaps.pssKiB)} MiB\n`);
    }
  };
  try {
    await keep('(a) bare node', ['-e', KEEP], 3000);
    for (const [name, src] of Object.entries(LIBRARIES)) {
      const file = join(dir, `lib-${rows.length}`, 'main.mjs');
      await bundleSource(`${src === '' ? validatorsEntry() : src}\n${KEEP}`, file);
      // grpc/protos.ts finds the .proto files beside the bundle, as in the image.
      cpSync(join(REPO, 'grpc', 'protos'), join(dirname(file), 'protos'), { recursive: true });
      await keep(`(b) bare node + ${name}`, [file], 3000);
    }
    const kubeconfig = join(dir, 'unreachable.kubeconfig');
    writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:1"}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n');
    const main = await bundle(join(dir, 'controller'));
    await keep('(c) the bundled controller, no cluster', [main, `--kubeconfig=${kubeconfig}`, '--http-port=0', '--grpc-port=0', '--log-level=warn'], 12_000);
    values.peer.forEach((report, i) => {
      const r = JSON.parse(readFileSync(report, 'utf8')) as { options: { peerNodes: number }; details: { peer: { idleSmaps: { ours: SmapsBreakdown } } } };
      const probe = JSON.parse(readFileSync(values.probe[i]!, 'utf8')) as Probe;
      rows.push({ name: `(d) the bundled controller idle, ${r.options.peerNodes} nodes x 8 NPUs (peer bench)`, smaps: r.details.peer.idleSmaps.ours, probe: probe.asIs ?? probe });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${table(rows)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
