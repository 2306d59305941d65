import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log/logger.js';

/**
 * One request on the routing interface as its handlers see it: the raw
 * node:http pair, the request id, and a logger carrying that id. Routed calls
 * are served without Koa (see routing-http.ts).
 */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  /** A child logger with the request id, made on first use: most calls log nothing. */
  readonly log: Logger;
}

export class RoutingExchange implements Exchange {
  private child: Logger | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly requestId: string,
    private readonly parent: Logger,
  ) {}

  get log(): Logger {
    return (this.child ??= this.parent.child({ request_id: this.requestId }));
  }
}
