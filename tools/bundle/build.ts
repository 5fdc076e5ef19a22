/**
 * The image's entry as one tree-shaken file (image size and start time, docs/benchmarks.md "One bundled file"):
 * `node tools/bundle/build.ts [outdir]` writes <outdir>/main.mjs (default dist-bundle/) and copies
 * the gRPC .proto files beside it, the only files the controller reads at run time.
 *
 * Why a bundle: `node dist/main.js` loads every module of its dependencies (rxjs's CommonJS entry
 * loads all operators; client-node, winston, ajv, grpc-js, prom-client carry much we never call),
 * and V8 keeps each module's source and compiled code resident. One file that holds only what is
 * reachable from main.ts loads less code and keeps one source string.
 */
import { build, type Metafile, type Plugin } from 'esbuild';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * client-node's config.js imports './gen/index.js' (every generated API class and model) for two
 * names: hand it runtime/client-node-gen-slim.ts at build time, what main.ts's resolve hook does
 * for dist/ (runtime/client-node-slim.ts). The hook itself has nothing left to do in a bundle,
 * so main.ts's call to it becomes a no-op.
 */
export const clientNodeSlim: Plugin = {
  name: 'client-node-slim',
  setup(b) {
    b.onResolve({ filter: /^\.\/gen\/index\.js$/ }, (args) =>
      args.importer.endsWith(join('@kubernetes', 'client-node', 'dist', 'config.js'))
        ? { path: join(REPO, 'runtime', 'client-node-gen-slim.ts') }
        : undefined);
    b.onResolve({ filter: /\/client-node-slim\.ts$/ }, (args) =>
      resolve(args.resolveDir, args.path) === join(REPO, 'runtime', 'client-node-slim.ts')
        ? { path: 'client-node-slim-noop', namespace: 'clusterd' }
        : undefined);
    b.onLoad({ filter: /.*/, namespace: 'clusterd' }, () => ({ contents: 'export function registerClientNodeSlim() {}', loader: 'js' }));
  },
};

/** Writes <outdir>/main.mjs and <outdir>/protos/; returns the path of main.mjs. */
export async function bundle(outdir = join(REPO, 'dist-bundle')): Promise<string> {
  return (await bundleWithInputs(outdir)).main;
}

async function bundleWithInputs(outdir: string): Promise<{ main: string; inputs: string[] }> {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const outfile = join(outdir, 'main.mjs');
  const meta = await bundleEntry(join(REPO, 'main.ts'), outfile);
  // grpc/protos.ts loads ./protos/ relative to import.meta.url, which is now this file.
  cpSync(join(REPO, 'grpc', 'protos'), join(outdir, 'protos'), { recursive: true });
  const protos = readdirSync(join(REPO, 'grpc', 'protos'), { recursive: true, encoding: 'utf8' }).map((f) => join(REPO, 'grpc', 'protos', f)).filter((f) => f.endsWith('.proto'));
  const inputs = [...Object.keys(meta.inputs).map((f) => resolve(REPO, f)), ...protos, fileURLToPath(import.meta.url)];
  return { main: outfile, inputs: inputs.filter((f) => existsSync(f)).sort() };
}

