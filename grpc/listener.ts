/**
 * The TCP listener in front of grpc-js: ClusterD's listener caps (1,024 connections in total, 512 per
 * source IP; docs/grpc.md#transport) enforced on accept, then each socket is handed to grpc-js through its
 * connection injector (which also does the TLS handshake when the credentials are secure).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { ConnectionInjector } from '@grpc/grpc-js';
import type { GrpcLogger } from './handlers.ts';

export interface ConnectionLimits {
  readonly maxConnections: number;
  readonly maxConnectionsPerIp: number;
  /** A connection that has not sent its first bytes (HTTP/2 preface and SETTINGS, or a TLS ClientHello) by then is closed. */
  readonly handshakeTimeoutMs: number;
}

/** The HTTP/2 client preface (24 bytes) and the header of the SETTINGS frame that must follow it. */
const HANDSHAKE_BYTES = 24 + 9;

/**
 * Holds a new socket until it has sent `need` bytes (true), or closes it after `timeoutMs` (false).
 * What was read is pushed back, so grpc-js reads the stream from its first byte.
 */
function firstBytes(socket: Socket, need: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let got = 0;
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.pause();
      if (got > 0) socket.unshift(Buffer.concat(chunks));
      resolve(ok);
    };
    const onData = (d: Buffer): void => { chunks.push(d); got += d.length; if (got >= need) finish(true); };
    const onClose = (): void => finish(false);
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}

/** Which connection cap refused a connection. */
export type ConnectionRefusal = 'grpc_connections' | 'grpc_connections_per_ip';

export interface Listener {
  readonly host: string;
  readonly port: number;
  /** Connections currently open, in total and for one IP. */
  connections(ip?: string): number;
  /** Stop accepting; open connections are left to grpc-js. Resolves when the last one has closed. */
  close(): Promise<void>;
  /**
   * Destroys the connections still open. Once grpc-js has shut down, those are peers that never
   * answered its FIN (a stalled client), which would otherwise hold close() open for ever.
   */
  destroyConnections(): void;
}

export function listen(host: string, port: number, injector: ConnectionInjector, limits: ConnectionLimits, log: GrpcLogger, onRefused: (cap: ConnectionRefusal) => void = () => {}): Promise<Listener> {
  const perIp = new Map<string, number>();
  const open = new Set<Socket>();
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
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      total--;
      const left = (perIp.get(ip) ?? 1) - 1;
      if (left <= 0) perIp.delete(ip);
      else perIp.set(ip, left);
    });
    socket.on('error', (err) => log.debug('grpc socket error', { ip, err: err.message }));
    // grpc-go (ClusterD) closes a connection whose handshake is not done within its
    // ConnectionTimeout (120 s); grpc-js has no such limit, so silent sockets would hold the
    // listener's slots for ever and, at the cap, lock every client out. The socket is ours until
    // its first bytes arrive (a socket handed to grpc-js cannot be closed from here).
    void firstBytes(socket, HANDSHAKE_BYTES, limits.handshakeTimeoutMs).then((ok) => {
      if (ok) { injector.injectConnection(socket); return; }
      if (!socket.destroyed) log.warn('grpc connection closed: no HTTP/2 handshake', { ip, afterMs: limits.handshakeTimeoutMs, bytes: socket.bytesRead });
      socket.destroy();
    });
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
        destroyConnections: () => { for (const s of open) s.destroy(); },
      });
    });
  });
}
