/**
 * A standby replica does not load the gRPC transport (controllers/grpc.controller.ts, "Loading"):
 * `node main.ts --leader-elect` as production runs it, against a Lease another replica holds. Once
 * its caches are synced it serves nothing (no listener on its gRPC port) and @grpc/grpc-js, the
 * protos and Node's http2 stay unloaded, the 8-10 MiB docs/benchmarks.md prices ("the runtime
 * floor"). That the leader loads and serves it is recovery-leader.test.ts's case.
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { paths } from '../../runtime/kube-client.ts';
import { LEADER_LEASE_NAME } from '../../controllers/manager.ts';
import { kubeconfigYaml } from '../../tools/control-plane/control-plane.ts';
import { ControllerProcess } from '../../tools/bench/controller-process.ts';
import { adminClient, controlPlaneInfo, eventually, newNamespace } from '../support/cluster.ts';

/** Preload: on SIGUSR2 the process writes the CommonJS modules it has loaded (grpc-js is one) to $LOADED_OUT. */
const PRELOAD = `import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
const require = createRequire(import.meta.url);
process.on('SIGUSR2', () => writeFileSync(process.env.LOADED_OUT, JSON.stringify(Object.keys(require.cache))));
`;

const listening = (port: number): Promise<boolean> => new Promise((resolve) => {
  const s = connect({ host: '127.0.0.1', port }, () => { s.destroy(); resolve(true); });
  s.on('error', () => resolve(false));
});

describe('standby replica', () => {
  it('does not load the gRPC transport while another replica leads', async () => {
    const client = adminClient();
    const ns = await newNamespace(client, 'standby');
    // Another replica's Lease, renewed now and held for an hour: this process stays a standby.
    const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'); // MicroTime
    await client.create(paths.leases(ns), {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEADER_LEASE_NAME, namespace: ns },
      spec: { holderIdentity: 'other-replica', leaseDurationSeconds: 3600, acquireTime: now, renewTime: now, leaseTransitions: 0 },
    });
    const dir = mkdtempSync(join(tmpdir(), 'standby-grpc-'));
    const info = controlPlaneInfo();
    writeFileSync(join(dir, 'kubeconfig'), kubeconfigYaml(info.servers[0]!, info.adminToken));
    writeFileSync(join(dir, 'preload.mjs'), PRELOAD);
    const out = join(dir, 'loaded.json');
    process.env.LOADED_OUT = out;
    const { proc } = await ControllerProcess.start(join(dir, 'kubeconfig'), dir,
      ['--leader-elect', `--leader-election-namespace=${ns}`, '--lease-duration-seconds=5', '--log-level=info'],
      [`--import=${pathToFileURL(join(dir, 'preload.mjs')).href}`]);
    try {
      await proc.waitReady(60_000);
      // A few retry periods (1 s at a 5 s lease): the elector has read the Lease and stays standby.
      await new Promise((r) => setTimeout(r, 3_000));
      const lines = proc.newLogLines().map((l) => l.message);
      expect(lines).toContain('leader observed');
      expect(await listening(proc.grpcPort)).toBe(false);
      process.kill(proc.pid()!, 'SIGUSR2');
      const loaded = await eventually(() => (existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) as string[] : undefined), 10_000);
      // The preload's own require sees the process's CommonJS modules (client-node is one of them).
      expect(loaded.some((p) => p.includes('@kubernetes/client-node'))).toBe(true);
      expect(loaded.filter((p) => p.includes('@grpc/'))).toEqual([]);
    } finally {
      await proc.stop();
      delete process.env.LOADED_OUT;
    }
  }, 90_000);
});
