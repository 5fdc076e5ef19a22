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
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Metrics } from './metrics.ts';
import type { Logger } from './logger.ts';

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
  /** Information lines for `/readyz?verbose` (never a readiness condition). */
  info?(): string[];
}

function leadershipLine(l: Leadership): string {
  if (!l.leaderElection) return 'leadership: no leader election, this replica acts';
  const role = l.leader ? 'leader' : 'standby';
  return `leadership: ${role} (identity ${l.identity}, lease holder ${l.holder === '' ? 'unknown' : l.holder}, pod label ${l.podLabel}); not a readiness condition`;
}

/**
 * The request target as a path and query, or undefined when it is not an origin-form target
 * (`/path?query`). `new URL` would read `//host:port` as an authority and throw on a bad port, so
 * only the origin form, the one every probe and scraper sends, is parsed.
 */
export function parseTarget(target: string | undefined): URL | undefined {
  if (target === undefined || !target.startsWith('/') || target.startsWith('//')) return undefined;
  try { return new URL(target, 'http://localhost'); } catch { return undefined; }
}

/** Slow or idle clients are cut off: probes and scrapes answer in milliseconds. */
const REQUEST_TIMEOUT_MS = 10_000;
const HEADERS_TIMEOUT_MS = 5_000;

/** At most one log line per window for refused requests (a flood must not flood the log); the metric counts all. */
const REFUSED_LOG_WINDOW_MS = 10_000;

export function startHttpServer(port: number, host: string, metrics: Metrics, health: HealthSource, log: Logger): Promise<Server> {
  let lastLogged = -Infinity;
  let suppressed = 0;
  const refused = (reason: string, detail: string): void => {
    metrics.invalidHttpRequests.inc({ reason });
    const now = Date.now();
    if (now - lastLogged < REFUSED_LOG_WINDOW_MS) { suppressed += 1; return; }
    log.warn('http request refused', { reason, detail: detail.slice(0, 200), suppressedSinceLastLine: suppressed });
    lastLogged = now;
    suppressed = 0;
  };
  const badRequest = (res: ServerResponse, target: string | undefined): void => {
    refused('target', `request target ${JSON.stringify(target ?? '')}`);
    if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain', connection: 'close' });
    res.end('bad request\n');
  };
  const server = createServer((req, res) => {
    // No exception in a handler may reach the process: one bad request must not stop fault handling.
    try {
      handle(req, res);
    } catch (err) {
      refused('handler_error', String(err));
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain', connection: 'close' });
      res.end();
    }
  });
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  // Malformed HTTP (bad request line, oversized headers) answers 400 and closes the socket; a socket
  // error never escapes as an uncaught 'error' event.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // A reset or timed-out socket is not a bad request; only parse errors are counted.
    if (err.code !== 'ECONNRESET' && err.code !== 'ERR_HTTP_REQUEST_TIMEOUT') refused('malformed_http', `${err.code ?? ''} ${err.message}`);
    if (socket.writable && !socket.destroyed) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') { refused('method', String(req.method)); res.writeHead(405, { allow: 'GET, HEAD' }); res.end(); return; }
    const url = parseTarget(req.url);
    if (url === undefined) { badRequest(res, req.url); return; }
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
      reply('readyz', 'informers synced', health.readiness(), [...(l === undefined ? [] : [leadershipLine(l)]), ...(health.info?.() ?? [])]);
    } else if (path === '/leaderz' && health.leadership !== undefined) {
      const l = health.leadership();
      res.writeHead(l.leader ? 200 : 503, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify(l)}\n`);
    } else {
      res.writeHead(404);
      res.end();
    }
  };
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      // After listen, a server error (e.g. EMFILE on accept) is logged by the caller, never thrown.
      server.on('error', (err) => log.error('http server error', { err: String(err) }));
      resolve(server);
    });
  });
}
