import type { Middleware } from 'koa';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../log/logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { AppState } from '../types.js';

const REQUEST_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Request id, a per-request logger, one access-log line and the HTTP metrics. */
export function requestContext(log: Logger, metrics: Metrics): Middleware<AppState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const given = ctx.get('X-Request-Id');
    const requestId = REQUEST_ID.test(given) ? given : `req_${randomUUID()}`;
    ctx.state.requestId = requestId;
    ctx.state.log = log.child({ request_id: requestId });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = ctx.state.route ?? 'unmatched';
      metrics.httpRequests.inc({ method: ctx.method, route, status: String(ctx.status) });
      metrics.httpDuration.observe({ method: ctx.method, route }, seconds);
      const line = { method: ctx.method, route, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1e4) / 10 };
      if (ctx.status >= 500) ctx.state.log.error(line, 'request');
      else ctx.state.log.info(line, 'request');
    }
  };
}
