/**
 * gRPC fuzz against the controller's real handlers (hostile input must not crash them): random protobuf payloads (valid wire
 * encoding with random fields, and objects with our messages' field names whose job ids are often
 * real ones) to every method of every service the Manager serves, on the real apiserver. After every
 * call the server still answers HealthCheck; at the end a real job still goes through Init and the
 * Manager's own health is intact. The transport-level fuzz (raw bytes, frames, headers, sizes) is in
 * grpc/endpoint-fuzz.test.ts. Seed printed; replay with GRPC_FUZZ_SEED=<seed>.
 */
import { Client, credentials, type MethodDefinition } from '@grpc/grpc-js';
import fc from 'fast-check';
import type { Manager } from '../../controllers/manager.ts';
import { fuzzSeed, messageObject, protoBytes } from '../../grpc/fuzz-kit.ts';
import { loadClusterdServices, SERVICE_NAMES, type ServiceKey } from '../../grpc/protos.ts';
import { unaryCall } from '../../grpc/testing.ts';
import { adminClient, eventually, newNamespace } from '../support/cluster.ts';
import { cleanUp, createJob, fakeNodes, rand, startManager, type TestJob } from './recovery-fixtures.ts';

const SEED = fuzzSeed();
type Status = { code: number; info: string };

describe(`gRPC fuzz on the controller's handlers (seed ${SEED})`, () => {
  const admin = adminClient();
  let manager: Manager;
  let c: Client;
  let job: TestJob;
  let nodes: string[];

  beforeAll(async () => {
    process.stdout.write(`gRPC handler fuzz seed ${SEED} (replay: GRPC_FUZZ_SEED=${SEED})\n`);
    // Production limits except the shared unary bucket (a flag), which the fuzz would otherwise
    // drain before the last call; the per-method buckets may refuse fuzz calls, which is fine.
    let target: string;
    ({ manager, target } = await startManager(admin, ['--grpc-unary-qps=100000']));
    c = new Client(target, credentials.createInsecure());
    nodes = await fakeNodes(admin, `gfz-${rand()}`, 2);
    job = await createJob(admin, { ns: await newNamespace(admin, 'gfz'), nodes, labels: { 'process-recover-enable': 'on' } });
    await eventually(() => manager.recovery.lookup(job.uid) !== undefined);
  }, 60_000);

  afterAll(async () => {
    c.close();
    await manager.stop();
    await cleanUp(admin, job, nodes);
  });

  it('random payloads to every method never stop the server; a real job still initialises', async () => {
    const services = loadClusterdServices();
    const methods = (Object.keys(SERVICE_NAMES) as ServiceKey[]).flatMap((k) => Object.values(services[k]) as Array<MethodDefinition<unknown, unknown>>);
    const payload = fc.oneof(
      protoBytes.map((b) => ({ bytes: Buffer.from(b) })),
      // Half of them carry the real job's id, so the calls reach the FSMs, the registry and the PodGroup.
      fc.tuple(messageObject([job.uid, '-1']), fc.boolean()).map(([o, real]) => ({ object: real ? { ...o, jobId: job.uid, role: 'taskd' } : o })),
    );
    let calls = 0;
    await fc.assert(fc.asyncProperty(fc.constantFrom(...methods), payload, async (m, p) => {
      let body: Buffer;
      if ('object' in p) {
        try { body = m.requestSerialize(p.object); } catch { body = Buffer.from(JSON.stringify(p.object)); }
      } else body = p.bytes;
      calls++;
      if (m.responseStream) {
        const call = c.makeServerStreamRequest(m.path, (x: Buffer) => x, (x: Buffer) => x, body);
        call.on('data', () => {});
        call.on('error', () => {});
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => { call.cancel(); resolve(); }, 30); // subscriptions stay open: cancel them
          call.on('status', () => { clearTimeout(timer); resolve(); });
        });
      } else {
        await new Promise<void>((resolve) => c.makeUnaryRequest(m.path, (x: Buffer) => x, (x: Buffer) => x, body, () => resolve()));
      }
      expect((await unaryCall<Status>(c, 'recover', 'HealthCheck', { jobId: 'x', role: 'taskd' })).code).toBe(0);
    }), { seed: SEED, numRuns: 400, endOnFailure: true });
    process.stdout.write(`gRPC handler fuzz: ${calls} random calls to ${methods.length} methods\n`);

    // Still serving, and the real handlers still work for a real job.
    expect([0, 403]).toContain((await unaryCall<Status>(c, 'recover', 'Init', { jobId: job.uid, role: 'taskd' })).code);
    expect(manager.grpc.server).toBeDefined();
    expect(manager.readiness()).toEqual([]);
  }, 90_000);
});