/** One digest of the files' paths and contents: the key of a bundle built from them. */
function digestOf(files: readonly string[]): string | undefined {
  const h = createHash('sha256');
  for (const f of files) {
    if (!existsSync(f)) return undefined;
    h.update(f).update('\0').update(readFileSync(f)).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

/**
 * The bundle the tests run the controller from (docs/testing.md "The controller under test"): the
 * image's form, built once and reused while none of the files it was built from changed. The
 * bundles live under the system temp folder, one set per checkout, keyed by the digest of their
 * inputs (esbuild's list of every file it read, dependencies included): an edit to any of them,
 * or an import added by one, makes the next caller build again. Parallel callers may each build;
 * the first rename wins and the others use it.
 */
export async function cachedBundle(root = join(tmpdir(), `clusterd-ts-bundle-${createHash('sha256').update(REPO).digest('hex').slice(0, 8)}`)): Promise<string> {
  const index = join(root, 'inputs.json');
  if (existsSync(index)) {
    try {
      const key = digestOf(JSON.parse(readFileSync(index, 'utf8')) as string[]);
      if (key !== undefined && existsSync(join(root, key, 'main.mjs'))) return join(root, key, 'main.mjs');
    } catch { /* unreadable index: build again */ }
  }
  mkdirSync(root, { recursive: true });
  const scratch = join(root, `build-${process.pid}-${randomBytes(4).toString('hex')}`);
  const { inputs } = await bundleWithInputs(scratch);
  const key = digestOf(inputs)!;
  const dir = join(root, key);
  try { renameSync(scratch, dir); } catch { rmSync(scratch, { recursive: true, force: true }); } // another caller's identical build won
  const tmpIndex = `${index}.${process.pid}`;
  writeFileSync(tmpIndex, JSON.stringify(inputs));
  renameSync(tmpIndex, index);
  return join(dir, 'main.mjs');
}

/**
 * The bench's in-process scale worker (tools/bench/scale-entry.ts) bundled the same way, so its RSS
 * is that of the code the image runs (no type stripper, one source string) when the bench runs the
 * controller from the bundle. It reads no file at run time. Returns the path written.
 */
export async function bundleScaleWorker(outfile = join(REPO, 'dist', 'scale-bundle', 'scale-entry.mjs')): Promise<string> {
  mkdirSync(dirname(outfile), { recursive: true });
  await bundleEntry(join(REPO, 'tools', 'bench', 'scale-entry.ts'), outfile);
  return outfile;
}

/**
 * `contents` (TypeScript, imports resolved from the repository's root) bundled as the controller is:
 * tools/bench/memory-breakdown.ts measures each library alone in the form the image loads it.
 */
export async function bundleSource(contents: string, outfile: string): Promise<void> {
  mkdirSync(dirname(outfile), { recursive: true });
  await bundleEntry({ contents, resolveDir: REPO, sourcefile: 'entry.ts', loader: 'ts' }, outfile);
}

async function bundleEntry(entry: string | { contents: string; resolveDir: string; sourcefile: string; loader: 'ts' }, outfile: string): Promise<Metafile> {
  const r = await build({
    ...(typeof entry === 'string' ? { entryPoints: [entry] } : { stdin: entry }),
    outfile,
    absWorkingDir: REPO, // the metafile's input paths are relative to it
    bundle: true,
    platform: 'node',
    target: 'node24',
    // ESM: main.ts uses top-level await. The CommonJS dependencies inside call require() for Node's
    // built-ins, which an ES module lacks: give them one.
    format: 'esm',
    banner: { js: "import { createRequire as __cdtsCreateRequire } from 'node:module'; const require = __cdtsCreateRequire(import.meta.url);" },
    // Whitespace and syntax only: identifiers keep their names, so a stack trace still names the
    // function (no source maps in the image; a line:column points into this one file).
    minifyWhitespace: true,
    minifySyntax: true,
    minifyIdentifiers: false,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [clientNodeSlim],
    metafile: true,
  });
  if (r.errors.length > 0) throw new Error(r.errors.map((e) => e.text).join('\n'));
  if (process.env.BUNDLE_SIZES === '1') printSizes(r.metafile.outputs[Object.keys(r.metafile.outputs)[0]!]!.inputs);
  return r.metafile;
}

/** BUNDLE_SIZES=1: bytes in the output per package (what the bundle still carries). */
function printSizes(inputs: Record<string, { bytesInOutput: number }>): void {
  const by = new Map<string, number>();
  for (const [path, { bytesInOutput }] of Object.entries(inputs)) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
    const key = m?.[1] ?? '(ours)';
    by.set(key, (by.get(key) ?? 0) + bytesInOutput);
  }
  for (const [k, v] of [...by].sort((a, b) => b[1] - a[1])) process.stderr.write(`${(v / 1024).toFixed(0).padStart(6)} KiB  ${k}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2] !== undefined ? resolve(process.argv[2]) : undefined);
  process.stdout.write(`${out}\n`);
}
