/**
 * A list+watch cache that never goes silent (docs/CONVENTIONS.md#errors: @kubernetes/client-node's informer stops on most watch errors and
 * only tells its `error` listeners): it restarts the watch
 * with backoff on every error, relists on 410 Gone, asks for bookmarks, strips managedFields, and
 * reports its health. client-node's own ListWatch stops for good on any error other than 410, so we
 * drive the watch (the streaming request, `KubeClient.watch`) ourselves.
 */
import { BehaviorSubject, Subject, type Observable } from 'rxjs';
import { Backoff } from './backoff.ts';
import type { QueueClock } from './clock.ts';
import type { KubeClient, KubeObject } from './kube-client.ts';
import { STOPPED } from './stopped.ts';

/** Longest silence on a watch before it is treated as dead and restarted (bookmarks come about every minute). */
const WATCH_INACTIVITY_MS = 150_000;

export type WatchEvent<T> =
  | { readonly type: 'add'; readonly obj: T }
  | { readonly type: 'update'; readonly obj: T; readonly old: T }
  | { readonly type: 'delete'; readonly obj: T };

export interface ReflectorOptions {
  /** Name used in logs and metrics, e.g. `configmaps_deviceinfo`. */
  readonly name: string;
  /** Collection path, e.g. `/api/v1/namespaces/kube-system/configmaps`. */
  readonly path: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Page size of the initial and recovery lists. */
  readonly pageSize?: number;
  readonly backoff?: Backoff;
  readonly log?: { info(m: string, f?: object): void; warn(m: string, f?: object): void; debug(m: string, f?: object): void };
  /** Drops objects the consumer does not want (e.g. by name prefix) before they reach the cache. */
  readonly filter?: (obj: KubeObject) => boolean;
  /**
   * What the cache keeps of each object, applied on receipt (list and watch), after `filter`.
   * Default: the object without managedFields.
   */
  readonly transform?: (obj: KubeObject) => KubeObject;
  /** The controller's clock (runtime/clock.ts): health times, retry backoff, the inactivity limit. */
  readonly clock: QueueClock;
}

export interface ReflectorHealth {
  readonly name: string;
  readonly synced: boolean;
  readonly connected: boolean;
  /** Last time the apiserver told us something (event, bookmark, list, watch established), ms. */
  readonly lastContactMs: number;
  readonly lastEventMs: number;
  readonly lastListMs: number;
  readonly restarts: number;
  readonly relists: number;
  readonly objects: number;
}

export const objectKey = (o: KubeObject): string =>
  o.metadata?.namespace ? `${o.metadata.namespace}/${o.metadata.name ?? ''}` : (o.metadata?.name ?? '');

function strip(o: KubeObject): KubeObject {
  if (o.metadata?.managedFields !== undefined) delete o.metadata.managedFields;
  return o;
}

export class Reflector<T extends KubeObject> {
  private readonly cache = new Map<string, T>();
  private readonly events = new Subject<WatchEvent<T>>();
  private readonly syncedSubject = new BehaviorSubject<boolean>(false);
  private readonly backoff: Backoff;
  private readonly clock: QueueClock;
  private rv = '';
  private running = false;
  private abort: AbortController | undefined;
  private timer: unknown;
  /** The open watch's inactivity limit (WATCH_INACTIVITY_MS without a line from the apiserver). */
  private quiet: unknown;
  private generation = 0;
  private connected = false;
  private lastContactMs = 0;
  private lastEventMs = 0;
  private lastListMs = 0;
  private restarts = 0;
  private relists = 0;
  private readonly client: KubeClient;
  private readonly opts: ReflectorOptions;
  private readonly keep: (obj: KubeObject) => T;

  /** Every add/update/delete, in apiserver order; a relist emits the difference to the cache. */
  readonly events$: Observable<WatchEvent<T>> = this.events.asObservable();
  /** false until the first list completed, and again while a 410 relist is pending. */
  readonly synced$: Observable<boolean> = this.syncedSubject.asObservable();

  constructor(client: KubeClient, opts: ReflectorOptions) {
    this.client = client;
    this.opts = opts;
    this.backoff = opts.backoff ?? new Backoff({ initialMs: 200, maxMs: 10_000 });
    this.clock = opts.clock;
    this.keep = (opts.transform ?? strip) as (obj: KubeObject) => T;
  }

  get name(): string { return this.opts.name; }

  /** The cached objects, keyed `ns/name` (or `name` for cluster-scoped kinds). */
  get store(): ReadonlyMap<string, T> { return this.cache; }

  get(key: string): T | undefined { return this.cache.get(key); }

  health(): ReflectorHealth {
    return {
      name: this.opts.name, synced: this.syncedSubject.value, connected: this.connected,
      lastContactMs: this.lastContactMs, lastEventMs: this.lastEventMs, lastListMs: this.lastListMs,
      restarts: this.restarts, relists: this.relists, objects: this.cache.size,
    };
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    void this.relistThenWatch();
  }

  stop(): void {
    this.running = false;
    this.generation++;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.clearQuiet();
    this.abort?.abort(STOPPED);
    this.connected = false;
  }

