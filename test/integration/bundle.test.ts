/**
 * The image's artefact (it must start without node_modules): tools/bundle/build.ts's one-file bundle, built into a folder
 * outside the repository (no node_modules to fall back on, as in the image), run as its own process
 * against the real apiserver: it must load, serve gRPC from the .proto files copied beside it, and
 * carry a device-plugin fault through to cluster-info end to end.
 */
import { Client, credentials } from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControllerProcess, useControllerEntry } from '../../tools/bench/controller-process.ts';
import { kubeconfigYaml } from '../../tools/control-plane/control-plane.ts';
import { unaryCall } from '../../grpc/testing.ts';
import { adminClient, controlPlaneInfo, eventually } from '../support/cluster.ts';
import { codesIn, deviceEntry } from '../support/cluster-info-read.ts';
import { fakeNodes, rand, reportChipFault } from './recovery-fixtures.ts';

describe('the bundled controller (dist-bundle/main.mjs, what the image runs)', () => {
  const admin = adminClient();
  const dir = mkdtempSync(join(tmpdir(), 'clusterd-ts-bundle-'));
  let controller: ControllerProcess | undefined;
  let grpc: Client | undefined;

  afterAll(async () => {
    grpc?.close();
    await controller?.stop();
    await useControllerEntry('ts');
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('starts from the bundle alone, serves gRPC and writes a device fault into cluster-info', async () => {
    await useControllerEntry('bundle', join(dir, 'app'));
    const info = controlPlaneInfo();
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(info.servers[0]!, info.adminToken));
    for (const ns of ['mindx-dl', 'kube-system', 'cluster-system', 'volcano-system']) {
      if ((await admin.getOrUndefined(`/api/v1/namespaces/${ns}`)) === undefined) {
        await admin.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => undefined);
      }
    }
    ({ proc: controller } = await ControllerProcess.start(kubeconfig, dir, ['--cluster-info-refresh-seconds=0', '--burst-window-ms=0', '--log-level=info']));
    await controller.waitReady(30_000);

    // gRPC: the services come from protos/ beside main.mjs (proto-loader reads them at start).
    grpc = new Client(`127.0.0.1:${controller.grpcPort}`, credentials.createInsecure());
    expect((await unaryCall<{ code: number }>(grpc, 'recover', 'HealthCheck', { jobId: 'x', role: 'taskd' })).code).toBe(0);

    // A fault end to end: device-info ConfigMap -> intake -> policy -> cluster-info-device-N.
    const [node] = await fakeNodes(admin, `bundle-${rand()}`, 1) as [string];
    await reportChipFault(admin, node, 'Ascend910-2', '80E18402', 'SeparateNPU', true);
    await eventually(async () => codesIn(await deviceEntry(admin, node), 'Ascend910-2').includes('80E18402'), 20_000);
    // /metrics (prom-client inside the bundle) counts the write it made.
    const written = (await controller.metrics()).filter((m) => m.name === 'clusterd_api_writes_total' && m.value > 0);
    expect(written.length).toBeGreaterThan(0);
    expect(controller.pid()).toBeDefined(); // still running
  }, 90_000);
});
