import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { decodePathSegment } from '../../domain/path-segment.js';
import { guardBodyIdle } from '../api/middleware/body-timeout.js';
import { mapError } from '../api/middleware/errors.js';
import { finishRequest, requestIdOf } from '../api/middleware/request-context.js';
import type { Logger } from '../../lib/log/logger.js';
import type { Metrics } from '../../lib/metrics/metrics.js';
import { routingEnvelope } from './envelope.js';
import { Exchange } from '../../lib/routing/exchange.js';
import { handleRouting, type RouterServices } from './handler.js';
import { matchRoutingPath } from '../../lib/routing/ingress.js';
import { inSpan, remoteContext, tracingOn } from '../../lib/telemetry/tracing.js';

export interface RoutingHttpDeps {
  log: Logger;
  metrics: Metrics;
  bodyIdleTimeoutMs: number;
}

/**
 * The routed calls (POSTs to the three formats' paths) are answered straight
 * from node:http; every other request goes to the Koa app. A routed call is
 * the router's whole hot path, and on it Koa's context objects, middleware
 * chain and response handling were a measurable share of the router's own
 * time (docs/benchmarks.md). What that chain did for these paths is done
 * here with the same shared pieces: the request id, the body idle timeout,
 * the error decision (mapError) in the vendor's envelope, the HTTP metrics.
 */
export function routingListener(koa: RequestListener, deps: RoutingHttpDeps, svc: RouterServices): RequestListener {
  return (req, res) => {
    if (req.method !== 'POST') return koa(req, res);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const match = matchRoutingPath(path);
    if (!match) return koa(req, res);
    // serve answers its own errors; what escapes it (a throw while answering one) is the listener guard's
    // (roles/guarded-listener.ts), to which this promise is returned.
    if (!tracingOn()) return serve(req, res, path, match, deps, svc) as unknown as void;
    // A server span continuing the caller's traceparent; each upstream attempt is a model-call span under it.
    return inSpan(`POST ${match.route}`, 'server', { 'http.request.method': 'POST', 'http.route': match.route, 'url.path': path }, async (span) => {
      try {
        await serve(req, res, path, match, deps, svc);
      } finally {
        span.set('http.response.status_code', res.statusCode);
        if (res.statusCode >= 500) span.fail(`HTTP ${res.statusCode}`, String(res.statusCode));
      }
    }, remoteContext(req.headers)) as unknown as void;
  };
}

async function serve(req: IncomingMessage, res: ServerResponse, path: string, match: NonNullable<ReturnType<typeof matchRoutingPath>>, deps: RoutingHttpDeps, svc: RouterServices): Promise<void> {
  const started = performance.now();
  const ex = new Exchange(req, res, requestIdOf(req.headers['x-request-id']), deps.log);
  res.setHeader('X-Request-Id', ex.requestId);
  guardBodyIdle(req, res, deps.bodyIdleTimeoutMs);
  try {
    const routerId = match.routerSegment === null ? null : decodePathSegment(match.routerSegment, 'router_id');
    const body = await handleRouting(ex, match.ingress, routerId, svc);
    if (body !== undefined) sendJson(res, 200, body);
  } catch (thrown) {
    if (res.headersSent || !writable(res)) ex.log().warn({ err: thrown }, 'error after response started');
    else {
      const { status, body, headers } = mapError(thrown, ex.log(), ex.requestId);
      for (const k in headers) res.setHeader(k, headers[k]);
      sendJson(res, status, routingEnvelope(path, status, body, ex.requestId));
    }
  } finally {
    const seconds = (performance.now() - started) / 1000;
    // Successful calls are logged at debug only: at the router's rates an info line per call
    // would be a synchronous write per call. Refusals and failures keep their line.
    finishRequest(deps.metrics, deps.log, ex.log, { method: 'POST', route: match.route, path, status: res.statusCode, seconds }, 'debug');
  }
}

/** Koa's `ctx.writable`: the response is not ended and its socket (if any) can still take bytes. */
function writable(res: ServerResponse): boolean {
  if (res.writableEnded) return false;
  return res.socket ? res.socket.writable : true;
}

/** The whole answer in one write: status line, headers and body. */
function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
