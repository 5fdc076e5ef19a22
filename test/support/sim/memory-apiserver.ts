/**
 * An in-memory apiserver for deterministic simulation: `server.client()` is a `KubeClient` the
 * Manager runs on unchanged, backed by one store with the apiserver's semantics that the controller
 * relies on (memory-store.ts: resourceVersions, conflicts, preconditions; memory-watch.ts: watch order,
 * bookmarks, 410 Gone; selectors.ts; patches.ts), and fault injection:
 *
 * - `failNext(n, failure, match)`: the next n matching requests answer a status (409, 429, 500, ...) or
 *   time out (optionally after the write was applied: the caller cannot tell);
 * - `dropWatches` / `expireWatches`: end open watches with an error, or with 410 Gone;
 * - `pauseWatches` / `resumeWatches` / `watchDelayMs` / `latencyMs`: stalled or slow streams and answers;
 * - `client.sever()`: one client's connection is cut (a killed replica);
 * - `compact(rv)`: history forgotten, so older watches and list continuations answer 410.
 *
 * Deterministic: time and timers come from the injected clock (runtime/work-queue.ts QueueClock, e.g.
 * test/support/manual-clock.ts), randomness (generateName) from the injected `random`; nothing reads the
 * wall clock. Answers and watch events arrive asynchronously, never inside the caller's own call.
 * Not covered: admission, validation of object schemas, garbage collection of dependents, managedFields,
 * server-side apply, and the protobuf wire format (objects are handed over as they are).
 */
import {
  ApiError, isNotFound, type CallOptions, type KubeClient, type KubeList, type KubeObject, type ListQuery,
  type PatchType, type WatchEventType, type WatchOptions, type WatchQuery,
} from '../../../runtime/kube-client.ts';
import { realClock, type QueueClock } from '../../../runtime/work-queue.ts';
import { prng } from '../../../tools/prng.ts';
import { copyJson } from './copy.ts';
import { MemoryStore, statusError } from './memory-store.ts';
import { WatchHub, type Watcher } from './memory-watch.ts';
import { parsePath, RESOURCE_TYPES, type ResourceType, type Target } from './resources.ts';
import { fieldMatcher, labelMatcher, SelectorError } from './selectors.ts';

/** Kubernetes verbs (as RBAC names them); `get` and `list` are both HTTP GETs. */
export type Verb = 'get' | 'list' | 'create' | 'update' | 'patch' | 'delete' | 'watch';
export const WRITE_VERBS: readonly Verb[] = ['create', 'update', 'patch', 'delete'];

export type Failure =
  | { readonly status: number; readonly reason?: string; readonly message?: string }
  /** No answer within `afterMs` (default: the call's timeout, else 30 s); `applied`: the write happened anyway. */
  | { readonly timeout: true; readonly applied?: boolean; readonly afterMs?: number };

export interface RequestMatch {
  readonly verbs?: readonly Verb[];
  /** A path, or a pattern tested on it. */
  readonly path?: string | RegExp;
  readonly client?: MemoryKubeClient;
}

export interface MemoryApiServerOptions {
  /** Time for timestamps and timers for delays and timeouts (default: real time). */
  readonly clock?: QueueClock;
  /** In [0, 1), for generateName suffixes (default: a fixed-seed generator). */
  readonly random?: () => number;
  /** Changes retained for watches and list continuations (default 100,000); older ones answer 410. */
  readonly historyLimit?: number;
  /** Creating in a namespace that does not exist answers 404, as the apiserver does (default false). */
  readonly requireNamespace?: boolean;
  /** A bound pod deleted with a grace period stays terminating until `completePodTermination` (default true). */
  readonly gracefulPodDeletion?: boolean;
  /** Runs `fn` after the current call (default queueMicrotask). */
  readonly defer?: (fn: () => void) => void;
  readonly types?: readonly ResourceType[];
  /** Every request, as `calls` (default false). */
  readonly recordCalls?: boolean;
  /**
   * Whether a watch's `timeoutSeconds` ends it (default true, as the apiserver does). The reflector
   * draws its timeout at random, so a simulation that must replay exactly turns this off.
   */
  readonly watchTimeouts?: boolean;
}

export interface Call { readonly client: string; readonly verb: Verb; readonly path: string; readonly status: number }

const REASONS: Record<number, string> = {
  400: 'BadRequest', 403: 'Forbidden', 404: 'NotFound', 409: 'Conflict', 410: 'Expired', 422: 'Invalid',
  429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout',
};


/** What client-node's Watch hands `onDone` for an HTTP status on connect. */
const httpError = (status: number, message: string): Error => Object.assign(new Error(message), { statusCode: status });
const timeoutError = (): DOMException => new DOMException('The operation was aborted due to timeout', 'TimeoutError');

