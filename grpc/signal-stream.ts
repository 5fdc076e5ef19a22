/**
 * A SignalStream over a grpc-js server-streaming call: serialised writes, one close notification,
 * and an AbortSignal, whichever side ends the stream.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { ClientInfo } from './messages.ts';
import type { SignalStream, StreamCloseReason } from './handlers.ts';

let nextStreamId = 1;

export class ServerSignalStream<T> implements SignalStream<T> {
  readonly id = nextStreamId++;
  readonly client: ClientInfo;
  private readonly call: ServerWritableStream<unknown, T>;
  private readonly abort = new AbortController();
  private readonly pending = new Set<(ok: boolean) => void>();
  private readonly closeListeners: Array<(reason: StreamCloseReason) => void> = [];

  constructor(call: ServerWritableStream<unknown, T>, client: ClientInfo) {
    this.call = call;
    this.client = client;
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

  send(message: T): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
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
