/**
 * `kubectl clusterd` as one file an operator drops on PATH (README "kubectl clusterd", `make kubectl-clusterd`):
 * a Node single executable application. The plugin (cli/kubectl-clusterd.ts and what it imports) is
 * bundled by esbuild into one CommonJS script, `node --experimental-sea-config` turns it into a blob,
 * and postject injects the blob into a copy of the Node 24 binary this script runs on. Nothing else
 * is needed on the operator's machine: no Node, no sources, no node_modules.
 *
 * `node tools/kubectl-plugin/build.ts [outdir]` (default dist/) writes
 * - <outdir>/kubectl-clusterd/kubectl-clusterd: the executable (this machine's OS and CPU);
 * - <outdir>/kubectl-clusterd-<os>-<arch>.tar.gz: it and LICENSE, reproducible (fixed owner, times, order);
 * - <outdir>/clusterd.yaml: the krew manifest, cli/plugin.yaml with this archive's sha256 and uri
 *   $KUBECTL_CLUSTERD_URI (where the archive is published), else the template's placeholder; for
 *   `kubectl krew install --manifest` (downloads from uri) or `--manifest --archive` (a local archive).
 * A build whose inputs (the bundle, the Node binary, the template, LICENSE) are those of the one in
 * <outdir> is not redone (<outdir>/kubectl-clusterd.key holds their hash); the manifest is written
 * every time, so a new uri costs no rebuild.
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { clientNodeSlim } from '../bundle/build.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The fuse Node's SEA support looks for (Node's docs, "Single executable applications"). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const GOOS: Partial<Record<NodeJS.Platform, string>> = { linux: 'linux', darwin: 'darwin' };
const GOARCH: Partial<Record<string, string>> = { x64: 'amd64', arm64: 'arm64' };

export interface Plugin {
  /** The executable. */
  readonly bin: string;
  readonly archive: string;
  readonly manifest: string;
  readonly sha256: string;
  /** The manifest's uri. */
  readonly uri: string;
  /** True when the outputs of an identical earlier build were kept. */
  readonly cached: boolean;
}

