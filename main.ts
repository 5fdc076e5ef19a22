/**
 * Entry point: parse flags, build the client, logger and metrics, start the manager. Nothing else
 * (docs/CONVENTIONS.md#what-we-avoid: main only wires). Runs directly on Node 24 (`node main.ts`) or from dist/.
 */
import { registerClientNodeSlim } from './runtime/client-node-slim.ts';

// Before anything loads the Kubernetes client (static imports would be resolved first).
registerClientNodeSlim();
const { HttpKubeClient } = await import('./runtime/kube-client.ts');
const { createLogger } = await import('./telemetry/logger.ts');
const { Metrics } = await import('./telemetry/metrics.ts');
const { Manager } = await import('./controllers/manager.ts');
const { realClock } = await import('./runtime/clock.ts');
const { OptionsError, parseOptions, usage } = await import('./controllers/options.ts');

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(`usage: clusterd-ts [flags]\n${usage()}\n`);
    return;
  }
  let options;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${e instanceof OptionsError || e instanceof TypeError ? e.message : String(e)}\n\nflags:\n${usage()}\n`);
    process.exit(2);
  }
  const log = createLogger(options.logLevel as 'info');
  let client;
  try {
    client = options.kubeconfig !== '' ? HttpKubeClient.fromFile(options.kubeconfig) : HttpKubeClient.fromDefault();
  } catch (e) {
    log.error('cannot load the cluster configuration; exiting', { kubeconfig: options.kubeconfig, err: e instanceof Error ? e.message : String(e) });
    process.exit(2);
  }
  const manager = new Manager({
    client, options, log, metrics: new Metrics({ maxSeriesPerMetric: options.maxSeriesPerMetric }),
    // The one clock of the whole controller (runtime/clock.ts); tests pass a manual one.
    clock: realClock,
    // A replica that lost the lease exits so it can never act beside the new leader; its
    // Deployment restarts it as a standby.
    onLostLeadership: () => { log.error('lost leadership; exiting'); process.exit(1); },
    // The rescheduling role's loops start afresh in a new process (controllers/rescheduling-role.ts).
    onReschedulingRoleRegained: () => { log.warn('rescheduling role regained; exiting to start the jobs flow anew'); process.exit(0); },
  });
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    manager.stop().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('unhandledRejection', (err) => log.error('unhandled rejection', { err: String(err), stack: (err as Error)?.stack }));
  log.info('starting clusterd-ts', { options: { ...options } });
  await manager.start();
}

await main();
