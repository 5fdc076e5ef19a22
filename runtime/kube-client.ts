/**
 * The apiserver as the controller sees it (`KubeClient`), and its HTTP implementation
 * (`HttpKubeClient`): a thin JSON client over the Kubernetes REST API. Authentication and TLS come from
 * @kubernetes/client-node's KubeConfig; requests go through undici (the same HTTP stack client-node
 * uses). We keep objects as raw JSON on purpose: client-node's typed list calls turn timestamps into
 * Date objects while its watch hands out strings (kubernetes-client/javascript#655), and a cache that
 * mixes both breaks byte comparison in reconcilers.
 */
// Deep imports: the package root loads every generated API and model (runtime/client-node-slim.ts).
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { RequestContext, HttpMethod } from '@kubernetes/client-node/dist/gen/http/http.js';
import { Watch } from '@kubernetes/client-node/dist/watch.js';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { Agent, fetch } from 'undici';
import { encodeConfigMap, PROTOBUF_CONTENT_TYPE } from './configmap-protobuf.ts';
import type { Dispatcher } from 'undici';

// client-node's RequestContext is what applySecurityAuthentication fills in; we only need its shape.
interface AuthContext {
  getHeaders(): Record<string, string>;
  getDispatcher(): Dispatcher | undefined;
  setHeaderParam(k: string, v: string): void;
}

/**
 * HTTP/1.1 keep-alive only. undici 8 offers HTTP/2 by default, and an idle HTTP/2 session of a
 * long-lived pool is closed by a timer that can raise an 'error' no one listens to (undici's
 * client-h2 idle timeout): an unhandled error, which ends the process. The apiserver serves both;
 * HTTP/1.1 costs one socket per concurrent request or watch, a handful here.
 */
function http1Only(d: Dispatcher): Dispatcher {
  return d.compose((dispatch) => (opts, handler) => dispatch({ ...opts, allowH2: false, ...(opts.method === 'DELETE' ? KEEP_DELETE_SOCKET : {}) } as Dispatcher.DispatchOptions, handler));
}

/**
 * undici closes the socket after any request with a body whose method does not "expect" one (RFC
 * 7231 leaves a DELETE body's meaning open, and some servers then misread the connection). Our
 * DELETEs carry DeleteOptions (UID preconditions, grace period) in the body, which the apiserver
 * reads in full, so the socket is safe to reuse. Without this every pod DELETE cost a new TCP + TLS
 * connection: the 8 DELETEs of one job's restart opened 8 (bench: 427 connections in a 50-fault run,
 * sockets living 100 ms), and a handshake is a round trip plus CPU on both sides on the critical path.
 */
const KEEP_DELETE_SOCKET = { reset: false } as const;

/** How long one connection pool serves requests before a fresh one (rotated client certificates) replaces it. */
const DISPATCHER_TTL_MS = 5 * 60_000;

/**
 * How long an idle connection is kept. undici's default (4 s) closed the sockets a burst of pod
 * DELETEs had opened before the next fault came, so each fault paid TLS handshakes again (the CPU
 * profile of the single-fault bench: connect + handshake + close about 10 ms of controller CPU per
 * fault, and as much on the apiserver). Below the apiserver's 90 s idle timeout, so the server does
 * not close a socket we are about to reuse.
 */
const KEEP_ALIVE_MS = 30_000;

/** The TLS options client-node reads from the kubeconfig (ca, client cert and key, server name). */
interface TlsOptions { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean; servername?: string }

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
    deletionTimestamp?: string;
    creationTimestamp?: string;
    managedFields?: unknown;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export interface KubeList<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items: T[];
}

/** An apiserver answer other than 2xx, with the Status object's reason where there is one. */
export class ApiError extends Error {
  readonly statusCode: number;
  readonly reason: string;
  readonly body: unknown;
  readonly method: string;
  readonly path: string;
  constructor(method: string, path: string, statusCode: number, body: unknown) {
    const st = (typeof body === 'object' && body !== null ? body : {}) as { reason?: string; message?: string };
    super(`${method} ${path}: ${statusCode} ${st.reason ?? ''} ${st.message ?? ''}`.trim());
    this.method = method;
    this.path = path;
    this.statusCode = statusCode;
    this.reason = st.reason ?? '';
    this.body = body;
  }
}