  /** Resolves once the first list has been applied. */
  waitForSync(timeoutMs = 60_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const t = this.clock.setTimeout(() => { sub.unsubscribe(); reject(new Error(`${this.opts.name}: not synced after ${timeoutMs} ms`)); }, timeoutMs);
      const sub = this.syncedSubject.subscribe((s) => {
        if (s) { this.clock.clearTimeout(t); queueMicrotask(() => sub.unsubscribe()); resolve(); }
      });
    });
  }

  private schedule(fn: () => void, ms: number): void {
    if (!this.running) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => { this.timer = undefined; fn(); }, ms);
  }

  private clearQuiet(): void {
    if (this.quiet !== undefined) this.clock.clearTimeout(this.quiet);
    this.quiet = undefined;
  }

  private retry(what: string, err: unknown, next: () => void): void {
    this.restarts++;
    this.connected = false;
    const delay = this.backoff.next();
    this.opts.log?.warn('watch source failed; retrying', { source: this.opts.name, step: what, delayMs: delay, err: String(err) });
    this.schedule(next, delay);
  }

  private async relistThenWatch(): Promise<void> {
    const gen = this.generation;
    try {
      await this.relist();
    } catch (err) {
      if (gen === this.generation) this.retry('list', err, () => void this.relistThenWatch());
      return;
    }
    if (gen === this.generation) void this.watch();
  }

  private async relist(): Promise<void> {
    const fresh = new Map<string, T>();
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.client.list<KubeObject>(this.opts.path, {
        labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector,
        limit: this.opts.pageSize ?? 500, continue: cont,
      });
      for (const item of page.items) {
        if (this.opts.filter !== undefined && !this.opts.filter(item)) continue;
        fresh.set(objectKey(item), this.keep(item));
      }
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion ?? rv;
    } while (cont !== undefined);
    if (!this.running) return;
    this.relists++;
    this.rv = rv;
    this.lastListMs = this.lastContactMs = this.clock.now();
    for (const [key, old] of [...this.cache]) {
      if (!fresh.has(key)) { this.cache.delete(key); this.emit({ type: 'delete', obj: old }); }
    }
    for (const [key, obj] of fresh) {
      const old = this.cache.get(key);
      this.cache.set(key, obj);
      if (old === undefined) this.emit({ type: 'add', obj });
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit({ type: 'update', obj, old });
    }
    this.syncedSubject.next(true);
  }

  private emit(ev: WatchEvent<T>): void {
    this.lastEventMs = this.clock.now();
    this.events.next(ev);
  }

  private async watch(): Promise<void> {
    if (!this.running) return;
    const gen = ++this.generation;
    let gone = false;
    let silent = false;
    // The watch (connecting, then open) is dead after WATCH_INACTIVITY_MS without a line: aborted,
    // which ends it as a timeout (onDone: carry on from the last resourceVersion).
    const quiet = (): void => {
      this.clearQuiet();
      this.quiet = this.clock.setTimeout(() => {
        this.quiet = undefined;
        if (gen !== this.generation) return;
        silent = true;
        this.abort?.abort();
      }, WATCH_INACTIVITY_MS);
    };
    quiet();
    const onEvent = (phase: string, raw: KubeObject & { code?: number }): void => {
      if (gen !== this.generation) return;
      quiet();
      this.lastContactMs = this.clock.now();
      this.backoff.reset();
      if (phase === 'ERROR') {
        if (raw.code === 410) gone = true;
        return;
      }
      const rv = raw.metadata?.resourceVersion;
      if (rv !== undefined) this.rv = rv;
      if (phase === 'BOOKMARK') return;
      if (this.opts.filter !== undefined && !this.opts.filter(raw)) return;
      const key = objectKey(raw);
      const obj = this.keep(raw);
      if (phase === 'DELETED') {
        const old = this.cache.get(key);
        this.cache.delete(key);
        if (old !== undefined) this.emit({ type: 'delete', obj });
      } else if (phase === 'ADDED' || phase === 'MODIFIED') {
        const old = this.cache.get(key);
        this.cache.set(key, obj);
        if (old === undefined) this.emit({ type: 'add', obj });
        else if (old.metadata?.resourceVersion !== rv) this.emit({ type: 'update', obj, old });
      }
    };
    const onDone = (err: unknown): void => {
      if (gen !== this.generation || !this.running) return;
      this.clearQuiet();
      this.connected = false;
      const status = (err as { statusCode?: number } | null)?.statusCode;
      if (gone || status === 410) {
        this.opts.log?.info('watch expired (410 Gone); relisting', { source: this.opts.name, resourceVersion: this.rv });
        this.syncedSubject.next(false);
        void this.relistThenWatch();
        return;
      }
      const timeout = err === null || err === undefined || (err as { name?: string }).name === 'TimeoutError' || (err as { name?: string }).name === 'AbortError';
      if (timeout) {
        // A quiet watch is closed by the server's timeoutSeconds or by our inactivity limit (an
        // abort): carry on from the last resourceVersion at once.
        void this.watch();
        return;
      }
      this.retry('watch', err, () => void this.watch());
    };
    try {
      this.abort = await this.client.watch(this.opts.path, {
        resourceVersion: this.rv, allowWatchBookmarks: true,
        timeoutSeconds: 240 + Math.floor(Math.random() * 120),
        labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector,
      }, onEvent, onDone, {
        // client-node aborts a watch that has sent nothing for 30 s. The apiserver sends a bookmark
        // about once a minute, so every quiet watch (most of ours at idle) was torn down and
        // reconnected twice a minute, each time on a new TLS connection: most of the idle CPU. A dead
        // connection is still noticed within WATCH_INACTIVITY_MS, and the server ends every watch
        // after timeoutSeconds. The limit is ours, on the controller's clock (`quiet` above); the
        // client's timer keeps it in real time as the I/O's own backstop: it alone can abort a
        // connection that never answers.
        inactivityTimeoutMs: WATCH_INACTIVITY_MS,
      });
      if (gen === this.generation && !this.abort.signal.aborted) {
        this.connected = true;
        this.lastContactMs = this.clock.now();
        // Silent past the limit while connecting: the watch is given up now that it can be aborted.
        if (silent) this.abort.abort();
      }
    } catch (err) {
      onDone(err);
    }
  }
}