interface ContinueToken { readonly rv: number; readonly start: string }

export class MemoryApiServer {
  readonly store: MemoryStore;
  readonly watches: WatchHub;
  readonly calls: Call[] = [];
  /** Added before every answer. */
  latencyMs = 0;
  private readonly faults: Array<{ match: RequestMatch; remaining: number; failure: Failure }> = [];
  private readonly clock: QueueClock;
  private readonly defer: (fn: () => void) => void;
  private readonly types: readonly ResourceType[];
  private readonly recordCalls: boolean;
  private readonly watchTimeouts: boolean;

  constructor(o: MemoryApiServerOptions = {}) {
    this.clock = o.clock ?? realClock;
    this.defer = o.defer ?? queueMicrotask;
    this.types = o.types ?? RESOURCE_TYPES;
    this.recordCalls = o.recordCalls ?? false;
    this.watchTimeouts = o.watchTimeouts ?? true;
    this.watches = new WatchHub({ clock: this.clock, defer: this.defer });
    this.store = new MemoryStore({
      now: () => this.clock.now(), random: o.random ?? prng(1), historyLimit: o.historyLimit ?? 100_000,
      requireNamespace: o.requireNamespace ?? false, gracefulPodDeletion: o.gracefulPodDeletion ?? true,
      onCommit: (c) => this.watches.offer(c),
    });
  }

  /** A client of this server; `name` labels its `calls`. */
  client(name = 'client'): MemoryKubeClient { return new MemoryKubeClient(this, name); }

  get resourceVersion(): string { return String(this.store.resourceVersion); }

  /** Forgets the history up to `rv` (default: everything so far). */
  compact(rv?: string): void { this.store.compact(rv === undefined ? undefined : Number(rv)); }

  /** The next `n` requests that `match` selects answer `failure`. */
  failNext(n: number, failure: Failure, match: RequestMatch = {}): void {
    this.faults.push({ match, remaining: n, failure });
  }

  clearFaults(): void { this.faults.length = 0; }

  /** Ends the selected open watches with `err` (a reset connection); the watcher restarts them. */
  dropWatches(match: Omit<RequestMatch, 'verbs'> = {}, err: unknown = new Error('watch stream reset (injected)')): number {
    const ws = this.watches.select((w) => this.watchMatches(w, match));
    for (const w of ws) w.end(err);
    return ws.length;
  }

  /** Ends the selected open watches as the apiserver does when their version is compacted: ERROR 410, then the end. */
  expireWatches(match: Omit<RequestMatch, 'verbs'> = {}): number {
    const ws = this.watches.select((w) => this.watchMatches(w, match));
    for (const w of ws) { w.push('ERROR', this.expired('watch')); w.endAfterQueued(null); }
    return ws.length;
  }

  /** A bookmark at the current version to every watch that asked for them. */
  bookmark(): void { this.watches.bookmark(this.store.resourceVersion); }

  pauseWatches(): void { this.watches.paused = true; }
  resumeWatches(): void { this.watches.resume(); }
  /** Delay added to every watch event from now on. */
  set watchDelayMs(ms: number) { this.watches.delayMs = ms; }
  get watchDelayMs(): number { return this.watches.delayMs; }

  /** The kubelet's part of graceful pod deletion: terminating pods `which` selects are removed. */
  completePodTermination(which?: (pod: KubeObject) => boolean): number { return this.store.completeTermination(which); }

  /** Ends every watch (the end of a simulation). */
  close(): void { for (const w of this.watches.select()) w.end(null); }

  private watchMatches(w: Watcher, m: Omit<RequestMatch, 'verbs'>): boolean {
    return (m.client === undefined || w.spec.owner === m.client) && (m.path === undefined || (typeof m.path === 'string' ? w.spec.path === m.path : m.path.test(w.spec.path)));
  }

  private takeFault(client: MemoryKubeClient, verb: Verb, path: string): Failure | undefined {
    const f = this.faults.find((x) => x.remaining > 0 && (x.match.verbs === undefined || x.match.verbs.includes(verb)) &&
      (x.match.client === undefined || x.match.client === client) &&
      (x.match.path === undefined || (typeof x.match.path === 'string' ? x.match.path === path : x.match.path.test(path))));
    if (f === undefined) return undefined;
    f.remaining--;
    if (f.remaining === 0) this.faults.splice(this.faults.indexOf(f), 1);
    return f.failure;
  }