export const isNotFound = (e: unknown): boolean => e instanceof ApiError && e.statusCode === 404;
export const isConflict = (e: unknown): boolean => e instanceof ApiError && e.statusCode === 409;
export const isGone = (e: unknown): boolean => e instanceof ApiError && e.statusCode === 410;
/**
 * A merge patch carrying `metadata.uid` as a precondition, refused because the object now has
 * another uid (it was replaced under the same name): the apiserver answers 422 Invalid with the
 * field `metadata.uid` ("field is immutable"), not 409 as a PUT or a DELETE precondition does.
 */
export const isUidMismatch = (e: unknown): boolean => {
  if (!(e instanceof ApiError) || e.statusCode !== 422) return false;
  const st = (typeof e.body === 'object' && e.body !== null ? e.body : {}) as { message?: string; details?: { causes?: Array<{ field?: string }> } };
  return (st.details?.causes ?? []).some((c) => c.field === 'metadata.uid') || (st.message ?? '').includes('metadata.uid:');
};

export type PatchType = 'merge' | 'strategic' | 'json';
const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
};

export interface RequestOptions {
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  /** A body already encoded (e.g. protobuf, runtime/configmap-protobuf.ts), sent as is with `contentType`. */
  readonly encodedBody?: Uint8Array;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

/** Cancellation and deadline of one request. */
export interface CallOptions {
  readonly signal?: AbortSignal;
  /** Default 30 s. */
  readonly timeoutMs?: number;
}

/** The list parameters the controller uses (Kubernetes API conventions: "Lists and Simple kinds"). */
export type ListQuery = {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly limit?: number;
  readonly continue?: string;
};

export type WatchQuery = {
  readonly resourceVersion?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly allowWatchBookmarks?: boolean;
  /** The server ends the watch (cleanly) after this long. */
  readonly timeoutSeconds?: number;
};

export interface WatchOptions {
  /** A watch that has received nothing for this long is aborted and ends with a `TimeoutError`. */
  readonly inactivityTimeoutMs?: number;
}

/** A watch event's type as the apiserver sends it; ERROR carries a Status (`code` 410 when the version is gone). */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/**
 * What the controller asks of the apiserver, and nothing more: the product talks through this, so an
 * in-memory store with the apiserver's semantics (test/support/sim/memory-apiserver.ts) can stand in
 * for it. Every failure the apiserver answers is an `ApiError`.
 */
export interface KubeClient {
  /** Called after every request with method and HTTP status (0 on network error); for metrics. */
  onRequest?: (method: string, status: number) => void;
  get<T extends KubeObject>(path: string): Promise<T>;
  /** GET that answers undefined on 404. */
  getOrUndefined<T extends KubeObject>(path: string): Promise<T | undefined>;
  list<T>(path: string, query?: ListQuery, opts?: CallOptions): Promise<KubeList<T>>;
  create<T extends KubeObject>(collectionPath: string, obj: T, opts?: CallOptions): Promise<T>;
  /** PUT with the object's metadata.resourceVersion: 409 if someone else wrote first. */
  replace<T extends KubeObject>(path: string, obj: T): Promise<T>;
  patch<T extends KubeObject>(path: string, patch: unknown, type?: PatchType): Promise<T>;
  /** `body` is a DeleteOptions (preconditions, gracePeriodSeconds). */
  delete(path: string, body?: Record<string, unknown>, opts?: CallOptions): Promise<unknown>;
  /**
   * Streams changes to the collection after `query.resourceVersion`. `onDone` is called once when the
   * watch ends: `null` when the server closed it, else the error (an error with `statusCode` 410 when
   * the version is too old); it may be called before the returned promise resolves, and after the
   * caller aborted the returned controller (with an AbortError).
   */
  watch(
    path: string, query: WatchQuery,
    onEvent: (type: WatchEventType, obj: KubeObject & { code?: number }) => void,
    onDone: (err: unknown) => void,
    opts?: WatchOptions,
  ): Promise<AbortController>;
}

/** A ConfigMap's collection or object path (an object a LIST returned carries no apiVersion/kind to tell). */
const CONFIGMAP_PATH = /^\/api\/v1\/namespaces\/[^/]+\/configmaps(\/[^/]+)?$/;

/** Where a pod's service account token is mounted (what client-node's in-cluster load reads). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export class HttpKubeClient implements KubeClient {
  readonly kc: KubeConfig;
  private readonly server: string;
  /** Whether ConfigMaps are sent as protobuf (`bodyOf`); only the test comparing both encodings turns it off. */
  protobufBodies = true;
  /** Creates and updates sent, by body encoding (`protobuf`, `json`). */
  readonly bodyEncodings = new Map<string, number>();
  /** Called after every request with method, HTTP status (0 on network error); for metrics. */
  onRequest?: (method: string, status: number) => void;

