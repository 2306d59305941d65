import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { mapError, type ErrorEnvelope } from '../edge/api/middleware/errors.js';
import { requestIdOf } from '../edge/api/middleware/request-context.js';
import type { Logger } from '../lib/log/logger.js';

/** The base API's shape, `{"error": body}`: the default of a listener that names no envelope. */
const plainEnvelope: ErrorEnvelope = (_path, _status, body) => ({ error: body });

/**
 * A request listener that cannot throw past itself. The apps map their own
 * errors (errorMapper, the router's routed path); this is the last line for
 * what escapes them, synchronously or as a rejected promise: the request is
 * answered with mapError's decision (a 500 for our bug, logged there once,
 * with the request id) in the ingress's envelope, or its socket is destroyed
 * when an answer had already begun. Without it one throw in a listener is an
 * uncaughtException, and under `npm start` every role shares the process.
 */
export function guardedListener(handler: RequestListener, log: Logger, envelope: ErrorEnvelope = plainEnvelope): RequestListener {
  return (req, res) => {
    try {
      const done = handler(req, res) as unknown;
      if (done instanceof Promise) done.catch((err: unknown) => answerEscaped(err, req, res, log, envelope));
    } catch (err) {
      answerEscaped(err, req, res, log, envelope);
    }
  };
}

function answerEscaped(err: unknown, req: IncomingMessage, res: ServerResponse, log: Logger, envelope: ErrorEnvelope): void {
  try {
    if (res.headersSent || res.writableEnded) {
      log.error({ err, method: req.method, url: req.url }, 'request listener failed after its answer began');
      res.destroy();
      return;
    }
    const requestId = requestIdOf(req.headers['x-request-id']);
    const { status, body, headers } = mapError(err, log, requestId);
    const path = (req.url ?? '/').split('?')[0];
    const text = JSON.stringify(envelope(path, status, body, requestId));
    res.writeHead(status, { ...headers, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'X-Request-Id': requestId });
    res.end(text);
  } catch (second) {
    // Writing the answer failed too (a header value refused, a socket gone): drop the connection, keep the process.
    log.error({ err: second }, 'could not answer a failed request');
    res.destroy();
  }
}
