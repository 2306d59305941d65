import type { Middleware } from 'koa';
import { randomUUID } from 'node:crypto';
import { lazyRequestLog, type Logger } from '../../../lib/log/logger.js';
import { LabelSets } from '../../../lib/metrics/label-sets.js';
import type { Metrics } from '../../../lib/metrics/metrics.js';
import type { AppState } from '../types.js';

const REQUEST_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** The caller's X-Request-Id when it is a sane token, else a fresh one. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : `req_${randomUUID()}`;
}

/** The HTTP request count and duration series of one answered request. */
function observeHttp(metrics: Metrics, method: string, route: string, status: number, seconds: number): void {
  metrics.httpRequests.inc(HTTP_COUNT.of(method, route, String(status)));
  metrics.httpDuration.observe(HTTP_DURATION.of(method, route), seconds);
}

const HTTP_COUNT = new LabelSets<{ method: string; route: string; status: string }>(['method', 'route', 'status']);
const HTTP_DURATION = new LabelSets<{ method: string; route: string }>(['method', 'route']);

/** What one answered request leaves behind, on either HTTP stack. */
export interface Answered {
  method: string;
  route: string;
  path: string;
  status: number;
  seconds: number;
}

/**
 * The HTTP metrics and the access-log line of one answered request: at `error` for a 5xx, else at `okLevel`
 * (`info`; the router passes `debug` for its successful calls and keeps `info` for refusals).
 */
export function finishRequest(metrics: Metrics, log: Logger, requestLog: () => Logger, a: Answered, okLevel: 'info' | 'debug' = 'info'): void {
  observeHttp(metrics, a.method, a.route, a.status, a.seconds);
  const level = a.status >= 500 ? 'error' : a.status >= 400 ? 'info' : okLevel;
  if (log.isLevelEnabled(level)) requestLog()[level]({ method: a.method, route: a.route, path: a.path, status: a.status, ms: Math.round(a.seconds * 1e4) / 10 }, 'request');
}

/** Request id, a per-request logger (made on first use), one access-log line and the HTTP metrics. */
export function requestContext(log: Logger, metrics: Metrics): Middleware<AppState> {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = requestIdOf(ctx.req.headers['x-request-id']);
    ctx.state.requestId = requestId;
    Object.defineProperty(ctx.state, 'log', { configurable: true, enumerable: true, get: lazyRequestLog(log, requestId) });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      finishRequest(metrics, log, () => ctx.state.log, { method: ctx.method, route: ctx.state.route ?? 'unmatched', path: ctx.path, status: ctx.status, seconds });
    }
  };
}