function sh(cmd: string, args: readonly string[], cwd: string): void {
  const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}${r.stdout}`);
}

/** The plugin's sources as one CommonJS script (what a Node 24 SEA runs). */
async function bundleCli(): Promise<string> {
  const r = await build({
    entryPoints: [join(REPO, 'cli', 'kubectl-clusterd.ts')],
    write: false,
    // Module names in the bundle are paths relative to the checkout, as they are (not where a
    // symlinked node_modules points): the same sources give the same bytes in any folder.
    absWorkingDir: REPO,
    preserveSymlinks: true,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    minifyWhitespace: true,
    minifySyntax: true,
    minifyIdentifiers: false,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [clientNodeSlim],
  });
  if (r.errors.length > 0) throw new Error(r.errors.map((e) => e.text).join('\n'));
  // The entry's shebang would be a syntax error inside the SEA's wrapper.
  return r.outputFiles[0]!.text.replace(/^#!.*\n/, '');
}

/** A ustar archive of regular files, each mode 0755 or 0644, owner 0, mtime 0: the same bytes for the same files. */
function tar(files: ReadonlyArray<{ name: string; data: Buffer; mode: number }>): Buffer {
  const blocks: Buffer[] = [];
  for (const f of files) {
    const h = Buffer.alloc(512);
    h.write(f.name, 0, 100, 'utf8');
    h.write(`${f.mode.toString(8).padStart(7, '0')}\0`, 100);
    h.write('0000000\0', 108); // uid
    h.write('0000000\0', 116); // gid
    h.write(`${f.data.length.toString(8).padStart(11, '0')}\0`, 124);
    h.write('00000000000\0', 136); // mtime
    h.write('        ', 148); // checksum, counted as spaces
    h.write('0', 156); // regular file
    h.write('ustar\0' + '00', 257);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(h, f.data, Buffer.alloc((512 - (f.data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

export async function buildPlugin(outdir = join(REPO, 'dist')): Promise<Plugin> {
  const os = GOOS[process.platform];
  const arch = GOARCH[process.arch];
  if (os === undefined || arch === undefined) throw new Error(`no kubectl-clusterd build for ${process.platform}/${process.arch}`);
  if (process.versions.node.split('.')[0] !== '24') throw new Error(`run on the pinned Node 24 (node_modules/.bin/node), not ${process.version}`);
  const dir = join(outdir, 'kubectl-clusterd');
  const bin = join(dir, 'kubectl-clusterd');
  const archive = join(outdir, `kubectl-clusterd-${os}-${arch}.tar.gz`);
  const manifest = join(outdir, 'clusterd.yaml');
  const keyFile = join(outdir, 'kubectl-clusterd.key');

  const script = await bundleCli();
  const template = readFileSync(join(REPO, 'cli', 'plugin.yaml'), 'utf8');
  const license = readFileSync(join(REPO, 'LICENSE'));
  const uri = process.env.KUBECTL_CLUSTERD_URI;
  const node = statSync(process.execPath);
  const key = createHash('sha256')
    .update(JSON.stringify({ node: [process.execPath, process.version, node.size, node.mtimeMs], os, arch, self: readFileSync(fileURLToPath(import.meta.url), 'utf8') }))
    .update(script).update(template).update(license).digest('hex');
  if ([bin, archive].every((f) => existsSync(f)) && existsSync(keyFile) && readFileSync(keyFile, 'utf8') === key) {
    const sha256 = createHash('sha256').update(readFileSync(archive)).digest('hex');
    return { bin, archive, manifest, sha256, uri: writeManifest(manifest, template, sha256, uri, os, arch), cached: true };
  }

  rmSync(keyFile, { force: true });
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const work = join(outdir, 'kubectl-clusterd.work');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(work, 'kubectl-clusterd.cjs'), script);
  // No code cache or snapshot: the blob is the script itself, so the same sources give the same
  // executable. execArgvExtension none: the operator's NODE_OPTIONS (for their own Node tools) is ignored.
  writeFileSync(join(work, 'sea-config.json'), JSON.stringify({ main: 'kubectl-clusterd.cjs', output: 'sea-prep.blob', disableExperimentalSEAWarning: true, execArgvExtension: 'none' }));
  sh(process.execPath, ['--experimental-sea-config', 'sea-config.json'], work);
  copyFileSync(process.execPath, bin);
  chmodSync(bin, 0o755);
  // The npm package's Node carries its debug symbols (~18 MB of 127); the executable does not need them.
  if (spawnSync('strip', ['--version'], { stdio: 'ignore' }).status === 0) sh('strip', [bin], dir);
  const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  sh(process.execPath, [postject, bin, 'NODE_SEA_BLOB', join(work, 'sea-prep.blob'), '--sentinel-fuse', SEA_FUSE], dir);
  rmSync(work, { recursive: true, force: true });

  const tgz = gzipSync(tar([{ name: 'kubectl-clusterd', data: readFileSync(bin), mode: 0o755 }, { name: 'LICENSE', data: license, mode: 0o644 }]), { level: 9 });
  writeFileSync(archive, tgz);
  const sha256 = createHash('sha256').update(tgz).digest('hex');
  const written = writeManifest(manifest, template, sha256, uri, os, arch);
  writeFileSync(keyFile, key);
  return { bin, archive, manifest, sha256, uri: written, cached: false };
}

/** The krew manifest: the template with the archive's sha256 and uri (the template's when none is given); returns the uri. */
function writeManifest(path: string, template: string, sha256: string, uri: string | undefined, os: string, arch: string): string {
  let m = template.replace(/^(\s*sha256:\s*).*$/m, `$1"${sha256}"`);
  if (uri !== undefined && uri !== '') m = m.replace(/^(\s*uri:\s*).*$/m, `$1${uri}`);
  m = m.replace(/\{os\}/g, os).replace(/\{arch\}/g, arch);
  writeFileSync(path, m);
  return /^\s*uri:\s*(.*)$/m.exec(m)?.[1] ?? '';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const t0 = Date.now();
  const p = await buildPlugin(process.argv[2] !== undefined ? resolve(process.argv[2]) : undefined);
  const mb = (f: string): string => `${(statSync(f).size / 1e6).toFixed(1)} MB`;
  process.stdout.write(`${p.cached ? 'unchanged' : 'built'} in ${((Date.now() - t0) / 1000).toFixed(1)} s:\n  ${p.bin} (${mb(p.bin)})\n  ${p.archive} (${mb(p.archive)}, sha256 ${p.sha256})\n  ${p.manifest} (uri ${p.uri})\n`);
}
