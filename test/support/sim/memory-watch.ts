/**
 * Watches on the in-memory apiserver (Kubernetes API conventions, "Efficient detection of changes";
 * docs "Resource Versions" and "Watch bookmarks"): each watch gets the committed changes after its
 * resourceVersion in commit order, filtered by namespace and selectors the way the watch cache
 * filters them (an object that stops matching is DELETED for that watch, one that starts matching is
 * ADDED), asynchronously and never inside the writer's call. A version older than the retained
 * history is answered with an ERROR event carrying a 410 Expired Status, then the end of the watch.
 */
import type { KubeObject, WatchEventType } from '../../../runtime/kube-client.ts';
import type { QueueClock } from '../../../runtime/work-queue.ts';
import { copyJson } from './copy.ts';
import type { Change } from './memory-store.ts';
import type { Matcher } from './selectors.ts';
import type { ResourceType } from './resources.ts';

export interface WatchSpec {
  readonly path: string;
  readonly resource: ResourceType;
  readonly namespace: string | undefined;
  readonly labels: Matcher;
  readonly fields: Matcher;
  readonly bookmarks: boolean;
  readonly timeoutMs: number | undefined;
  readonly inactivityMs: number | undefined;
  readonly onEvent: (type: WatchEventType, obj: KubeObject & { code?: number }) => void;
  readonly onDone: (err: unknown) => void;
  /** The client that opened it (faults can end one client's watches). */
  readonly owner: object;
}

/** An event to deliver, or (`close`) the end of the stream after the events before it. */
interface Pending { readonly dueMs: number; readonly type: WatchEventType; readonly obj: KubeObject; readonly close?: { readonly err: unknown } }

export interface WatchHubOptions {
  readonly clock: QueueClock;
  /** Runs `fn` after the current call returns (default queueMicrotask). */
  readonly defer: (fn: () => void) => void;
}

const clone = copyJson;

export class Watcher {
  readonly spec: WatchSpec;
  readonly controller = new AbortController();
  private readonly queue: Pending[] = [];
  private ended = false;
  private pumping = false;
  private pumpTimer: unknown;
  private timeoutTimer: unknown;
  private inactivityTimer: unknown;
  private readonly hub: WatchHub;

  constructor(hub: WatchHub, spec: WatchSpec) {
    this.hub = hub;
    this.spec = spec;
    const { clock } = hub.o;
    if (spec.timeoutMs !== undefined) this.timeoutTimer = clock.setTimeout(() => this.end(null), spec.timeoutMs);
    this.touch();
    // The abort's own reason (an AbortError unless the caller gave one), as fetch rejects with it.
    this.controller.signal.addEventListener('abort', () => this.end(this.controller.signal.reason));
  }

  get done(): boolean { return this.ended; }

  private matches(o: KubeObject | undefined): boolean {
    const s = this.spec;
    return o !== undefined && (s.namespace === undefined || o.metadata?.namespace === s.namespace) && s.labels(o) && s.fields(o);
  }

  /** The event this watch sees for a change, if any. */
  offer(c: Change): void {
    if (this.ended || c.resource !== this.spec.resource) return;
    const now = this.matches(c.obj);
    const was = c.type !== 'ADDED' && this.matches(c.prev);
    if (c.type === 'DELETED') { if (was || now) this.push('DELETED', c.obj); return; }
    if (now) this.push(was ? 'MODIFIED' : 'ADDED', c.obj);
    else if (was) this.push('DELETED', c.obj);
  }

  /** An initial ADDED for an object that exists when the watch starts (a watch from "" or "0"). */
  added(obj: KubeObject): void { if (this.matches(obj)) this.push('ADDED', obj); }

  push(type: WatchEventType, obj: KubeObject): void {
    if (this.ended) return;
    this.queue.push({ dueMs: this.hub.o.clock.now() + this.hub.delayMs, type, obj: clone(obj) });
    this.pump();
  }

  /** Delivers what is due, in order, after the current call; waits on the clock for the rest. */
  pump(): void {
    if (this.pumping || this.ended || this.hub.paused || this.queue.length === 0) return;
    this.pumping = true;
    const wait = this.queue[0]!.dueMs - this.hub.o.clock.now();
    const run = (): void => { this.pumping = false; this.pumpTimer = undefined; this.drain(); };
    if (wait <= 0) this.hub.o.defer(run);
    else this.pumpTimer = this.hub.o.clock.setTimeout(run, wait);
  }

  private drain(): void {
    while (!this.ended && !this.hub.paused && this.queue.length > 0 && this.queue[0]!.dueMs <= this.hub.o.clock.now()) {
      const ev = this.queue.shift()!;
      if (ev.close !== undefined) { this.end(ev.close.err); return; }
      this.touch();
      this.spec.onEvent(ev.type, ev.obj);
    }
    this.pump();
  }

  /** Restarts the client's inactivity timer (it aborts a watch that received nothing for that long). */
  private touch(): void {
    if (this.spec.inactivityMs === undefined) return;
    const { clock } = this.hub.o;
    if (this.inactivityTimer !== undefined) clock.clearTimeout(this.inactivityTimer);
    this.inactivityTimer = clock.setTimeout(() => this.end(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), this.spec.inactivityMs);
  }

  /** Ends the watch: events not yet delivered are lost with the connection; `onDone(err)` follows. */
  end(err: unknown): void {
    if (this.ended) return;
    this.ended = true;
    const { clock } = this.hub.o;
    for (const t of [this.pumpTimer, this.timeoutTimer, this.inactivityTimer]) if (t !== undefined) clock.clearTimeout(t);
    this.queue.length = 0;
    this.hub.remove(this);
    this.hub.o.defer(() => this.spec.onDone(err));
  }

  /** Delivers what is queued, then ends with `err` (a server closing the stream after its last event). */
  endAfterQueued(err: unknown): void {
    if (this.ended) return;
    this.queue.push({ dueMs: this.hub.o.clock.now() + this.hub.delayMs, type: 'ERROR', obj: {}, close: { err } });
    this.pump();
  }
}

export class WatchHub {
  readonly o: WatchHubOptions;
  private readonly watchers = new Set<Watcher>();
  /** Added to every delivery (a slow watch stream). */
  delayMs = 0;
  /** While true nothing is delivered (a stalled stream); events queue up. */
  paused = false;

  constructor(o: WatchHubOptions) { this.o = o; }

  get size(): number { return this.watchers.size; }

  open(spec: WatchSpec): Watcher {
    const w = new Watcher(this, spec);
    this.watchers.add(w);
    return w;
  }

  remove(w: Watcher): void { this.watchers.delete(w); }

  offer(c: Change): void { for (const w of this.watchers) w.offer(c); }

  /** A BOOKMARK at `rv` to every watch that asked for bookmarks. */
  bookmark(rv: number): void {
    for (const w of this.watchers) {
      if (w.spec.bookmarks) w.push('BOOKMARK', { apiVersion: w.spec.resource.apiVersion, kind: w.spec.resource.kind, metadata: { resourceVersion: String(rv) } });
    }
  }

  resume(): void {
    this.paused = false;
    for (const w of this.watchers) w.pump();
  }

  /** The open watches `which` selects. */
  select(which: (w: Watcher) => boolean = () => true): Watcher[] { return [...this.watchers].filter(which); }
}