  private expired(what: 'watch' | 'list'): KubeObject & { code: number } {
    const message = what === 'watch'
      ? `too old resource version (compacted at ${this.store.compactedResourceVersion})`
      : 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: 'Expired', code: 410 };
  }

  private sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const t = this.clock.setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
      const onAbort = (): void => { this.clock.clearTimeout(t); reject(signal!.reason); };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** One request: faults first, then the operation, then the answer (after `latencyMs`). */
  async handle<T>(client: MemoryKubeClient, verb: Verb, path: string, opts: CallOptions | undefined, op: () => T): Promise<T> {
    const method = { get: 'GET', list: 'GET', create: 'POST', update: 'PUT', patch: 'PATCH', delete: 'DELETE', watch: 'GET' }[verb];
    let status = 0;
    try {
      opts?.signal?.throwIfAborted();
      if (client.severed) throw new Error(`connect ECONNREFUSED (severed): ${method} ${path}`);
      const f = this.takeFault(client, verb, path);
      if (f !== undefined && 'status' in f) throw statusError(method, path, f.status, f.reason ?? REASONS[f.status] ?? 'InternalError', f.message ?? `injected failure ${f.status}`);
      if (f !== undefined) {
        if (f.applied === true) { try { op(); } catch { /* the caller learns nothing either way */ } }
        await this.sleep(f.afterMs ?? opts?.timeoutMs ?? 30_000, opts?.signal);
        throw timeoutError();
      }
      const out = op();
      status = verb === 'create' ? 201 : 200;
      if (this.latencyMs > 0) await this.sleep(this.latencyMs, opts?.signal);
      else await Promise.resolve();
      return out;
    } catch (e) {
      status = e instanceof ApiError ? e.statusCode : 0;
      throw e;
    } finally {
      if (this.recordCalls) this.calls.push({ client: client.name, verb, path, status });
      client.onRequest?.(method, status);
    }
  }

  target(method: string, path: string, kind: 'object' | 'collection'): Target {
    const tg = parsePath(path, this.types);
    // Of the subresources only `status` is served, and only for kinds that have it (pods/eviction and the like are not used).
    if (tg === undefined || (tg.subresource !== undefined && (tg.subresource !== 'status' || !tg.type.statusSubresource))) {
      throw statusError(method, path, 404, 'NotFound', 'the server could not find the requested resource');
    }
    if (kind === 'object' && tg.name === undefined) throw statusError(method, path, 405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
    if (kind === 'collection' && (tg.name !== undefined || (tg.type.namespaced && tg.namespace === undefined && method !== 'GET'))) {
      throw statusError(method, path, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    }
    return tg;
  }

  list<T>(path: string, q: ListQuery): KubeList<T> {
    const tg = this.target('GET', path, 'collection');
    const t = tg.type;
    let labels; let fields;
    try { labels = labelMatcher(q.labelSelector); fields = fieldMatcher(q.fieldSelector, t); } catch (e) {
      if (e instanceof SelectorError) throw statusError('GET', path, 400, 'BadRequest', e.message);
      throw e;
    }
    let rv = this.store.resourceVersion;
    let start = '';
    if (q.continue !== undefined && q.continue !== '') {
      let tok: ContinueToken;
      try { tok = JSON.parse(Buffer.from(q.continue, 'base64url').toString('utf8')) as ContinueToken; } catch {
        throw statusError('GET', path, 400, 'BadRequest', 'continue key is not valid');
      }
      rv = tok.rv;
      start = tok.start;
    }
    const all = this.store.snapshot(t, tg.namespace, rv);
    if (all === undefined) throw new ApiError('GET', path, 410, this.expired('list'));
    const matching = all.filter((e) => e.key > start && labels(e.obj) && fields(e.obj));
    const limit = q.limit !== undefined && q.limit > 0 ? q.limit : matching.length;
    const page = matching.slice(0, limit);
    const more = matching.length > page.length;
    const token: ContinueToken = { rv, start: page[page.length - 1]?.key ?? start };
    // Built-in kinds' list items carry no apiVersion/kind; custom resources' do (they are unstructured).
    const items = page.map((e) => { const o = copyJson(e.obj); if (!t.custom) { delete o.apiVersion; delete o.kind; } return o as T; });
    return {
      apiVersion: t.apiVersion, kind: `${t.kind}List`,
      metadata: { resourceVersion: String(rv), ...(more ? { continue: Buffer.from(JSON.stringify(token)).toString('base64url') } : {}) },
      items,
    } as KubeList<T>;
  }

  watch(
    client: MemoryKubeClient, path: string, q: WatchQuery,
    onEvent: (type: WatchEventType, obj: KubeObject & { code?: number }) => void, onDone: (err: unknown) => void, opts: WatchOptions,
  ): Promise<AbortController> {
    const refuse = (err: unknown, afterMs = 0): Promise<AbortController> => {
      const ctl = new AbortController();
      if (afterMs > 0) this.clock.setTimeout(() => { if (!ctl.signal.aborted) onDone(err); }, afterMs);
      else this.defer(() => onDone(err));
      return Promise.resolve(ctl);
    };
    if (client.severed) return refuse(new Error(`connect ECONNREFUSED (severed): GET ${path}`));
    const f = this.takeFault(client, 'watch', path);
    if (f !== undefined) return 'status' in f ? refuse(httpError(f.status, REASONS[f.status] ?? 'Error')) : refuse(timeoutError(), f.afterMs ?? opts.inactivityTimeoutMs ?? 30_000);
    const tg = parsePath(path, this.types);
    if (tg === undefined || tg.name !== undefined) return refuse(httpError(404, 'Not Found'));
    let labels; let fields;
    try { labels = labelMatcher(q.labelSelector); fields = fieldMatcher(q.fieldSelector, tg.type); } catch { return refuse(httpError(400, 'Bad Request')); }
    const from = q.resourceVersion === undefined || q.resourceVersion === '' || q.resourceVersion === '0' ? undefined : Number(q.resourceVersion);
    if (from !== undefined && !Number.isSafeInteger(from)) return refuse(httpError(400, 'Bad Request'));
    const w = this.watches.open({
      path, resource: tg.type, namespace: tg.namespace, labels, fields, bookmarks: q.allowWatchBookmarks === true,
      timeoutMs: q.timeoutSeconds === undefined || !this.watchTimeouts ? undefined : q.timeoutSeconds * 1000, inactivityMs: opts.inactivityTimeoutMs,
      onEvent, onDone, owner: client,
    });
    if (from === undefined) {
      for (const e of this.store.snapshot(tg.type, tg.namespace) ?? []) w.added(e.obj);
    } else {
      const changes = this.store.changesSince(from);
      if (changes === undefined) { w.push('ERROR', this.expired('watch')); w.endAfterQueued(null); }
      else for (const c of changes) w.offer(c);
    }
    return Promise.resolve(w.controller);
  }
}

/** A `KubeClient` on a MemoryApiServer. */
export class MemoryKubeClient implements KubeClient {
  readonly server: MemoryApiServer;
  readonly name: string;
  onRequest?: (method: string, status: number) => void;
  private cut = false;

  constructor(server: MemoryApiServer, name: string) { this.server = server; this.name = name; }

  get severed(): boolean { return this.cut; }

  /** Cuts this client off: every request fails with no answer and its watches end (a killed replica). */
  sever(): void {
    this.cut = true;
    this.server.dropWatches({ client: this }, new Error('connection severed'));
  }

  restore(): void { this.cut = false; }

  get<T extends KubeObject>(path: string): Promise<T> {
    const s = this.server;
    return s.handle(this, 'get', path, undefined, () => s.store.get('GET', path, s.target('GET', path, 'object')) as T);
  }

  async getOrUndefined<T extends KubeObject>(path: string): Promise<T | undefined> {
    try { return await this.get<T>(path); } catch (e) { if (isNotFound(e)) return undefined; throw e; }
  }

  list<T>(path: string, query: ListQuery = {}, opts: CallOptions = {}): Promise<KubeList<T>> {
    return this.server.handle(this, 'list', path, opts, () => this.server.list<T>(path, query));
  }

  create<T extends KubeObject>(collectionPath: string, obj: T, opts: CallOptions = {}): Promise<T> {
    const s = this.server;
    return s.handle(this, 'create', collectionPath, opts, () => s.store.create(collectionPath, s.target('POST', collectionPath, 'collection'), obj) as T);
  }

  replace<T extends KubeObject>(path: string, obj: T): Promise<T> {
    const s = this.server;
    return s.handle(this, 'update', path, undefined, () => s.store.replace('PUT', path, s.target('PUT', path, 'object'), obj) as T);
  }

  patch<T extends KubeObject>(path: string, patch: unknown, type: PatchType = 'merge'): Promise<T> {
    const s = this.server;
    return s.handle(this, 'patch', path, undefined, () => s.store.patch(path, s.target('PATCH', path, 'object'), patch, type) as T);
  }

  delete(path: string, body?: Record<string, unknown>, opts: CallOptions = {}): Promise<unknown> {
    const s = this.server;
    return s.handle(this, 'delete', path, opts, () => s.store.delete(path, s.target('DELETE', path, 'object'), body));
  }

  watch(
    path: string, query: WatchQuery,
    onEvent: (type: WatchEventType, obj: KubeObject & { code?: number }) => void, onDone: (err: unknown) => void, opts: WatchOptions = {},
  ): Promise<AbortController> {
    return this.server.watch(this, path, query, onEvent, onDone, opts);
  }
}