  /**
   * The connection pool requests go through. client-node's applySecurityAuthentication builds a new
   * undici Agent on every call, so each request would open (and TLS-handshake, client certificate
   * and CA parsed again) a connection of its own: a few ms of CPU on both sides and a round trip or
   * two before every write, and a fresh socket per request. We keep the first Agent and reuse its
   * kept-alive connections; it is replaced every DISPATCHER_TTL_MS (the old one drains and closes),
   * so rotated certificate files are picked up. Headers (tokens) still come from every call.
   */
  private pool: { dispatcher: Dispatcher; sinceMs: number } | undefined;

  constructor(kc: KubeConfig) {
    this.kc = kc;
    const cluster = kc.getCurrentCluster();
    if (cluster === null) throw new Error('kubeconfig has no current cluster');
    this.server = cluster.server.replace(/\/$/, '');
  }

  static fromFile(path: string): HttpKubeClient {
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    return new HttpKubeClient(kc);
  }

  static fromString(yaml: string): HttpKubeClient {
    const kc = new KubeConfig();
    kc.loadFromString(yaml);
    return new HttpKubeClient(kc);
  }

  /**
   * $KUBECONFIG, else ~/.kube/config, else the in-cluster service account (client-node's order).
   * With none of them client-node would talk to http://localhost:8080 and every request would fail:
   * refused here with what to set instead.
   */
  static fromDefault(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): HttpKubeClient {
    const kubeconfig = (env.KUBECONFIG ?? '') !== '' || existsSync(join(home, '.kube', 'config'));
    const inCluster = (env.KUBERNETES_SERVICE_HOST ?? '') !== '' && existsSync(SERVICE_ACCOUNT_TOKEN);
    if (!kubeconfig && !inCluster) {
      throw new Error(`no cluster configuration: not in a pod (no KUBERNETES_SERVICE_HOST and ${SERVICE_ACCOUNT_TOKEN}), no $KUBECONFIG, no ${join(home, '.kube', 'config')}; pass --kubeconfig=<file> or run in a pod with a service account`);
    }
    const kc = new KubeConfig();
    kc.loadFromDefault();
    return new HttpKubeClient(kc);
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const rc = new RequestContext(url.toString(), method as HttpMethod);
    await this.kc.applySecurityAuthentication(rc);
    const ctx = rc as unknown as AuthContext;
    const headers: Record<string, string> = { ...ctx.getHeaders(), accept: 'application/json' };
    let body: string | Uint8Array | undefined;
    if (opts.encodedBody !== undefined) {
      body = opts.encodedBody;
      headers['content-type'] = opts.contentType ?? 'application/octet-stream';
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = opts.contentType ?? 'application/json';
    }
    const signals = [opts.signal, AbortSignal.timeout(opts.timeoutMs ?? 30_000)].filter((s): s is AbortSignal => s !== undefined);
    let status = 0;
    try {
      const res = await fetch(url, { method, headers, body, dispatcher: this.dispatcher(ctx.getDispatcher()), signal: AbortSignal.any(signals) });
      status = res.status;
      const text = await res.text();
      let parsed: unknown = text;
      try { parsed = text === '' ? undefined : JSON.parse(text); } catch { /* non-JSON error body */ }
      if (res.status < 200 || res.status >= 300) throw new ApiError(method, path, res.status, parsed);
      return parsed as T;
    } finally {
      this.onRequest?.(method, status);
    }
  }

