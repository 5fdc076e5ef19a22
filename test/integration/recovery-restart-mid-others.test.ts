/**
 * A controller restart and a leader failover in the middle of each process-level strategy lose
 * nothing (docs/grpc.md#restart-survival): elastic, hot-switch, platform, stress-test, switch-nic, each run straight, with the controller
 * killed and started again, and with the leader stopped, in the middle; the job finishes with the
 * same signals. The table and the runs: test/integration/restart-mid-strategy.ts.
 */
import { adminClient } from '../support/cluster.ts';
import { haveGo, realClientHarness } from './recovery-real-client.ts';
import { restartMidStrategySuite } from './restart-mid-strategy.ts';

if (!haveGo()) process.stdout.write('recovery-restart-mid-others: SKIPPED, no Go toolchain on PATH (needed to build tools/taskd-client)\n');
const describeGo = haveGo() ? describe : describe.skip;

describeGo('restart and failover in the middle of a strategy: elastic, hot-switch, platform, stress-test, switch-nic', () => {
  const client = adminClient();
  restartMidStrategySuite(realClientHarness(client, 'restart-mid-others'), client, ['elastic', 'hot-switch', 'platform', 'stress-test', 'switch-nic']);
});
