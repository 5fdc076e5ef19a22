/**
 * The in-memory apiserver (test/support/sim/memory-apiserver.ts) held to the real one: every case of
 * test/support/sim/apiserver-contract.ts runs on the real kube-apiserver and on a fresh in-memory
 * store, and both must answer the outcome the case expects. Cases run on the shared apiserver, except
 * the one that needs compacted history: it gets a control plane of its own (compacting the shared
 * etcd and restarting its apiserver would disturb the other test files).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpKubeClient } from '../../runtime/kube-client.ts';
import { ControlPlane, kubeconfigYaml } from '../../tools/control-plane/control-plane.ts';
import { CONTRACT_CASES, type ContractSide } from '../support/sim/apiserver-contract.ts';
import { MemoryApiServer } from '../support/sim/memory-apiserver.ts';
import { adminClient, newNamespace } from '../support/cluster.ts';

describe('apiserver contract: the real kube-apiserver and the in-memory one answer alike', () => {
  const admin = adminClient();
  const shared: ContractSide = { client: admin, newNamespace: () => newNamespace(admin, 'contract'), forget: () => Promise.reject(new Error('not on the shared apiserver')) };
  let own: ControlPlane | undefined;

  /** A side on a control plane of its own: `forget` compacts etcd and restarts the apiserver. */
  async function ownSide(): Promise<ContractSide> {
    const binDir = process.env.CLUSTERD_TS_BIN_DIR;
    if (binDir === undefined) throw new Error('CLUSTERD_TS_BIN_DIR not set by global setup');
    own ??= await ControlPlane.start({ binDir, workDir: join(tmpdir(), `clusterd-ts-contract-${process.pid}`) });
    const cp = own;
    const client = HttpKubeClient.fromString(kubeconfigYaml(cp.servers[0]!, cp.adminToken));
    return { client, newNamespace: () => newNamespace(client, 'contract'), forget: async () => { await cp.compactEtcd(); await cp.restartApiserver(0); } };
  }

  afterAll(async () => { await own?.stop(); }, 60_000);

  for (const c of CONTRACT_CASES) {
    it(c.name, async () => {
      const server = new MemoryApiServer({ requireNamespace: true });
      const memory: ContractSide = { client: server.client(), newNamespace: () => newNamespace(server.client(), 'contract'), forget: async (rv) => server.compact(rv) };
      const real = c.forgets === true ? await ownSide() : shared;
      const [onReal, inMemory] = [await c.run(real), await c.run(memory)];
      expect({ real: onReal, memory: inMemory }).toEqual({ real: c.expected, memory: c.expected });
    }, 90_000);
  }
});
