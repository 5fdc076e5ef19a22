/**
 * Probes and metrics on one port (ClusterD serves its probe on 11253, path `/`):
 * `/healthz` and `/` (liveness: the event loop answers and no informer has been cut off longer
 * than the stall limit), `/readyz` (every informer synced), `/metrics` (Prometheus text format).
 */
import { createServer, type Server } from 'node:http';
import type { Metrics } from './metrics.ts';

export interface HealthSource {
  /** Refreshes gauges that are sampled rather than counted, just before a scrape. */
  beforeScrape?(): void;
  /** Empty when live; else the reasons. */
  liveness(): string[];
  /** Empty when ready; else the reasons. */
  readiness(): string[];
}

export function startHttpServer(port: number, host: string, metrics: Metrics, health: HealthSource): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (problems: string[]): void => {
      res.writeHead(problems.length === 0 ? 200 : 503, { 'content-type': 'text/plain' });
      res.end(problems.length === 0 ? 'ok\n' : `${problems.join('\n')}\n`);
    };
    if (path === '/metrics') {
      health.beforeScrape?.();
      metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      }, (err: unknown) => { res.writeHead(500); res.end(String(err)); });
    } else if (path === '/healthz' || path === '/livez' || path === '/') {
      reply(health.liveness());
    } else if (path === '/readyz') {
      reply(health.readiness());
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
