import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Cancel } from '../llm/upstream-post.js';
import { lazyRequestLog, type Logger } from '../log/logger.js';
import type { RoutedCall } from './routed-call.js';

/**
 * One request on the routing interface as its handlers see it: the raw
 * node:http pair, the request id, and a logger carrying that id. Routed calls
 * are served without Koa (see routing-http.ts).
 */
export class Exchange {
  /** A child logger with the request id, made on first use: most calls log nothing. */
  readonly log: () => Logger;
  private gone: ClientGone | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly requestId: string,
    parent: Logger,
  ) {
    this.log = lazyRequestLog(parent, requestId);
  }

  /** Cancels the upstream call when the client hangs up before its answer has been sent. */
  get clientGone(): Cancel {
    return (this.gone ??= new ClientGone(this.res));
  }
}

/**
 * A routed call on the routing interface, decided and admitted: its answer names its conversation (an error from
 * here on too), and a client that hangs up from here on cancels the upstream call.
 */
export function startExchange(call: RoutedCall, ex: Exchange): Cancel {
  ex.res.setHeader('X-Conversation-Id', call.convId);
  return ex.clientGone;
}

/**
 * The client's hang-up as a cancellation, without an AbortController: one per
 * call, with its listener, was about 9 µs of a routed call's CPU on this host,
 * and its abort() (a DOMException with a stack trace) ran after every stream,
 * because a response's 'close' comes after a finished answer too.
 */
class ClientGone implements Cancel {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] = [];

  constructor(res: ServerResponse) {
    res.once('close', () => {
      if (res.writableFinished) return;
      this.aborted = true;
      this.reason = new DOMException('The client closed the connection.', 'AbortError');
      const fns = this.listeners;
      this.listeners = [];
      for (const fn of fns) fn();
    });
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }
}
