/**
 * The container image (`make image`, tools/image/build.sh, a prerequisite of `make test`) shipped
 * and started the way the README's install section says: `podman push` to a registry (a real one,
 * Debian's docker-registry over HTTPS on a free port, test/support/registry.ts), `helm install` the
 * chart into a fresh release namespace with `--set image.repository=<registry>/clusterd-ts` and
 * `image.tag`, then, as a node would, pull the image the installed Deployment names into a podman
 * storage of its own (empty before: nothing of the build's storage is used) and run the Deployment's
 * container from it with podman, taking the image, args, env, user, read-only root filesystem and
 * volume mounts from that Deployment (test/support/pod-as-podman.ts), under a token of the chart's
 * ServiceAccount. It must become ready, carry a device-plugin fault into cluster-info, serve
 * /metrics, answer gRPC, and stop on SIGTERM within the pod's grace period.
 * The listening ports are chart values here (free ports, host network), so the args stay the render's.
 */
import { Client, credentials } from '@grpc/grpc-js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LEADER_LABEL, LEADER_LABEL_VALUE } from '../../actions/leader-label.action.ts';
import { LEADER_LEASE_NAME } from '../../controllers/manager.ts';
import { imageEnv, imageNodeArgs, parseMetrics } from '../../tools/bench/controller-process.ts';
import { freePort } from '../../tools/control-plane/control-plane.ts';
import { unaryCall } from '../../grpc/testing.ts';
import type { KubeObject } from '../../runtime/kube-client.ts';
import { JOB_STATE_NAMESPACE } from '../../schemas/job-state/job-state.ts';
import { adminClient, controlPlaneInfo, ensureNamespace, eventually } from '../support/cluster.ts';
import { codesIn, deviceEntry } from '../support/cluster-info-read.ts';
import { helmRunner } from '../support/helm.ts';
import { podmanRunArgs, type DeploymentSpec } from '../support/pod-as-podman.ts';
import { startRegistry, type Registry } from '../support/registry.ts';
import { fakeNodes, reportChipFault } from './recovery-fixtures.ts';

const CHART = join(fileURLToPath(new URL('../../', import.meta.url)), 'charts', 'clusterd-ts');
const suffix = randomBytes(3).toString('hex');
const RELEASE = `image-${suffix}`;
const NS = `clusterd-image-${suffix}`;
const CONTAINER = `clusterd-ts-image-test-${suffix}`;
const dir = mkdtempSync(join(tmpdir(), 'clusterd-ts-image-'));
// The node's container storage: its own, so the image run is the one it pulled from the registry.
// crun 1.8 (Debian bookworm's) refuses hosts with cgroup v1 and v2 side by side; runc runs anywhere.
const PODMAN = ['--root', join(dir, 'node-storage'), '--runroot', join(dir, 'node-run'), '--runtime', 'runc'];
// What `make image` tags (tools/image/build.sh): clusterd-ts:<the chart's appVersion>.
const APP_VERSION = /^appVersion:\s*"?([^"\s]+)"?\s*$/m.exec(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'))![1]!;
const BUILT = `clusterd-ts:${APP_VERSION}`;
const NODE = 'image-test-node';

type Deployment = KubeObject & DeploymentSpec & { spec: { template: { spec: { containers: Array<{ image: string; args: string[] }>; terminationGracePeriodSeconds?: number } } } };

