/**
 * The image carried to a node without a registry, with the README's commands (Install with Helm):
 * `podman tag` it with the name a kubelet looks up for the chart's default image, `podman save` it,
 * and `ctr -n k8s.io images import` it into the node's containerd (Debian's containerd, which
 * `make image` installs; a daemon of the test's own, its sockets and storage in a temporary folder,
 * reached through CONTAINERD_ADDRESS so the command is the one typed on a node). The imported image
 * must carry that name in the namespace the kubelet's CRI uses, be the image `make image` built
 * (same config digest), and run under containerd as the image's user.
 * test/integration/image.test.ts runs the image itself as the chart's Deployment says.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { eventually } from '../support/cluster.ts';
import { helmRunner } from '../support/helm.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CHART = join(REPO, 'charts', 'clusterd-ts');
// What `make image` tags (tools/image/build.sh): clusterd-ts:<the chart's appVersion>.
const APP_VERSION = /^appVersion:\s*"?([^"\s]+)"?\s*$/m.exec(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'))![1]!;
const BUILT = `clusterd-ts:${APP_VERSION}`;
const NODE_VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { devDependencies: { node: string } }).devDependencies.node;

/** Docker's normalization of an image reference, which the kubelet applies before asking the runtime. */
function normalized(ref: string): string {
  const first = ref.split('/')[0]!;
  const hasDomain = ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasDomain) return ref;
  return `docker.io/${ref.includes('/') ? '' : 'library/'}${ref}`;
}

interface Ran { status: number | null; stdout: string; stderr: string }

describe('the image saved with podman and imported into a node\'s containerd', () => {
  const dir = mkdtempSync(join(tmpdir(), 'clusterd-ts-image-import-'));
  const helm = helmRunner('image-import');
  const address = join(dir, 'containerd.sock');
  const env = { ...process.env, CONTAINERD_ADDRESS: address };
  let containerd: ChildProcess | undefined;
  let log = '';
  let tagged = '';
  const run = (cmd: string, args: readonly string[], cwd = dir): Ran => {
    const r = spawnSync(cmd, [...args], { cwd, env, encoding: 'utf8', timeout: 120_000 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  afterAll(async () => {
    if (tagged !== '') spawnSync('podman', ['untag', BUILT, tagged], { stdio: 'ignore' });
    if (containerd !== undefined && containerd.exitCode === null) {
      const exited = new Promise((resolve) => containerd!.on('exit', resolve));
      containerd.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
      containerd.kill('SIGKILL');
    }
    helm.dispose();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('ctr -n k8s.io images import puts the built image under the name the kubelet looks up for the chart\'s image, and it runs', async () => {
    // The image the chart's defaults name, and the name a kubelet asks containerd for.
    const rendered = await helm.run(['template', 'clusterd-ts', CHART, '-n', 'mindx-dl']);
    expect(rendered.code).toBe(0);
    type Doc = { kind?: string; spec?: { template?: { spec?: { containers?: Array<{ image?: string }> } } } } | null;
    const image = parseAllDocuments(rendered.stdout).map((d) => d.toJS() as Doc).find((d) => d?.kind === 'Deployment')?.spec?.template?.spec?.containers?.[0]?.image;
    expect(image).toBe(BUILT);
    const wanted = normalized(image!);

    // The node's containerd (no CRI here: nothing but the image store and runc are used).
    writeFileSync(join(dir, 'config.toml'), [
      'version = 2', `root = "${join(dir, 'root')}"`, `state = "${join(dir, 'state')}"`,
      'disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]',
      '[grpc]', `  address = "${address}"`, '[ttrpc]', `  address = "${join(dir, 'containerd-ttrpc.sock')}"`, '',
    ].join('\n'));
    containerd = spawn('containerd', ['--config', join(dir, 'config.toml')], { stdio: ['ignore', 'pipe', 'pipe'] });
    containerd.stdout!.setEncoding('utf8').on('data', (d: string) => { log += d; });
    containerd.stderr!.setEncoding('utf8').on('data', (d: string) => { log += d; });
    await eventually(() => run('ctr', ['version']).status === 0, 15_000, 100)
      .catch((e: unknown) => { throw new Error(`containerd (installed by make image) did not answer: ${String(e)}\n${log.slice(-3000)}`); });

    // The README's three commands.
    const t0 = Date.now();
    const tag = run('podman', ['tag', BUILT, wanted]);
    expect({ status: tag.status, stderr: tag.stderr }).toEqual({ status: 0, stderr: '' });
    tagged = wanted;
    const tar = `clusterd-ts-${APP_VERSION}.tar`;
    const saved = run('podman', ['save', '-o', tar, wanted]);
    expect({ status: saved.status, stderr: saved.status === 0 ? '' : saved.stderr }).toEqual({ status: 0, stderr: '' });
    const t1 = Date.now();
    const imported = run('ctr', ['-n', 'k8s.io', 'images', 'import', tar]);
    expect({ status: imported.status, stderr: imported.stderr }).toEqual({ status: 0, stderr: '' });
    process.stdout.write(`image-import: podman tag + save ${((t1 - t0) / 1000).toFixed(1)} s, ctr images import ${((Date.now() - t1) / 1000).toFixed(1)} s\n`);

    // Under the kubelet's name in the kubelet's namespace, and the image make image built.
    const names = run('ctr', ['-n', 'k8s.io', 'images', 'ls', '-q']).stdout.split('\n').filter((l) => l !== '');
    expect(names).toEqual([wanted]);
    const manifestDigest = run('ctr', ['-n', 'k8s.io', 'images', 'ls']).stdout.split('\n').find((l) => l.startsWith(`${wanted} `))?.split(/\s+/)[2];
    const manifest = JSON.parse(run('ctr', ['-n', 'k8s.io', 'content', 'get', manifestDigest ?? '']).stdout) as { config: { digest: string } };
    const builtId = spawnSync('podman', ['image', 'inspect', '--format', '{{.Id}}', BUILT], { encoding: 'utf8' }).stdout.trim();
    expect(manifest.config.digest).toBe(`sha256:${builtId}`);

    // Unpacked for containerd's snapshotter and runnable: the pinned Node as the image's user.
    const ran = run('ctr', ['-n', 'k8s.io', 'run', '--rm', wanted, `import-${process.pid}`, 'node', '-p', 'process.version + " " + process.getuid()']);
    expect({ status: ran.status, stdout: ran.stdout.trim(), stderr: ran.stderr }).toEqual({ status: 0, stdout: `v${NODE_VERSION} 9000`, stderr: '' });
  }, 120_000);
});
