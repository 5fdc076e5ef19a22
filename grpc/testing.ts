/**
 * Test kit for the gRPC transport: a server on 127.0.0.1:0 with stub handlers and an in-memory job
 * set, plus small promise wrappers around grpc-js client calls driven by the loaded definitions.
 */
import { Client, credentials, experimental, type ChannelCredentials, type ChannelOptions, type MethodDefinition, type ServiceError } from '@grpc/grpc-js';
import type { GrpcLogger, RequestRecord } from './handlers.ts';
import { loadClusterdServices, type ClusterdServices, type ServiceKey } from './protos.ts';
import { startGrpcServer, type GrpcServerHandle, type GrpcServerOptions } from './server.ts';
import type { CallerCheck } from './peer.ts';
import { stubHandlers, type StubHandlers } from './stub-handlers.ts';
import { realClock } from '../runtime/clock.ts';

export interface LogLine { readonly level: string; readonly msg: string; readonly fields?: Record<string, unknown> }

export interface StubServer {
  readonly server: GrpcServerHandle;
  readonly stub: StubHandlers;
  readonly jobs: Set<string>;
  readonly records: RequestRecord[];
  readonly logs: LogLine[];
  readonly services: ClusterdServices;
  client(options?: ChannelOptions, creds?: ChannelCredentials): Client;
  /** A client whose connections leave from `localAddress` (a 127.0.0.x alias: "a pod's IP"). */
  clientFrom(localAddress: string, options?: ChannelOptions): Client;
  close(): Promise<void>;
}

export async function startStubServer(opts: Partial<GrpcServerOptions> = {}, jobIds: readonly string[] = []): Promise<StubServer> {
  const jobs = new Set(jobIds);
  const records: RequestRecord[] = [];
  const logs: LogLine[] = [];
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) => void logs.push({ level, msg, ...(fields ? { fields } : {}) });
  const logger: GrpcLogger = { info: log('info'), warn: log('warn'), error: log('error'), debug: log('debug') };
  const stub = stubHandlers();
  const server = await startGrpcServer(
    { host: '127.0.0.1', port: 0, jobExists: (id) => jobs.has(id), logger, countRequest: (r) => void records.push(r), clock: realClock, ...opts },
    stub,
  );
  const clients: Client[] = [];
  return {
    server,
    stub,
    jobs,
    records,
    logs,
    services: loadClusterdServices(),
    client(options = {}, creds = credentials.createInsecure()) {
      const c = new Client(server.address, creds, { 'grpc.use_local_subchannel_pool': 1, ...options });
      clients.push(c);
      return c;
    },
    clientFrom(localAddress, options = {}) {
      const c = new Client(fromTarget(localAddress, server.address), credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, ...options });
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.close();
      await server.shutdown(500);
    },
  };
}

/**
 * A caller check for tests: who is at each address (a system caller, or pods in these namespaces;
 * an address not listed is no pod's), and which addresses are pods of which job.
 */
export function fakeCallerCheck(who: Record<string, { readonly system?: boolean; readonly namespaces?: readonly string[] }>, jobPods: Record<string, readonly string[]> = {}): CallerCheck {
  return {
    onJob: (jobId, ip) => jobPods[jobId]?.includes(ip) === true,
    whois: (ip) => ({ system: who[ip]?.system === true, namespaces: new Set(who[ip]?.namespaces ?? []) }),
  };
}

const method = <Req, Res>(service: ServiceKey, name: string): MethodDefinition<Req, Res> =>
  loadClusterdServices()[service][name] as MethodDefinition<Req, Res>;

/** A unary call; rejects with the ServiceError. */
export function unaryCall<Res = Record<string, unknown>>(client: Client, service: ServiceKey, name: string, request: object): Promise<Res> {
  const def = method<object, Res>(service, name);
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, (err, res) => (err ? reject(err) : resolve(res as Res))),
  );
}

/** The error of a unary call that must fail. */
export const unaryError = (client: Client, service: ServiceKey, name: string, request: object): Promise<ServiceError> =>
  unaryCall(client, service, name, request).then(
    () => Promise.reject(new Error(`${name} unexpectedly succeeded`)),
    (err: ServiceError) => err,
  );

export interface OpenStream<T> {
  readonly messages: T[];
  /** Resolves with the final status (code, details). */
  readonly done: Promise<{ code: number; details: string }>;
  cancel(): void;
}

/** A server-streaming call collecting its messages. */
export function openStream<T = Record<string, unknown>>(client: Client, service: ServiceKey, name: string, request: object): OpenStream<T> {
  const def = method<object, T>(service, name);
  const call = client.makeServerStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, request);
  const messages: T[] = [];
  call.on('data', (m: T) => void messages.push(m));
  call.on('error', () => {});
  const done = new Promise<{ code: number; details: string }>((resolve) => call.on('status', (s) => resolve({ code: s.code, details: s.details })));
  return { messages, done, cancel: () => call.cancel() };
}

/** A TCP relay in front of a server, to cut connections the way a network failure would. */
export interface TcpProxy {
  readonly address: string;
  /** Destroy every relayed connection (both sides) without any HTTP/2 goodbye. */
  dropAll(): void;
  close(): Promise<void>;
}

export async function tcpProxy(targetPort: number): Promise<TcpProxy> {
  const { createServer, connect } = await import('node:net');
  const sockets = new Set<import('node:net').Socket>();
  const track = (s: import('node:net').Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  };
  const relay = createServer((inbound) => {
    const outbound = connect(targetPort, '127.0.0.1');
    track(inbound);
    track(outbound);
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  const addr = relay.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  return {
    address: `127.0.0.1:${port}`,
    dropAll: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => relay.close(() => r()));
    },
  };
}

/**
 * Target scheme `from://<local address>/<host>:<port>`: a grpc-js channel whose TCP connections are
 * bound to a chosen local address (grpc-js has no channel option for it; the resolver's address
 * object is what it hands to `net.connect`, so `localAddress` there is honoured). On Linux every
 * 127.0.0.0/8 address is the loopback interface, so a test can call "from a pod's IP" for real.
 */
class FromResolver {
  private done = false;
  private readonly target: { authority?: string; path: string };
  private readonly listener: (endpoints: unknown, attributes: object, serviceConfig: null, note: string) => boolean;

  constructor(target: { authority?: string; path: string }, listener: FromResolver['listener']) {
    this.target = target;
    this.listener = listener;
  }

  updateResolution(): void {
    if (this.done) return;
    this.done = true;
    const cut = this.target.path.lastIndexOf(':');
    const address = { host: this.target.path.slice(0, cut), port: Number(this.target.path.slice(cut + 1)), localAddress: this.target.authority };
    process.nextTick(() => this.listener({ ok: true, value: [{ addresses: [address] }] }, {}, null, ''));
  }

  destroy(): void {
    this.done = false;
  }

  static getDefaultAuthority(target: { path: string }): string {
    return target.path;
  }
}

let fromRegistered = false;
/** The channel target of a client connecting to `address` (`host:port`) from `localAddress`. */
export function fromTarget(localAddress: string, address: string): string {
  if (!fromRegistered) {
    experimental.registerResolver('from', FromResolver as unknown as Parameters<typeof experimental.registerResolver>[1]);
    fromRegistered = true;
  }
  return `from://${localAddress}/${address}`;
}
