/**
 * The TCP listener in front of grpc-js: ClusterD's listener caps (1,024 connections in total, 512 per
 * source IP; grpc.md §0) enforced on accept, then each socket is handed to grpc-js through its
 * connection injector (which also does the TLS handshake when the credentials are secure).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { ConnectionInjector } from '@grpc/grpc-js';
import type { GrpcLogger } from './handlers.ts';

export interface ConnectionLimits {
  readonly maxConnections: number;
  readonly maxConnectionsPerIp: number;
}

/** Which connection cap refused a connection. */
export type ConnectionRefusal = 'grpc_connections' | 'grpc_connections_per_ip';

export interface Listener {
  readonly host: string;
  readonly port: number;
  /** Connections currently open, in total and for one IP. */
  connections(ip?: string): number;
  /** Stop accepting; open connections are left to grpc-js. */
  close(): Promise<void>;
}

export function listen(host: string, port: number, injector: ConnectionInjector, limits: ConnectionLimits, log: GrpcLogger, onRefused: (cap: ConnectionRefusal) => void = () => {}): Promise<Listener> {
  const perIp = new Map<string, number>();
  let total = 0;
  const server: Server = createServer((socket: Socket) => {
    const ip = socket.remoteAddress ?? '';
    const n = perIp.get(ip) ?? 0;
    if (total >= limits.maxConnections || n >= limits.maxConnectionsPerIp) {
      log.warn('grpc connection refused: listener cap', { ip, total, perIp: n });
      onRefused(total >= limits.maxConnections ? 'grpc_connections' : 'grpc_connections_per_ip');
      socket.destroy();
      return;
    }
    total++;
    perIp.set(ip, n + 1);
    socket.once('close', () => {
      total--;
      const left = (perIp.get(ip) ?? 1) - 1;
      if (left <= 0) perIp.delete(ip);
      else perIp.set(ip, left);
    });
    socket.on('error', (err) => log.debug('grpc socket error', { ip, err: err.message }));
    injector.injectConnection(socket);
  });
  return new Promise<Listener>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      server.on('error', (err) => log.error('grpc listener error', { err: err.message }));
      const addr = server.address();
      const bound = typeof addr === 'object' && addr !== null ? addr.port : port;
      resolve({
        host,
        port: bound,
        connections: (ip?: string) => (ip === undefined ? total : (perIp.get(ip) ?? 0)),
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}
