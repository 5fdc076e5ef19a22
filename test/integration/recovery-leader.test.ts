/**
 * gRPC and leadership (controllers/grpc.controller.ts): only the leader listens on the Recover port;
 * after a handover the new leader restores the registered jobs' FSMs from the state store, so a
 * TaskD that reconnects (or a report sent to it) is served without starting over.
 */
import { Client, credentials } from '@grpc/grpc-js';
import type { Manager } from '../../controllers/manager.ts';
import { unaryCall } from '../../grpc/testing.ts';
import { RECOVERY_STATE_NAMESPACE, recoveryStateCmName } from '../../reconcilers/recovery-state.reconciler.ts';
import { paths } from '../../runtime/kube-client.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, rand, startAgent, startManager } from './recovery-fixtures.ts';

describe('gRPC on the leader only, FSMs restored on handover', () => {
  const client = adminClient();

  /**
   * A leader `a` with a job whose TaskD agent registered (state flushed), and a standby `b`; `managers`
   * collects both for the caller's cleanup.
   */
  async function leaderWithRegisteredJob(prefix: string, extraArgs: readonly string[], managers: Manager[]) {
    const leaseNs = await newNamespace(client, prefix);
    const args = ['--leader-elect', `--leader-election-namespace=${leaseNs}`, '--lease-duration-seconds=5', ...extraArgs];
    const nodes = await fakeNodes(client, `${prefix}-${rand()}`, 2);
    const job = await createJob(client, { ns: await newNamespace(client, prefix), nodes, labels: { 'process-recover-enable': 'on', framework: 'pytorch' }, annotations: { 'recover-strategy': 'retry,recover' } });
    const a = (await startManager(client, args, { standby: true })).manager;
    managers.push(a);
    await eventually(() => a.isLeader, 15_000);
    const b = (await startManager(client, args, { standby: true })).manager;
    managers.push(b);
    const aServer = await a.grpc.ready();
    return { a, b, aServer, job, nodes };
  }

  async function registerAgent(a: Manager, port: number, jobUid: string): Promise<void> {
    await eventually(() => a.recovery.lookup(jobUid) !== undefined);
    const agent = startAgent(`127.0.0.1:${port}`, jobUid, {});
    await agent.waitFor(() => (agent.subscribed && a.recovery.isRegistered(jobUid) ? true : undefined), 15_000, 'registration');
    agent.stop();
    await a.recovery.store.flush();
  }

  it('the standby does not listen; the new leader restores registrations', async () => {
    const managers: Manager[] = [];
    let cleanup: (() => Promise<void>) | undefined;
    try {
      const { a, b, aServer, job, nodes } = await leaderWithRegisteredJob('rle', [], managers);
      cleanup = () => cleanUp(client, job, nodes);
      expect(aServer).toBeDefined();
      await new Promise((r) => setTimeout(r, 1_000));
      expect(b.isLeader).toBe(false);
      expect(b.grpc.server).toBeUndefined();

      await registerAgent(a, aServer!.port, job.uid);

      const t0 = Date.now();
      await a.stop(); // releases the Lease
      await eventually(() => b.isLeader && b.grpc.port !== undefined, 15_000, 50);
      process.stdout.write(`gRPC served by the new leader ${Date.now() - t0} ms after the old one stopped\n`);
      expect(b.recovery.isRegistered(job.uid)).toBe(true);
      const c = new Client(`127.0.0.1:${b.grpc.port!}`, credentials.createInsecure());
      try {
        // Registered before the handover: Register is a no-op and reports are taken (not 400).
        expect(await unaryCall(c, 'recover', 'Register', { jobId: job.uid, role: 'taskd' })).toEqual({ code: 0, info: 'register success' });
        expect((await unaryCall<{ code: number }>(c, 'recover', 'ReportProcessFault', { jobId: job.uid, faultRanks: [] })).code).toBe(0);
      } finally {
        c.close();
      }
    } finally {
      for (const m of managers) await m.stop();
      await cleanup?.();
    }
  }, 90_000);

  it('--persist-policy-state=false (as ClusterD): no clusterd-ts-recovery-<uid> is written, and a new leader knows no registration', async () => {
    const managers: Manager[] = [];
    let cleanup: (() => Promise<void>) | undefined;
    try {
      const { a, b, aServer, job, nodes } = await leaderWithRegisteredJob('rlp', ['--persist-policy-state=false'], managers);
      cleanup = () => cleanUp(client, job, nodes);
      await registerAgent(a, aServer!.port, job.uid);
      expect(await client.getOrUndefined(paths.configMap(RECOVERY_STATE_NAMESPACE, recoveryStateCmName(job.uid)))).toBeUndefined();

      await a.stop();
      await eventually(() => b.isLeader && b.grpc.port !== undefined, 15_000, 50);
      await eventually(() => b.recovery.lookup(job.uid) !== undefined);
      // ClusterD after a restart: the job is unknown until TaskD registers again.
      expect(b.recovery.isRegistered(job.uid)).toBe(false);
      expect(await client.getOrUndefined(paths.configMap(RECOVERY_STATE_NAMESPACE, recoveryStateCmName(job.uid)))).toBeUndefined();
    } finally {
      for (const m of managers) await m.stop();
      await cleanup?.();
    }
  }, 90_000);
});
