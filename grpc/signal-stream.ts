/**
 * A SignalStream over a grpc-js server-streaming call: serialised writes, one close notification,
 * and an AbortSignal, whichever side ends the stream.
 *
 * A client that stops reading is dropped, not buffered for: grpc-js queues every write of a stream
 * whose HTTP/2 window is full, so at `maxPending` writes not yet handed to HTTP/2 the stream is reset
 * (RST_STREAM CANCEL) and closed as `slow-consumer`. ClusterD queues up to 1,000 messages per
 * publisher (component/clusterd/pkg/application/config/publisher.go chanBufferSize) and gives each
 * send 3 s.
 */
import { constants as http2 } from 'node:http2';
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { ClientInfo } from './messages.ts';
import type { SignalStream, StreamCloseReason } from './handlers.ts';

let nextStreamId = 1;

/** Writes a stream may have queued before it is dropped as a slow consumer. */
export const DEFAULT_MAX_PENDING_WRITES = 64;

export interface SignalStreamOptions {
  /** Writes queued (not yet handed to HTTP/2) at which the stream is dropped. */
  readonly maxPending?: number;
  /** The stream was dropped as a slow consumer (log and metric). */
  readonly onSlow?: (stream: { readonly id: number; readonly client: ClientInfo; readonly pending: number }) => void;
}

/**
 * Resets the HTTP/2 stream under a grpc-js server call (RST_STREAM CANCEL), which frees what it has
 * queued; grpc-js has no public call for it (ending the call would queue the status behind the data
 * the client does not read). Falls back to destroying the call's Writable, which drops its queue.
 */
function resetCall(call: ServerWritableStream<unknown, unknown>): void {
  type Inner = { stream?: { close?: (code: number) => void; destroyed?: boolean }; nextCall?: Inner };
  // ServerWritableStreamImpl.call is the base call, or the outermost interceptor wrapping it (nextCall).
  let layer = (call as unknown as { call?: Inner }).call;
  for (let depth = 0; layer !== undefined && layer.stream === undefined && depth < 16; depth++) layer = layer.nextCall;
  const inner = layer?.stream;
  try {
    if (inner !== undefined && typeof inner.close === 'function') {
      if (inner.destroyed !== true) inner.close(http2.NGHTTP2_CANCEL);
    } else {
      call.destroy();
    }
  } catch {
    // the transport is already gone
  }
}

export class ServerSignalStream<T> implements SignalStream<T> {
  readonly id = nextStreamId++;
  readonly client: ClientInfo;
  private readonly call: ServerWritableStream<unknown, T>;
  private readonly abort = new AbortController();
  private readonly pending = new Set<(ok: boolean) => void>();
  private readonly closeListeners: Array<(reason: StreamCloseReason) => void> = [];
  private readonly maxPending: number;
  private readonly onSlow: NonNullable<SignalStreamOptions['onSlow']>;

  constructor(call: ServerWritableStream<unknown, T>, client: ClientInfo, opts: SignalStreamOptions = {}) {
    this.call = call;
    this.client = client;
    this.maxPending = opts.maxPending ?? DEFAULT_MAX_PENDING_WRITES;
    this.onSlow = opts.onSlow ?? (() => {});
    call.on('cancelled', () => this.close('client-cancelled', false));
    call.on('error', () => this.close('write-error', false));
    // 'finish' follows our own end(); 'close' without it means the transport went away.
    call.on('close', () => this.close('client-cancelled', false));
  }

  get closed(): boolean {
    return this.abort.signal.aborted;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Register a listener called once with the close reason (immediately if already closed). */
  onClose(listener: (reason: StreamCloseReason) => void): void {
    if (this.closed) listener(this.abort.signal.reason as StreamCloseReason);
    else this.closeListeners.push(listener);
  }

  /** Writes queued and not yet handed to HTTP/2. */
  get pendingWrites(): number {
    return this.pending.size;
  }

  send(message: T): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.pending.size >= this.maxPending) {
      const pending = this.pending.size;
      this.close('slow-consumer', false);
      resetCall(this.call as ServerWritableStream<unknown, unknown>);
      this.onSlow({ id: this.id, client: this.client, pending });
      return Promise.resolve(false);
    }
    return new Promise<boolean>((resolve) => {
      const done = (ok: boolean): void => {
        if (this.pending.delete(done)) resolve(ok);
      };
      this.pending.add(done);
      try {
        this.call.write(message, (err: unknown) => done(err === undefined || err === null));
      } catch {
        done(false);
      }
    });
  }

  end(): void {
    this.close('server-ended', true);
  }

  /** End the stream (status OK when `endCall`) and notify listeners once. */
  close(reason: StreamCloseReason, endCall = true): void {
    if (this.closed) return;
    this.abort.abort(reason);
    for (const done of [...this.pending]) done(false);
    if (endCall && !this.call.cancelled && !this.call.writableEnded) {
      try {
        this.call.end();
      } catch {
        // the transport is already gone
      }
    }
    for (const l of this.closeListeners.splice(0)) l(reason);
  }
}
