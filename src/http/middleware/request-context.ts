import type { Middleware } from 'koa';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../log/logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { AppState } from '../types.js';

const REQUEST_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** The caller's X-Request-Id when it is a sane token, else a fresh one. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : `req_${randomUUID()}`;
}

/** The HTTP request count and duration series of one answered request. */
export function observeHttp(metrics: Metrics, method: string, route: string, status: number, seconds: number): void {
  metrics.httpRequests.inc({ method, route, status: String(status) });
  metrics.httpDuration.observe({ method, route }, seconds);
}

/** Request id, a per-request logger (made on first use), one access-log line and the HTTP metrics. */
export function requestContext(log: Logger, metrics: Metrics): Middleware<AppState> {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = requestIdOf(ctx.req.headers['x-request-id']);
    ctx.state.requestId = requestId;
    lazyLog(ctx.state, log, requestId);
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const route = ctx.state.route ?? 'unmatched';
      observeHttp(metrics, ctx.method, route, ctx.status, seconds);
      const level = ctx.status >= 500 ? 'error' : 'info';
      if (log.isLevelEnabled(level)) ctx.state.log[level]({ method: ctx.method, route, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1e4) / 10 }, 'request');
    }
  };
}

/** `state.log` as a child logger with the request id, created only when something logs. */
function lazyLog(state: AppState, log: Logger, requestId: string): void {
  let child: Logger | undefined;
  Object.defineProperty(state, 'log', {
    configurable: true,
    enumerable: true,
    get: () => (child ??= log.child({ request_id: requestId })),
    set: (v: Logger) => void (child = v),
  });
}