  /** The pooled dispatcher (see `pool`); `fresh` is the one client-node just built for this request. */
  private dispatcher(fresh: Dispatcher | undefined): Dispatcher | undefined {
    if (fresh === undefined) return undefined;
    const now = Date.now();
    if (this.pool === undefined || now - this.pool.sinceMs >= DISPATCHER_TTL_MS) {
      const old = this.pool?.dispatcher;
      this.pool = { dispatcher: http1Only(this.ownAgent() ?? fresh), sinceMs: now };
      void old?.close().catch(() => undefined); // waits for its in-flight requests
    }
    return this.pool.dispatcher;
  }

  /**
   * Our Agent for the kubeconfig's TLS settings: idle sockets kept KEEP_ALIVE_MS, and one
   * SecureContext (CA, client certificate and key parsed once per pool) for all its connections
   * instead of one per connection. Undefined (use client-node's) with a proxy or a pfx bundle.
   */
  private ownAgent(): Dispatcher | undefined {
    const cluster = this.kc.getCurrentCluster();
    if (cluster === null || cluster.proxyUrl !== undefined || !cluster.server.startsWith('https:')) return undefined;
    const o: TlsOptions & { pfx?: unknown } = {};
    // client-node's own reader of the kubeconfig's TLS files/data (private in its typings, sync).
    const apply = (this.kc as unknown as { applyHTTPSOptions?: (opts: object) => void }).applyHTTPSOptions;
    if (typeof apply !== 'function') return undefined;
    apply.call(this.kc, o);
    if (o.pfx !== undefined) return undefined;
    const tls = { ...(o.ca ? { ca: o.ca } : {}), ...(o.cert ? { cert: o.cert } : {}), ...(o.key ? { key: o.key } : {}) };
    return new Agent({
      keepAliveTimeout: KEEP_ALIVE_MS,
      allowH2: false,
      connect: {
        ...tls, secureContext: createSecureContext(tls), keepAlive: true, keepAliveInitialDelay: 30_000,
        ...(o.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: o.rejectUnauthorized }),
        ...(o.servername === undefined ? {} : { servername: o.servername }),
      },
    });
  }

  /**
   * What client-node's Watch needs of a KubeConfig, with this client's pooled dispatcher: a watch
   * that ends cleanly (the server's timeoutSeconds) leaves its connection to the next request or
   * watch instead of a TLS handshake per reconnect.
   */
  watchConfig(): Pick<KubeConfig, 'getCurrentCluster' | 'applySecurityAuthentication'> {
    return {
      getCurrentCluster: () => this.kc.getCurrentCluster(),
      applySecurityAuthentication: async (ctx) => {
        await this.kc.applySecurityAuthentication(ctx);
        const pooled = this.dispatcher((ctx as unknown as AuthContext).getDispatcher());
        if (pooled !== undefined) (ctx as unknown as { setDispatcher(d: Dispatcher): void }).setDispatcher(pooled);
      },
    };
  }

  get<T extends KubeObject>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  /** GET that answers undefined on 404. */
  async getOrUndefined<T extends KubeObject>(path: string): Promise<T | undefined> {
    try {
      return await this.get<T>(path);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  list<T>(path: string, query: ListQuery = {}, opts: CallOptions = {}): Promise<KubeList<T>> {
    return this.request<KubeList<T>>('GET', path, { query, ...opts });
  }

  create<T extends KubeObject>(collectionPath: string, obj: T, opts: CallOptions = {}): Promise<T> {
    return this.request<T>('POST', collectionPath, { ...this.bodyOf(collectionPath, obj), ...opts });
  }

  /** PUT with the object's metadata.resourceVersion: 409 if someone else wrote first. */
  replace<T extends KubeObject>(path: string, obj: T): Promise<T> {
    return this.request<T>('PUT', path, this.bodyOf(path, obj));
  }

  /**
   * A ConfigMap goes as protobuf when it holds only fields the encoder covers (a large shard's string
   * is then copied, not JSON-escaped and unescaped: runtime/configmap-protobuf.ts); anything else as JSON.
   */
  private bodyOf(path: string, obj: KubeObject): RequestOptions {
    const pb = this.protobufBodies && CONFIGMAP_PATH.test(path) ? encodeConfigMap(obj) : undefined;
    const encoding = pb === undefined ? 'json' : 'protobuf';
    this.bodyEncodings.set(encoding, (this.bodyEncodings.get(encoding) ?? 0) + 1);
    return pb === undefined ? { body: obj } : { encodedBody: pb, contentType: PROTOBUF_CONTENT_TYPE };
  }

  patch<T extends KubeObject>(path: string, patch: unknown, type: PatchType = 'merge'): Promise<T> {
    return this.request<T>('PATCH', path, { body: patch, contentType: PATCH_CONTENT_TYPE[type] });
  }

  delete(path: string, body?: Record<string, unknown>, opts: CallOptions = {}): Promise<unknown> {
    return this.request('DELETE', path, body === undefined ? opts : { body, ...opts });
  }

  /**
   * A watch through client-node's Watch (the streaming request and its inactivity timer) on this
   * client's pooled connections (`watchConfig`). Restarts, bookmarks and 410 handling are the
   * caller's (runtime/reflector.ts).
   */
  watch(
    path: string, query: WatchQuery,
    onEvent: (type: WatchEventType, obj: KubeObject & { code?: number }) => void,
    onDone: (err: unknown) => void,
    opts: WatchOptions = {},
  ): Promise<AbortController> {
    const watcher = new Watch(this.watchConfig() as KubeConfig);
    // client-node's default inactivity limit is 30 s.
    if (opts.inactivityTimeoutMs !== undefined) (watcher as unknown as { requestTimeoutMs: number }).requestTimeoutMs = opts.inactivityTimeoutMs;
    return watcher.watch(path, query, onEvent as (phase: string, obj: KubeObject & { code?: number }) => void, onDone);
  }
}

/** One path segment: a name never adds segments (`a/../b`) nor a query. */
const seg = encodeURIComponent;

/** REST paths for the kinds this controller touches; every namespace and name is one encoded segment. */
export const paths = {
  configMaps: (ns?: string) => (ns === undefined ? '/api/v1/configmaps' : `/api/v1/namespaces/${seg(ns)}/configmaps`),
  configMap: (ns: string, name: string) => `/api/v1/namespaces/${seg(ns)}/configmaps/${seg(name)}`,
  pods: (ns?: string) => (ns === undefined ? '/api/v1/pods' : `/api/v1/namespaces/${seg(ns)}/pods`),
  pod: (ns: string, name: string) => `/api/v1/namespaces/${seg(ns)}/pods/${seg(name)}`,
  podStatus: (ns: string, name: string) => `/api/v1/namespaces/${seg(ns)}/pods/${seg(name)}/status`,
  nodes: () => '/api/v1/nodes',
  node: (name: string) => `/api/v1/nodes/${seg(name)}`,
  nodeStatus: (name: string) => `/api/v1/nodes/${seg(name)}/status`,
  namespaces: () => '/api/v1/namespaces',
  events: (ns: string) => `/api/v1/namespaces/${seg(ns)}/events`,
  podGroups: (ns?: string) => (ns === undefined ? '/apis/scheduling.volcano.sh/v1beta1/podgroups' : `/apis/scheduling.volcano.sh/v1beta1/namespaces/${seg(ns)}/podgroups`),
  podGroup: (ns: string, name: string) => `/apis/scheduling.volcano.sh/v1beta1/namespaces/${seg(ns)}/podgroups/${seg(name)}`,
  vcJobs: (ns?: string) => (ns === undefined ? '/apis/batch.volcano.sh/v1alpha1/jobs' : `/apis/batch.volcano.sh/v1alpha1/namespaces/${seg(ns)}/jobs`),
  vcJob: (ns: string, name: string) => `/apis/batch.volcano.sh/v1alpha1/namespaces/${seg(ns)}/jobs/${seg(name)}`,
  ascendJobs: (ns?: string) => (ns === undefined ? '/apis/mindxdl.gitee.com/v1/ascendjobs' : `/apis/mindxdl.gitee.com/v1/namespaces/${seg(ns)}/ascendjobs`),
  ascendJob: (ns: string, name: string) => `/apis/mindxdl.gitee.com/v1/namespaces/${seg(ns)}/ascendjobs/${seg(name)}`,
  leases: (ns: string) => `/apis/coordination.k8s.io/v1/namespaces/${seg(ns)}/leases`,
  lease: (ns: string, name: string) => `/apis/coordination.k8s.io/v1/namespaces/${seg(ns)}/leases/${seg(name)}`,
} as const;
