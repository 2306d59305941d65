import type { Middleware } from 'koa';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorType, TroupeError } from '../../../domain/errors.js';
import type { AppState } from '../types.js';

/**
 * A request whose body stops arriving (a slow-loris upload, a client that
 * died mid-send) is answered 408 once no byte has come for `idleMs`, and its
 * connection closed, instead of holding a socket and a handler for ever.
 * Only while the body is being received: once it has arrived, the handler
 * (and an SSE stream) runs without this bound.
 */
export function bodyIdleTimeout(idleMs: number): Middleware<AppState> {
  return async (ctx, next) => {
    guardBodyIdle(ctx.req, ctx.res, idleMs);
    await next();
  };
}

/** The same bound for a handler that is not behind Koa (the router's routed calls). */
export function guardBodyIdle(req: IncomingMessage, res: ServerResponse, idleMs: number): void {
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody || idleMs <= 0 || req.complete) return;
  const timedOut = () => {
    if (!res.headersSent) {
      const err = new TroupeError(408, ErrorType.invalidRequest, 'request_timeout', `No part of the request body arrived for ${idleMs / 1000} s; the request was abandoned.`);
      res.writeHead(408, { 'Content-Type': 'application/json; charset=utf-8', Connection: 'close' });
      res.end(JSON.stringify({ error: err.toBody() }), () => req.socket.destroy());
    } else req.socket.destroy();
  };
  req.setTimeout(idleMs, timedOut);
  req.once('end', () => req.setTimeout(0));
}