function podmanOut(args: readonly string[]): string {
  const r = spawnSync('podman', [...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`podman ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** stdout of a command run in the test's container (podman exec, the container's user). */
function inContainer(...cmd: string[]): string {
  const r = spawnSync('podman', [...PODMAN, 'exec', CONTAINER, ...cmd], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 5000, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => { body += d; }).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject).on('timeout', () => req.destroy(new Error('timeout'))).end();
  });
}

describe('the image (make image) run as the chart runs it', () => {
  const admin = adminClient();
  const info = controlPlaneInfo();
  const helm = helmRunner('image');
  let registry: Registry | undefined;
  let podman: ChildProcess | undefined;
  let log = '';
  let grpc: Client | undefined;

  afterAll(() => {
    grpc?.close();
    spawnSync('podman', [...PODMAN, 'rm', '--force', '--time', '5', CONTAINER], { stdio: 'ignore' });
    podman?.kill('SIGKILL');
    registry?.stop();
    helm.dispose();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('pushed to a registry and pulled by the node: starts under the chart\'s ServiceAccount, writes a device fault into cluster-info, serves /metrics and gRPC, stops on SIGTERM', async () => {
    // The operator: push the built image to the registry the nodes pull from (README, Install with Helm).
    registry = await startRegistry(join(dir, 'registry'));
    const repository = `${registry.host}/clusterd-ts`;
    const builtId = podmanOut(['image', 'inspect', '--format', '{{.Id}}', BUILT]).trim();
    const t0 = Date.now();
    const pushed = spawnSync('podman', ['push', '--cert-dir', registry.certDir, BUILT, `${repository}:${APP_VERSION}`], { encoding: 'utf8' });
    expect({ status: pushed.status, stderr: pushed.status === 0 ? '' : `${pushed.stderr}\n${registry.log()}` }).toEqual({ status: 0, stderr: '' });
    const pushMs = Date.now() - t0;

    const [httpPort, grpcPort] = [await freePort(), await freePort()];
    for (const ns of [JOB_STATE_NAMESPACE, 'kube-system', 'cluster-system', 'volcano-system']) await ensureNamespace(admin, ns);
    const installed = await helm.run(['install', RELEASE, CHART, '-n', NS, '--create-namespace', '--kubeconfig', info.kubeconfig,
      '--set', `image.repository=${repository}`, '--set', `image.tag=${APP_VERSION}`,
      '--set', `controller.httpPort=${httpPort}`, '--set', `controller.grpcPort=${grpcPort}`, '--timeout', '60s']);
    expect({ code: installed.code, stderr: installed.stderr }).toEqual({ code: 0, stderr: '' });
    const dep = await admin.get<Deployment>(`/apis/apps/v1/namespaces/${NS}/deployments/${RELEASE}-clusterd-ts`);
    const container = dep.spec.template.spec.containers[0]!;

    // The node: its storage holds no image until it pulls the one the Deployment names from the registry.
    expect(container.image).toBe(`${repository}:${APP_VERSION}`);
    expect(spawnSync('podman', [...PODMAN, 'image', 'exists', container.image]).status).toBe(1);
    const t1 = Date.now();
    const pulled = spawnSync('podman', [...PODMAN, 'pull', '--cert-dir', registry.certDir, container.image], { encoding: 'utf8' });
    expect({ status: pulled.status, stderr: pulled.status === 0 ? '' : pulled.stderr }).toEqual({ status: 0, stderr: '' });
    process.stdout.write(`image: podman push ${(pushMs / 1000).toFixed(1)} s, podman pull ${((Date.now() - t1) / 1000).toFixed(1)} s\n`);
    expect(podmanOut([...PODMAN, 'image', 'inspect', '--format', '{{.Id}}', container.image]).trim()).toBe(builtId);

    // What the kubelet mounts for automountServiceAccountToken: a token, the apiserver's CA, the namespace.
    const sa = join(dir, 'serviceaccount');
    const tr = await admin.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${NS}/serviceaccounts/clusterd/token`, {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
    });
    mkdirSync(sa);
    writeFileSync(join(sa, 'token'), tr.status.token);
    // The apiserver's self-signed serving certificate and its CA (kube-apiserver --cert-dir).
    writeFileSync(join(sa, 'ca.crt'), readFileSync(join(info.dir, 'apiserver-0', 'apiserver.crt')));
    writeFileSync(join(sa, 'namespace'), NS);
    const api = new URL(info.servers[0]!);

    // The pod the Deployment would have made (the controller labels its own pod when it leads).
    const tpl = dep.spec.template as unknown as { metadata: { labels: Record<string, string> }; spec: object };
    await admin.create(`/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: CONTAINER, labels: tpl.metadata.labels }, spec: { ...tpl.spec, nodeName: NODE } });
    const args = podmanRunArgs(dep, {
      name: CONTAINER, namespace: NS, nodeName: NODE, podIp: '127.0.0.1',
      apiHost: api.hostname, apiPort: Number(api.port), serviceAccountDir: sa,
    });
    podman = spawn('podman', [...PODMAN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    podman.stdout!.setEncoding('utf8').on('data', (d: string) => { log += d; });
    podman.stderr!.setEncoding('utf8').on('data', (d: string) => { log += d; });
    const exited = new Promise<never>((_, reject) => podman!.on('exit', (code) => reject(new Error(`podman exited with ${code}`))));
    exited.catch(() => undefined); // after the test, the exit afterAll causes is expected
    await Promise.race([exited, eventually(async () => (await httpGet(httpPort, '/readyz').catch(() => ({ status: 0 }))).status === 200, 60_000, 250)])
      .catch((e: unknown) => { throw new Error(`not ready: ${String(e)}; podman ${args.join(' ')}\n${log.slice(-4000)}`); });

    // PID 1 as the kubelet would have started it: the image's entrypoint with the render's args, the
    // chart's user, the Dockerfile's environment, and a root filesystem it cannot write.
    const proc1 = (file: string): string[] => inContainer('cat', `/proc/1/${file}`).split('\0').filter((x) => x !== '');
    expect(proc1('cmdline')).toEqual(['node', ...imageNodeArgs(), 'dist/main.mjs', ...container.args]);
    const status = inContainer('cat', '/proc/1/status');
    expect([/^Uid:\s+(\d+)/m.exec(status)?.[1], /^Gid:\s+(\d+)/m.exec(status)?.[1]]).toEqual(['9000', '9000']);
    // The environment the runtime gave PID 1 (not /proc/1/environ: glibc's tunables parser writes NULs
    // into the original GLIBC_TUNABLES string there, and the process reads its own copy).
    const envList = JSON.parse(spawnSync('podman', [...PODMAN, 'container', 'inspect', '--format', '{{json .Config.Env}}', CONTAINER], { encoding: 'utf8' }).stdout) as string[];
    const env = Object.fromEntries(envList.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    expect(env).toEqual(expect.objectContaining({ NODE_ENV: 'production', ...imageEnv(), POD_NAME: CONTAINER, POD_NAMESPACE: NS }));
    expect(() => inContainer('touch', '/app/x')).toThrow('Read-only file system');
    // The Service selects the leader by a label the controller sets on its own pod (the chart's Role).
    await eventually(async () => (await admin.get<KubeObject>(`/api/v1/namespaces/${NS}/pods/${CONTAINER}`)).metadata?.labels?.[LEADER_LABEL] === LEADER_LABEL_VALUE, 15_000);

    // A fault end to end: device-info ConfigMap -> intake -> policy -> cluster-info-device-N.
    const [node] = await fakeNodes(admin, `image-${suffix}`, 1) as [string];
    await reportChipFault(admin, node, 'Ascend910-3', '80E18402', 'SeparateNPU', true);
    await eventually(async () => codesIn(await deviceEntry(admin, node), 'Ascend910-3').includes('80E18402'), 30_000)
      .catch((e: unknown) => { throw new Error(`${String(e)}\n${log.slice(-4000)}`); });

    // /metrics on the chart's http port: the write it made, and no request the RBAC refused.
    const metrics = await httpGet(httpPort, '/metrics');
    expect(metrics.status).toBe(200);
    const samples = parseMetrics(metrics.body);
    expect(samples.filter((m) => m.name === 'clusterd_api_writes_total' && m.value > 0).length).toBeGreaterThan(0);
    expect(samples.filter((m) => m.name === 'clusterd_api_requests_total' && m.labels.code === '403' && m.value > 0)).toEqual([]);

    // gRPC on the chart's grpc port, from the .proto files beside the bundle.
    grpc = new Client(`127.0.0.1:${container.args.find((a) => a.startsWith('--grpc-port='))!.split('=')[1]}`, credentials.createInsecure());
    expect((await unaryCall<{ code: number }>(grpc, 'recover', 'HealthCheck', { jobId: 'x', role: 'taskd' })).code).toBe(0);

    // Stopped as a kubelet stops it: SIGTERM to PID 1 (node, which has no default SIGTERM action
    // there), SIGKILL after the pod's grace period. It must exit by itself, 0, with the lease released.
    grpc.close();
    const grace = dep.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    const code = new Promise<number | null>((resolve) => podman!.on('exit', resolve));
    const stopAt = Date.now();
    // Not spawnSync: blocking this process would stall its gRPC client too (grpc/server.test.ts covers that).
    spawn('podman', [...PODMAN, 'stop', '--time', String(grace), CONTAINER], { stdio: 'ignore' });
    expect({ code: await code, inGrace: Date.now() - stopAt < grace * 1000 }).toEqual({ code: 0, inGrace: true });
    const lease = await admin.get<KubeObject & { spec: { holderIdentity?: string } }>(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${LEADER_LEASE_NAME}`);
    expect(lease.spec.holderIdentity ?? '').toBe('');
  }, 180_000);
});
