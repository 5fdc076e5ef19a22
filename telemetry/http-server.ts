/**
 * Probes and metrics on one port (ClusterD serves its probe on 11253, path `/`):
 * `/healthz` and `/` (liveness: the event loop answers and no informer has been cut off longer
 * than the stall limit), `/readyz` (every informer synced), `/metrics` (Prometheus text format),
 * `/leaderz` (200 on the replica that acts, 503 on a standby; JSON either way).
 *
 * Leadership is deliberately not part of `/readyz`: a standby that never turned Ready would block
 * the PodDisruptionBudget and rolling updates. The gRPC Service follows the leader through a pod
 * label instead (actions/leader-label.action.ts). `?verbose` on `/readyz`, `/healthz` and `/livez`
 * lists the checks and, on `/readyz`, this replica's leadership as information.
 */
import { createServer, type Server } from 'node:http';
import type { Metrics } from './metrics.ts';

/** What `/leaderz` reports. */
export interface Leadership {
  /** --leader-elect: false means this single replica always acts. */
  readonly leaderElection: boolean;
  /** This replica holds the Lease (or has no election) and runs reconcilers, actions and gRPC. */
  readonly leader: boolean;
  readonly identity: string;
  /** The Lease holder as last observed; '' while unknown. */
  readonly holder: string;
  /** `<namespace>/<name>` of this replica's pod, when known (env POD_NAMESPACE / POD_NAME). */
  readonly pod?: string;
  /** The leader label on this replica's pod: `unmanaged` without election or without a pod name. */
  readonly podLabel: 'set' | 'absent' | 'unknown' | 'unmanaged';
}

export interface HealthSource {
  /** Refreshes gauges that are sampled rather than counted, just before a scrape. */
  beforeScrape?(): void;
  /** Empty when live; else the reasons. */
  liveness(): string[];
  /** Empty when ready; else the reasons. */
  readiness(): string[];
  leadership?(): Leadership;
}

function leadershipLine(l: Leadership): string {
  if (!l.leaderElection) return 'leadership: no leader election, this replica acts';
  const role = l.leader ? 'leader' : 'standby';
  return `leadership: ${role} (identity ${l.identity}, lease holder ${l.holder === '' ? 'unknown' : l.holder}, pod label ${l.podLabel}); not a readiness condition`;
}

export function startHttpServer(port: number, host: string, metrics: Metrics, health: HealthSource): Promise<Server> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const verbose = url.searchParams.has('verbose');
    const reply = (what: string, okLine: string, problems: string[], info: string[] = []): void => {
      res.writeHead(problems.length === 0 ? 200 : 503, { 'content-type': 'text/plain' });
      if (!verbose) { res.end(problems.length === 0 ? 'ok\n' : `${problems.join('\n')}\n`); return; }
      const lines = problems.length === 0 ? [`[+]${okLine}`] : problems.map((p) => `[-]${p}`);
      res.end(`${[...lines, ...info].join('\n')}\n${what} check ${problems.length === 0 ? 'passed' : 'failed'}\n`);
    };
    if (path === '/metrics') {
      health.beforeScrape?.();
      metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      }, (err: unknown) => { res.writeHead(500); res.end(String(err)); });
    } else if (path === '/healthz' || path === '/livez' || path === '/') {
      reply('livez', 'informers in contact with the apiserver', health.liveness());
    } else if (path === '/readyz') {
      const l = health.leadership?.();
      reply('readyz', 'informers synced', health.readiness(), l === undefined ? [] : [leadershipLine(l)]);
    } else if (path === '/leaderz' && health.leadership !== undefined) {
      const l = health.leadership();
      res.writeHead(l.leader ? 200 : 503, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify(l)}\n`);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
